#!/bin/sh
# check_stopped.sh - a device rank stopped (SIGSTOP) in the middle of a
# region is found by the host's liveness probes within about one timeout,
# and the job ends: with a line naming the device and its rank, a non-zero
# status, and no process left.
#
# usage: check_stopped.sh LAUNCHER PROGRAM
#
# Starts `LAUNCHER -n 3 PROGRAM` (PROGRAM: omp_signal_wait, whose region
# spins on device 0 for 60 s) with OMPTARGET_MPI_TIMEOUT=2s and
# OMPTARGET_MPI_INFO=1 (the device map gives device 0's pid), waits for its
# "RUN" line, stops device 0 with SIGSTOP, and fails unless within 30 s
# (the region would run 60 s; a hang never ends) stderr says "device 0
# (rank 1): stopped answering". Then the stopped rank is continued
# (SIGCONT: stopped for longer than the timeout, then back), and the
# launcher must exit within 30 s more with a non-zero status, and no
# process of PROGRAM may be left 10 s later. Prints the time from the stop
# to the message and to the launcher's end.
set -u
me=check_stopped.sh
[ $# -eq 2 ] || { sed -n '7p' "$0" | sed 's/^# //' >&2; exit 2; }
launcher=$1
prog=$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")
. "$(dirname "$0")/job_lib.sh"
victim=
trap '[ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null; job_cleanup' EXIT
job_start_env
export OMPTARGET_MPI_TIMEOUT=2s OMPTARGET_MPI_INFO=1
"$launcher" -n 3 "$prog" >"$tmp/out" 2>"$tmp/err" &
pid=$!
job_wait_run "$pid"
victim=$(sed -n 's/.*device 0: rank 1 on .*, pid \([0-9][0-9]*\).*/\1/p' "$tmp/err" | head -n 1)
[ -n "$victim" ] || job_fail "no pid for device 0 in the device map on stderr"
sleep 0.5                       # the region is running on device 0 now
start=$(date +%s)
kill -STOP "$victim" || job_fail "cannot stop pid $victim"
said='device 0 (rank 1): stopped answering while a target region ran on it'
i=0
until grep -q "$said" "$tmp/err"; do
    i=$((i + 1))
    [ "$i" -le 300 ] || { kill -9 "$pid"; job_fail "no line '$said' within 30 s of the stop"; }
    sleep 0.1
done
found=$(($(date +%s) - start))
kill -CONT "$victim" 2>/dev/null
job_wait_end "$pid" "device 0 was found"
took=$(($(date +%s) - start))
[ "$status" -ne 0 ] || job_fail "the launcher exited with status 0"
job_wait_gone
grep 'stopped answering\|the job ends' "$tmp/err"
echo "$me: device 0 stopped: found after ${found} s, the job ended after ${took} s" \
     "(timeout 2 s) with status $status, no process left"
