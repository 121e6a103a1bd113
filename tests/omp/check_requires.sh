#!/bin/sh
# check_requires.sh - omptarget-mpi-requires, which the launcher asks
# whether a program requires unified shared memory, on programs that do
# and programs that do not.
#
# usage: check_requires.sh TOOL USM_PROGRAM... -- OTHER_PROGRAM...
#   Each USM_PROGRAM must print flags with OMP_REQ_UNIFIED_SHARED_MEMORY
#   (0x8) set and exit 0; each OTHER_PROGRAM must exit 1 (no flags) or
#   print flags without it; a file that is not ELF, and one that is not
#   there, must exit 2 with a line saying so.
set -u
tool=$1
shift
fails=0
has_usm() {
    out=$("$tool" "$1") || return 1
    case $out in "requires 0x"*) ;; *) return 1 ;; esac
    [ $((0x${out#requires 0x} & 8)) -ne 0 ]
}
usm=1
for prog in "$@"; do
    if [ "$prog" = -- ]; then usm=0; continue; fi
    if [ "$usm" -eq 1 ] && ! has_usm "$prog"; then
        echo "FAIL: $prog requires unified shared memory, the tool says: $("$tool" "$prog" 2>&1)"
        fails=$((fails + 1))
    elif [ "$usm" -eq 0 ] && has_usm "$prog"; then
        echo "FAIL: $prog does not require unified shared memory, the tool says it does"
        fails=$((fails + 1))
    fi
done
err=$("$tool" "$0" 2>&1)
status=$?
if [ "$status" -ne 2 ] || ! printf '%s\n' "$err" | grep -q "not an ELF file"; then
    echo "FAIL: a shell script: status $status, '$err' (expected 2, not an ELF file)"
    fails=$((fails + 1))
fi
err=$("$tool" "$0.none" 2>&1)
status=$?
if [ "$status" -ne 2 ] || ! printf '%s\n' "$err" | grep -q "cannot be read"; then
    echo "FAIL: a missing file: status $status, '$err' (expected 2, cannot be read)"
    fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] && echo "PASS check_requires: $# files"
exit $((fails != 0))
