#!/bin/sh
# check_log.sh RUN_MPI NPROCS PROGRAM TAG TEXT... -- [NAME=VALUE...]
#
# Runs PROGRAM as a job of NPROCS ranks through run_mpi.sh, which checks
# that it passed and shut down cleanly on every rank, with the settings
# given after `--`; then checks that each TEXT (a fixed string) is in what
# the ranks printed (run_mpi.sh shows every rank's stdout and stderr).
# For settings whose only effect is a line on some rank's stderr: a test
# hook switched off, a map file that cannot be written.
set -u
if [ $# -lt 5 ]; then
    echo "usage: check_log.sh RUN_MPI NPROCS PROGRAM TAG TEXT... -- [NAME=VALUE...]" >&2
    exit 2
fi
run_mpi=$1
np=$2
prog=$3
tag=$4
shift 4
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

: >"$tmp/texts"
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    printf '%s\n' "$1" >>"$tmp/texts"
    shift
done
[ $# -gt 0 ] && shift

sh "$run_mpi" "$np" "$prog" "$tag" "$@" >"$tmp/log" 2>&1
status=$?
cat "$tmp/log"
failures=0
while IFS= read -r text; do
    if grep -q -F -e "$text" "$tmp/log"; then
        echo "ok - printed: $text"
    else
        echo "FAIL: not printed: $text"
        failures=$((failures + 1))
    fi
done <"$tmp/texts"
[ "$status" -eq 0 ] && [ "$failures" -eq 0 ]
