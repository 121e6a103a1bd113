#!/bin/sh
# check_status.sh LAUNCHER PROGRAM VARIANT STATUS RUNS - one failure, one
# status: runs `LAUNCHER -n 3 PROGRAM` RUNS times with OTM_TEST_VARIANT set
# (omp_host_dies: the program itself dies after its regions; `mandatory`
# also sets OMP_TARGET_OFFLOAD=MANDATORY; omp_usm_readonly: a region's
# store faults), and fails unless every run printed the program's RUN
# line, ended with exit status STATUS within 30 s, said on stderr whose
# end that status is (the program, rank 0, that ended first, or the
# plugin's) when the MPI runtime reported another, and left no process of
# PROGRAM. Prints the statuses the MPI runtime reported, and how often.
set -u
me=check_status.sh
[ $# -eq 5 ] || { sed -n '2p' "$0" | sed 's/^# //' >&2; exit 2; }
launcher=$1
prog=$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")
variant=$3 want=$4 runs=$5
. "$(dirname "$0")/job_lib.sh"
job_start_env
export OTM_TEST_VARIANT="$variant"
[ "$variant" = mandatory ] && export OMP_TARGET_OFFLOAD=MANDATORY
reported=
run=0
while [ "$run" -lt "$runs" ]; do
    run=$((run + 1))
    "$launcher" -n 3 "$prog" >"$tmp/out" 2>"$tmp/err" &
    job=$!
    job_wait_end "$job" "the program's start (run $run)"
    grep -q "^RUN $(basename "$prog")" "$tmp/out" || job_fail "run $run: no RUN line"
    [ "$status" -eq "$want" ] || job_fail "run $run of $runs: exit status $status, not $want"
    mpi=$(sed -n 's/.*(the MPI runtime reported \([0-9][0-9]*\))$/\1/p' "$tmp/err")
    if [ -n "$mpi" ]; then
        grep -q -e 'the program (rank 0) .* before any other rank ended' \
                -e 'as the plugin said above' "$tmp/err" ||
            job_fail "run $run: the launcher did not say whose end status $want is"
    fi
    reported="$reported ${mpi:-$want}"
    job_wait_gone
done
echo "$me: $(basename "$prog") $variant: exit status $want in $runs of $runs runs; the MPI runtime reported:" \
     "$(printf '%s\n' $reported | sort -n | uniq -c | awk '{printf "%s%s x%s", s, $2, $1; s=", "}')"
