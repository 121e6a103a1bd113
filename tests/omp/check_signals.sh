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
. "$(dirname "$0")/job_lib.sh"
job_start_env
# Started with &, the launcher would ignore SIGINT (and a shell cannot
# trap a signal ignored at its start): env gives it back the default, as
# a launcher started from a terminal or a batch script has it.
env --default-signal=INT "$launcher" -n 3 "$prog" >"$tmp/out" 2>"$tmp/err" &
pid=$!
job_wait_run "$pid"
job_wait_region "$pid"
kill -s "$sig" "$pid"
job_wait_end "$pid" "SIG$sig"
[ "$status" -eq "$want" ] || job_fail "the launcher exited with $status after SIG$sig, expected $want"
job_wait_gone
echo "$me: SIG$sig to the launcher: status $status, no process left"
