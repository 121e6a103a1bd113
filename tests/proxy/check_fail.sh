#!/bin/sh
# check_fail.sh RUN_OMP STATUS REGEX [RUN_OMP_OPTIONS...] LAUNCHER PLUGIN_DIR PROGRAM
# - a job that must fail as a user should see it: runs
# `sh RUN_OMP --expect-fail REGEX RUN_OMP_OPTIONS... LAUNCHER PLUGIN_DIR
# PROGRAM` (a non-zero status within its time limit, the program's RUN line,
# stderr matching REGEX, one end of the job, no process left) and fails
# unless, besides, the job ended with exit status STATUS and exactly one
# line of stderr matches REGEX (one failure, one line). On failure it
# prints why and run_omp.sh's report.
set -u
me=check_fail.sh
[ $# -ge 6 ] || { sed -n '2,3p' "$0" | sed 's/^# //' >&2; exit 2; }
run_omp=$1 want=$2 regex=$3
shift 3
out=$(sh "$run_omp" --expect-fail "$regex" "$@" 2>&1)
rc=$?
problems=
[ "$rc" = 0 ] || problems="$problems
  - run_omp.sh did not see the expected failure (status $rc)"
if [ "$rc" = 0 ]; then
    printf '%s\n' "$out" | grep -q "failed as expected (status $want," ||
        problems="$problems
  - the job did not end with exit status $want"
    # run_omp.sh prints the lines of stderr that match, then its verdict.
    lines=$(printf '%s\n' "$out" | grep -v '^run_omp.sh: ' | grep -Ec -- "$regex")
    [ "$lines" = 1 ] || problems="$problems
  - $lines lines match '$regex', expected exactly 1"
fi
if [ -n "$problems" ]; then
    echo "$me: FAILED:$problems"
    echo "----- run_omp.sh -----"
    printf '%s\n' "$out"
    exit 1
fi
printf '%s\n' "$out"
echo "$me: one line, exit status $want"
exit 0
