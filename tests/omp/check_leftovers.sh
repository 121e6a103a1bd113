#!/bin/sh
# check_leftovers.sh - a clean run leaves no file of its processes behind.
#
# usage: check_leftovers.sh LAUNCHER PROGRAM
#
# Runs `LAUNCHER -n 3 PROGRAM` with OMPTARGET_MPI_INFO=1, whose device map
# names the pid of every rank, and fails unless the run passed and none of
# those processes left libomp's registration file
# (/dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid>) behind: libomp removes it in
# its destructor, which a device rank's _exit skips, so the plugin must.
set -u
me=check_leftovers.sh
[ $# -eq 2 ] || { sed -n '4p' "$0" | sed 's/^# //' >&2; exit 2; }
launcher=$1
prog=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_leftovers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset PMI_RANK PMI_SIZE PMI_FD PMIX_RANK OMPI_COMM_WORLD_SIZE MPI_LOCALNRANKS \
      OMPTARGET_MPI_LAUNCHER 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
OMPTARGET_MPI_INFO=1 OTM_TEST_NDEVICES=2 timeout -k 10 120 \
    "$launcher" -n 3 "$prog" >"$tmp/out" 2>"$tmp/err"
status=$?
fail() {
    echo "$me: $*"
    echo "----- stdout -----"; cat "$tmp/out"
    echo "----- stderr -----"; cat "$tmp/err"
    exit 1
}
[ "$status" -eq 0 ] || fail "the run ended with status $status"
grep -q '^PASS ' "$tmp/out" || fail "no PASS line on stdout"
pids=$(sed -n 's/.*rank [0-9]* on .*, pid \([0-9][0-9]*\)$/\1/p' "$tmp/err")
[ "$(echo $pids | wc -w)" -eq 3 ] || fail "the device map did not name 3 pids"
uid=$(id -u)
left=
for pid in $pids; do
    f=/dev/shm/__KMP_REGISTERED_LIB_${pid}_$uid
    if [ -e "$f" ]; then
        left="$left $f"
        rm -f "$f"
    fi
done
[ -z "$left" ] || fail "left behind:$left"
echo "$me: pids $(echo $pids) left no registration file behind"
