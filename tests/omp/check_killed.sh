#!/bin/sh
# check_killed.sh - a device rank killed (SIGKILL) in the middle of an
# operation: the MPI runtime ends the job, and the launcher names the
# device that ended first, exits non-zero, and leaves no process and no
# libomp registration of the job's ranks behind.
#
# usage: check_killed.sh LAUNCHER PROGRAM [KIND]
#
# Starts `LAUNCHER -n 3 PROGRAM` with OMPTARGET_MPI_INFO=1 (the device map
# on stderr gives the pids). Without KIND, PROGRAM is omp_signal_wait,
# whose region spins on device 0 for 60 s: once its "RUN" line is out,
# device 0 is killed with SIGKILL from here. With KIND (ALLOC, SUBMIT,
# ...), the test hook OTM_TEST_KILL_AT=KIND makes device 0 kill itself
# when the first event of that kind reaches it (OMPTARGET_MPI_POOL=off, so
# that a DELETE reaches it). Fails unless the launcher exits within 30 s
# with a non-zero status and a line "device 0 (rank 1, pid P on H) ...
# ended first" (its witness saw it, alone or, on a loaded machine, with a
# rank the MPI runtime killed within the same instant; the runtime's own
# report may name another pid), no process of PROGRAM is left 10 s later,
# and /dev/shm holds no __KMP_REGISTERED_LIB_ file of the job's three pids.
# KIND=EXIT is the exception: the host's end has begun, so the launcher
# names nobody (the status is still non-zero).
set -u
me=check_killed.sh
[ $# -eq 2 ] || [ $# -eq 3 ] || { sed -n '7p' "$0" | sed 's/^# //' >&2; exit 2; }
launcher=$1
prog=$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")
kind=${3:-}
. "$(dirname "$0")/job_lib.sh"
job_start_env
export OMPTARGET_MPI_INFO=1
if [ -n "$kind" ]; then
    export OTM_TEST_KILL_AT="$kind" OTM_TEST_KILL_RANK=1 OMPTARGET_MPI_POOL=off
fi
"$launcher" -n 3 "$prog" >"$tmp/out" 2>"$tmp/err" &
pid=$!
start=$(date +%s)
if [ -z "$kind" ]; then
    job_wait_run "$pid"
    job_wait_region "$pid"
    start=$(date +%s)
fi
i=0
until grep -q 'device 0: rank 1 on .*, pid' "$tmp/err" || ! kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1))
    [ "$i" -le 300 ] || { kill -9 "$pid"; job_fail "no device map within 30 s"; }
    sleep 0.1
done
victim=$(sed -n 's/.*device 0: rank 1 on .*, pid \([0-9][0-9]*\).*/\1/p' "$tmp/err" | head -n 1)
[ -n "$victim" ] || job_fail "no pid for device 0 in the device map on stderr"
[ -n "$kind" ] || kill -KILL "$victim" || job_fail "cannot kill pid $victim"
job_wait_end "$pid" "the kill"
took=$(($(date +%s) - start))
pids=$(sed -n 's/.*: \(host program\|device [0-9]*\): rank [0-9]* on .*, pid \([0-9][0-9]*\).*/\2/p' \
           "$tmp/err")
[ "$(echo "$pids" | wc -l)" -eq 3 ] || job_fail "not three pids in the device map: $pids"
[ "$status" -ne 0 ] || job_fail "the launcher exited with status 0"
said="device 0 (rank 1, pid $victim on $(uname -n))"
if [ "$kind" != EXIT ]; then
    grep -F "$said" "$tmp/err" | grep -q "ended first" ||
        job_fail "no line '... $said ... ended first'"
fi
job_wait_gone
for p in $pids; do
    ls /dev/shm/__KMP_REGISTERED_LIB_"${p}"_* >/dev/null 2>&1 &&
        job_fail "libomp's registration of pid $p is left in /dev/shm"
done
grep 'ended first' "$tmp/err"
echo "$me: device 0 killed${kind:+ at its first $kind}: the job ended after ${took} s" \
     "with status $status, no process and no registration left"
