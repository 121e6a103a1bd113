#!/bin/sh
# check_killed.sh - a device rank killed (SIGKILL) in the middle of a
# region: the MPI runtime ends the job, and the launcher names the device
# that ended first, exits non-zero, and leaves no process and no libomp
# registration of the job's ranks behind.
#
# usage: check_killed.sh LAUNCHER PROGRAM
#
# Starts `LAUNCHER -n 3 PROGRAM` (PROGRAM: omp_signal_wait, whose region
# spins on device 0 for 60 s) with OMPTARGET_MPI_INFO=1 (the device map on
# stderr gives the pids), waits for its "RUN" line, kills device 0 with
# SIGKILL, and fails unless the launcher exits within 30 s with a non-zero
# status and a line "device 0 (rank 1, pid P on H) ... ended first" (its
# witness saw it, alone or, on a loaded machine, with a rank the MPI
# runtime killed within the same instant; the runtime's own report may
# name another pid), no
# process of PROGRAM is left 10 s later and /dev/shm holds no
# __KMP_REGISTERED_LIB_ file of the job's three pids.
set -u
me=check_killed.sh
[ $# -eq 2 ] || { sed -n '7p' "$0" | sed 's/^# //' >&2; exit 2; }
launcher=$1
prog=$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")
. "$(dirname "$0")/job_lib.sh"
job_start_env
export OMPTARGET_MPI_INFO=1
"$launcher" -n 3 "$prog" >"$tmp/out" 2>"$tmp/err" &
pid=$!
job_wait_run "$pid"
pids=$(sed -n 's/.*: \(host program\|device [0-9]*\): rank [0-9]* on .*, pid \([0-9][0-9]*\).*/\2/p' \
           "$tmp/err")
victim=$(sed -n 's/.*device 0: rank 1 on .*, pid \([0-9][0-9]*\).*/\1/p' "$tmp/err" | head -n 1)
[ -n "$victim" ] || job_fail "no pid for device 0 in the device map on stderr"
[ "$(echo "$pids" | wc -l)" -eq 3 ] || job_fail "not three pids in the device map: $pids"
sleep 0.5                       # the region is running on device 0 now
start=$(date +%s)
kill -KILL "$victim" || job_fail "cannot kill pid $victim"
i=0
while kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1))
    [ "$i" -le 300 ] || { kill -9 "$pid"; job_fail "the job still ran 30 s after the kill"; }
    sleep 0.1
done
wait "$pid"
status=$?
took=$(($(date +%s) - start))
[ "$status" -ne 0 ] || job_fail "the launcher exited with status 0"
said="device 0 (rank 1, pid $victim on $(uname -n))"
grep -F "$said" "$tmp/err" | grep -q "ended first" ||
    job_fail "no line '... $said ... ended first'"
job_wait_gone
for p in $pids; do
    ls /dev/shm/__KMP_REGISTERED_LIB_"${p}"_* >/dev/null 2>&1 &&
        job_fail "libomp's registration of pid $p is left in /dev/shm"
done
grep 'ended first' "$tmp/err"
echo "$me: device 0 killed: the job ended after ${took} s with status $status," \
     "no process and no registration left"
