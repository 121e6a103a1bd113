#!/bin/sh
# check_signals.sh - a signal to the launcher ends the whole job, with the
# status of that signal.
#
# usage: check_signals.sh LAUNCHER PROGRAM SIGNAL STATUS
#
# Starts `LAUNCHER -n 3 PROGRAM` (PROGRAM: omp_signal_wait, whose region
# spins on device 0), waits for its "RUN" line, sends SIGNAL (INT, TERM...)
# to the launcher only, and fails unless the launcher exits with STATUS
# (130 for INT, 143 for TERM) within 30 s and no process of PROGRAM is
# left 10 s later.
set -u
me=check_signals.sh
[ $# -eq 4 ] || { sed -n '4p' "$0" | sed 's/^# //' >&2; exit 2; }
launcher=$1
prog=$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")
sig=$3
want=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_signals.XXXXXX") || exit 1
pattern="^$(printf '%s' "$prog" | sed 's/[][\.*^$+?(){}|]/\\&/g')( |\$)"
cleanup() {
    pkill -9 -f "$pattern" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
unset PMI_RANK PMI_SIZE PMI_FD PMIX_RANK OMPI_COMM_WORLD_SIZE MPI_LOCALNRANKS \
      OMPTARGET_MPI_LAUNCHER 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OTM_TEST_NDEVICES=2
fail() {
    echo "$me: $*"
    echo "----- stdout -----"; cat "$tmp/out"
    echo "----- stderr -----"; cat "$tmp/err"
    exit 1
}
# Started with &, the launcher would ignore SIGINT (and a shell cannot
# trap a signal ignored at its start): env gives it back the default, as
# a launcher started from a terminal or a batch script has it.
env --default-signal=INT "$launcher" -n 3 "$prog" >"$tmp/out" 2>"$tmp/err" &
pid=$!
i=0
until grep -q '^RUN ' "$tmp/out"; do
    i=$((i + 1))
    [ "$i" -le 300 ] || { kill -9 "$pid"; fail "no RUN line within 30 s"; }
    kill -0 "$pid" 2>/dev/null || fail "the launcher ended before the program started"
    sleep 0.1
done
sleep 0.5                       # the region is running on device 0 now
kill -s "$sig" "$pid"
i=0
while kill -0 "$pid" 2>/dev/null; do
    i=$((i + 1))
    [ "$i" -le 300 ] || { kill -9 "$pid"; fail "the launcher still ran 30 s after SIG$sig"; }
    sleep 0.1
done
wait "$pid"
status=$?
[ "$status" -eq "$want" ] || fail "the launcher exited with $status after SIG$sig, expected $want"
i=0
while pgrep -f "$pattern" >/dev/null; do
    i=$((i + 1))
    [ "$i" -le 100 ] || fail "processes of $(basename "$prog") still alive 10 s after the launcher:" \
                             "$(pgrep -af "$pattern" | tr '\n' ';')"
    sleep 0.1
done
echo "$me: SIG$sig to the launcher: status $status, no process left"
