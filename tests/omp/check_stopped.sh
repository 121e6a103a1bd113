#!/bin/sh
# check_stopped.sh - a device rank stopped (SIGSTOP) in the middle of a
# region, or of a transfer, is found by the host within about one timeout,
# and the job ends: with a line naming the device and its rank, status 1,
# and no process left.
#
# usage: check_stopped.sh LAUNCHER PROGRAM [transfer]
#
# Starts `LAUNCHER -n 3 PROGRAM` with OMPTARGET_MPI_TIMEOUT=2s and
# OMPTARGET_MPI_INFO=1 (the device map gives device 0's pid). PROGRAM is
# omp_signal_wait, whose region spins on device 0 for 60 s: once the
# region runs (the file it creates), device 0 is stopped with SIGSTOP and
# the host's liveness probes must say "device 0 (rank 1): stopped
# answering while a target region ran on it". With `transfer`, PROGRAM is
# omp_transfer_wait, which moves 1 GiB to device 0 and back for 60 s, the
# timeout is 4 s, and once it runs device 0 is stopped in the middle of a
# transfer: the host must say "device 0 (rank 1): stopped answering: an
# operation with it made no progress" within 1.5 timeouts (6 s; it took 2
# timeouts when the transfer waited another for its sends). Either way the
# line must come within 30 s (the program would run 60 s; a hang never
# ends); then the stopped rank is continued (SIGCONT: stopped for longer
# than the timeout, then back), and the launcher must exit within 30 s more
# with status 1, and no process of PROGRAM may be left 10 s later. Prints
# the time from the stop to the message and to the launcher's end.
set -u
me=check_stopped.sh
[ $# -eq 2 ] || [ $# -eq 3 ] || { sed -n '7p' "$0" | sed 's/^# //' >&2; exit 2; }
launcher=$1
prog=$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")
what=${3:-region}
. "$(dirname "$0")/job_lib.sh"
victim=
trap '[ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null; job_cleanup' EXIT
job_start_env
timeout_s=2
said='device 0 (rank 1): stopped answering while a target region ran on it'
if [ "$what" = transfer ]; then
    timeout_s=4
    said='device 0 (rank 1): stopped answering: an operation with it made no progress for 4000 ms'
fi
export OMPTARGET_MPI_TIMEOUT=${timeout_s}s OMPTARGET_MPI_INFO=1
"$launcher" -n 3 "$prog" >"$tmp/out" 2>"$tmp/err" &
pid=$!
job_wait_run "$pid"
victim=$(sed -n 's/.*device 0: rank 1 on .*, pid \([0-9][0-9]*\).*/\1/p' "$tmp/err" | head -n 1)
[ -n "$victim" ] || job_fail "no pid for device 0 in the device map on stderr"
[ "$what" = transfer ] || job_wait_region "$pid"
ms() { echo $(($(date +%s%N) / 1000000)); }
start=$(ms)
kill -STOP "$victim" || job_fail "cannot stop pid $victim"
i=0
until grep -q "$said" "$tmp/err"; do
    i=$((i + 1))
    [ "$i" -le 300 ] || { kill -9 "$pid"; job_fail "no line '$said' within 30 s of the stop"; }
    sleep 0.1
done
found=$(($(ms) - start))
kill -CONT "$victim" 2>/dev/null
job_wait_end "$pid" "device 0 was found"
took=$(($(ms) - start))
[ "$status" -eq 1 ] || job_fail "the launcher exited with status $status, expected 1"
if [ "$what" = transfer ] && [ "$found" -gt $((timeout_s * 1500)) ]; then
    job_fail "found after $found ms, more than 1.5 timeouts"
fi
job_wait_gone
grep 'stopped answering\|the job ends' "$tmp/err"
echo "$me: device 0 stopped during a $what: found after ${found} ms, the job ended" \
     "after ${took} ms (timeout ${timeout_s} s) with status $status, no process left"
