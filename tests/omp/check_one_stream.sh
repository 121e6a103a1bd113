#!/bin/sh
# check_one_stream.sh - rank 0's stdout and stderr through the launcher:
# one stream, in the order the program wrote them, when the caller's are
# one file (2>&1: the launcher sets OMPTARGET_MPI_STDERR_TO_STDOUT, the
# plugin makes rank 0's stderr its stdout); two, as before, when they are
# apart.
#
# usage: check_one_stream.sh LAUNCHER PROGRAM   (PROGRAM: omp_one_stream)
#
# Fails unless each job exits 0 within 120 s with the program's PASS line
# (it checks that its own stdout and stderr are one file, or apart), and
# its "line N" lines come out as 1..6 in one file, or as 2, 4, 6 on stdout
# and 1, 3, 5 on stderr.
set -u
[ $# -eq 2 ] || { sed -n '8p' "$0" | sed 's/^# //' >&2; exit 2; }
launcher=$1
prog=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_one_stream.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

# lines FILE: the numbers of its "line N:" lines, in order, on one line.
lines() {
    sed -n 's/^line \([0-9]\): .*/\1/p' "$1" | paste -s -d' ' -
}
expect() {
    if [ "$2" = "$3" ]; then
        echo "ok - $1"
    else
        echo "not ok - $1: got '$2', want '$3'"
        failed=$((failed + 1))
    fi
}

unset OMPTARGET_MPI_STDERR_TO_STDOUT
# Open MPI's mpiexec refuses root (a CI machine) and more ranks than cores
# without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
timeout 120 "$launcher" -n 3 "$prog" one >"$tmp/both" 2>&1
expect "2>&1: exit status" "$?" 0
expect "2>&1: the program's PASS line" \
    "$(grep -c '^PASS omp_one_stream: stdout and stderr one file$' "$tmp/both")" 1
expect "2>&1: the lines in the order written" "$(lines "$tmp/both")" "1 2 3 4 5 6"

timeout 120 "$launcher" -n 3 "$prog" apart >"$tmp/out" 2>"$tmp/err"
expect "apart: exit status" "$?" 0
expect "apart: the program's PASS line" \
    "$(grep -c '^PASS omp_one_stream: stdout and stderr apart$' "$tmp/out")" 1
expect "apart: stdout's lines" "$(lines "$tmp/out")" "2 4 6"
expect "apart: stderr's lines" "$(lines "$tmp/err")" "1 3 5"

if [ "$failed" -ne 0 ]; then
    for f in both out err; do
        echo "----- $f -----"
        cat "$tmp/$f"
    done
fi
exit "$failed"
