#!/bin/sh
# check_entry_points.sh ABI_HEADER SOURCE... - every entry point that
# abi.h declares is called by the given test sources (the programs of the
# mpi label), so that no exported function goes untested.
set -u
abi=$1
shift
missing=0
total=0
for f in $(grep -o '__tgt_rtl_[A-Za-z0-9_]*(' "$abi" | tr -d '(' | sort -u); do
    total=$((total + 1))
    files=$(grep -l -e "$f(" "$@" | xargs -r -n1 basename | tr '\n' ' ')
    if [ -z "$files" ]; then
        echo "not ok - $f is called by no mpi test"
        missing=$((missing + 1))
    else
        echo "ok - $f: $files"
    fi
done
echo "# $total entry points, $missing not called"
[ "$missing" -eq 0 ]
