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
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_stopped.XXXXXX") || exit 1
pattern="^$(printf '%s' "$prog" | sed 's/[][\.*^$+?(){}|]/\\&/g')( |\$)"
victim=
cleanup() {
    [ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null
    pkill -9 -f "$pattern" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
unset PMI_RANK PMI_SIZE PMI_FD PMIX_RANK OMPI_COMM_WORLD_SIZE MPI_LOCALNRANKS \
      OMPTARGET_MPI_LAUNCHER 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OTM_TEST_NDEVICES=2 OMPTARGET_MPI_TIMEOUT=2s OMPTARGET_MPI_INFO=1
fail() {
    echo "$me: $*"
    echo "----- stdout -----"; cat "$tmp/out"
    echo "----- stderr -----"; cat "$tmp/err"
    exit 1
}
"$launcher" -n 3 "$prog" >"$tmp/out" 2>"$tmp/err" &
pid=$!
i=0
until grep -q '^RUN ' "$tmp/out"; do
    i=$((i + 1))
    [ "$i" -le 300 ] || { kill -9 "$pid"; fail "no RUN line within 30 s"; }
    kill -0 "$pid" 2>/dev/null || fail "the launcher ended before the program started"
    sleep 0.1
done
victim=$(sed -n 's/.*device 0: rank 1 on .*, pid \([0-9][0-9]*\).*/\1/p' "$tmp/err" | head -n 1)
[ -n "$victim" ] || fail "no pid for device 0 in the device map on stderr"
sleep 0.5                       # the region is running on device 0 now
start=$(date +%s)
kill -STOP "$victim" || fail "cannot stop pid $victim"
said='device 0 (rank 1): stopped answering while a target region ran on it'
i=0
until grep -q "$said" "$tmp/err"; do
    i=$((i + 1))
    [ "$i" -le 300 ] || { kill -9 "$pid"; fail "no line '$said' within 30 s of the stop"; }
    sleep 0.1
done
found=$(($(date +%s) - start))
kill -CONT "$victim" 2>/dev/null
i=0
while kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1))
    [ "$i" -le 300 ] || { kill -9 "$pid"; fail "the job still ran 30 s after device 0 was found"; }
    sleep 0.1
done
wait "$pid"
status=$?
took=$(($(date +%s) - start))
[ "$status" -ne 0 ] || fail "the launcher exited with status 0"
i=0
while pgrep -f "$pattern" >/dev/null; do
    i=$((i + 1))
    [ "$i" -le 100 ] || fail "processes of $(basename "$prog") still alive 10 s after the launcher:" \
                             "$(pgrep -af "$pattern" | tr '\n' ';')"
    sleep 0.1
done
grep 'stopped answering\|the job ends' "$tmp/err"
echo "$me: device 0 stopped: found after ${found} s, the job ended after ${took} s" \
     "(timeout 2 s) with status $status, no process left"
