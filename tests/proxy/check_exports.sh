#!/bin/sh
# check_exports.sh NM LIBRARY COUNT - the library's defined dynamic symbols
# are exactly COUNT names, all __tgt_rtl_* (a plugin's other symbols would
# interpose on the program's and the other plugins').
set -u
[ $# -eq 3 ] || { echo "usage: check_exports.sh NM LIBRARY COUNT" >&2; exit 2; }
nm=$1 lib=$2 want=$3
syms=$("$nm" -D --defined-only "$lib" | awk '{print $NF}') ||
    { echo "check_exports.sh: $nm -D failed on $lib"; exit 1; }
others=$(printf '%s\n' "$syms" | grep -v '^__tgt_rtl_')
count=$(printf '%s\n' "$syms" | grep -c '^__tgt_rtl_')
status=0
if [ -n "$others" ]; then
    echo "check_exports.sh: $lib exports other symbols:"; printf '  %s\n' $others
    status=1
fi
if [ "$count" != "$want" ]; then
    echo "check_exports.sh: $lib exports $count __tgt_rtl_* symbols, expected $want:"
    printf '  %s\n' $syms
    status=1
fi
[ $status = 0 ] && echo "check_exports.sh: $lib exports exactly its $want __tgt_rtl_* entry points"
exit $status
