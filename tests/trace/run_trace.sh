#!/bin/sh
# run_trace.sh RUN_MPI CHECKER PROGRAM - runs PROGRAM on 3 ranks through
# run_mpi.sh (which checks the clean shutdown) with OMPTARGET_MPI_TRACE and
# OMPTARGET_MPI_INFO on and the pool off, then checks the trace files and
# the counters printed at exit with CHECKER (check_trace.py).
set -u
run_mpi=$1
checker=$2
prog=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

sh "$run_mpi" 3 "$prog" mpi_trace_3ranks OMPTARGET_MPI_POOL=0 OMPTARGET_MPI_INFO=1 \
    "OMPTARGET_MPI_TRACE=$tmp/trace" >"$tmp/log" 2>&1
status=$?
cat "$tmp/log"
python3 "$checker" "$tmp/log" "$tmp/trace" 3
checked=$?
[ "$status" -eq 0 ] && [ "$checked" -eq 0 ]
