#!/bin/sh
# check_host_stopped.sh LAUNCHER PROGRAM - rank 0 stopped (SIGSTOP) for
# 10 s while a region is fetching its pages (unified shared memory) is no
# failure: the device's asks wait (OMPTARGET_MPI_TIMEOUT, 60 s, bounds
# them), and once rank 0 is continued the job goes on and passes.
#
# Starts `LAUNCHER -n 3 PROGRAM` (omp_usm_paging, its regions summing the
# host's array for 13 s) with OMPTARGET_MPI_INFO=1 (the device map gives
# rank 0's pid); once a region runs (the file it creates), stops rank 0,
# continues it 10 s later, and fails unless the job then ends within 30 s
# with status 0, the program's PASS line, no error of the plugin on
# stderr, and no process left.
set -u
me=check_host_stopped.sh
[ $# -eq 2 ] || { sed -n '2p' "$0" | sed 's/^# //' >&2; exit 2; }
launcher=$1
prog=$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")
. "$(dirname "$0")/job_lib.sh"
host=
trap '[ -n "$host" ] && kill -CONT "$host" 2>/dev/null; job_cleanup' EXIT
job_start_env
export OMPTARGET_MPI_INFO=1 OTM_TEST_SECONDS=13
"$launcher" -n 3 "$prog" >"$tmp/out" 2>"$tmp/err" &
pid=$!
job_wait_run "$pid"
host=$(sed -n 's/.*host program: rank 0 on .*, pid \([0-9][0-9]*\).*/\1/p' "$tmp/err" | head -n 1)
[ -n "$host" ] || job_fail "no pid for rank 0 in the device map on stderr"
job_wait_region "$pid"
kill -STOP "$host" || job_fail "cannot stop rank 0 (pid $host)"
sleep 10
kill -CONT "$host"
job_wait_end "$pid" "rank 0 was continued"
[ "$status" -eq 0 ] || job_fail "the launcher exited with status $status, expected 0"
grep -q '^PASS omp_usm_paging' "$tmp/out" || job_fail "no PASS line"
! grep -q 'omptarget-mpi: .*\(failed:\|cannot\|stopped answering\|made no progress\)' "$tmp/err" ||
    job_fail "the plugin reported an error"
job_wait_gone
grep '^PASS' "$tmp/out"
echo "$me: rank 0 stopped for 10 s while a region fetched its pages: the job went on" \
     "and passed, status 0, no process left"
