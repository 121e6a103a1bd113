#!/bin/sh
# run_alloc_faults.sh RANK MIN NPROCS PROGRAM TAG [N...]
#
# The plugin's own allocations failing, one per job, on rank RANK, through
# the test hook of src/plugin/alloc.c (OTM_TEST_FAIL_ALLOC=N fails the Nth
# allocation of the process, OTM_TEST_FAIL_ALLOC_RANK=RANK picks the
# process). Each job is run and checked by run_mpi.sh (NPROCS ranks,
# PROGRAM, its checks and the clean shutdown of every rank).
#
# Without N: a first job with OTM_TEST_FAIL_ALLOC=0 counts the allocations
# rank RANK makes (its line "test hook: rank RANK made T allocations"); T
# must be at least MIN, so that a hook that counts nothing cannot pass.
# Then one job for each N in 1..T. With N...: one job for each N given.
#
# Each job must show on rank RANK's stderr the hook's line saying that it
# failed allocation N, and then either
#   - pass every check of run_mpi.sh: the program's (the call that lost the
#     allocation failed with one line saying out of memory, or did without
#     it; the call tried again succeeded) and the shutdown, or
#   - if the allocation was one of the start-up (no memory for the
#     instance, the device map, the devices), end as exit.c aborts a
#     job: a non-zero status, the line "cannot take part in the job: it is
#     aborted" on a rank's stderr, the program's main never reached, no
#     process left (run_mpi.sh, MPI_TEST_ALLOW_ABORT). Start-up comes
#     first: once a job got through it, a later N must not abort.
# A job's output is printed only when it fails; each N gives a TAP line.
set -u
if [ $# -lt 5 ]; then
    echo "usage: run_alloc_faults.sh RANK MIN NPROCS PROGRAM TAG [N...]" >&2
    exit 2
fi
rank=$1
min=$2
np=$3
prog=$4
tag=$5
shift 5
here=$(dirname "$0")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

failures=0
# job N: runs the job, its output in $tmp/out, status in $job_status.
job() {
    MPI_TEST_ALLOW_ABORT="cannot take part in the job: it is aborted" \
        sh "$here/run_mpi.sh" "$np" "$prog" "$tag" OTM_TEST_FAIL_ALLOC="$1" \
        OTM_TEST_FAIL_ALLOC_RANK="$rank" >"$tmp/out" 2>&1
    job_status=$?
}
# What rank R printed on stderr, from run_mpi.sh's output.
stderr_of() {
    awk -v h="---- rank $1 stderr ----" '$0 == h { on = 1; next } /^---- / { on = 0 } on' \
        "$tmp/out"
}
stdout_of() {
    awk -v h="---- rank $1 stdout ----" '$0 == h { on = 1; next } /^---- / { on = 0 } on' \
        "$tmp/out"
}
not_ok() {
    echo "not ok $1 - $2"
    cat "$tmp/out"
    failures=$((failures + 1))
}

if [ $# -eq 0 ]; then
    job 0
    total=$(stderr_of "$rank" |
        sed -n "s/^omptarget-mpi: test hook: rank $rank made \([0-9]*\) allocations.*/\1/p")
    if [ "$job_status" -ne 0 ] || [ -z "$total" ]; then
        not_ok 0 "the job counting rank $rank's allocations passes and says how many"
        exit 1
    fi
    echo "ok 0 - rank $rank makes $total allocations in this job (at least $min)"
    if [ "$total" -lt "$min" ]; then
        echo "not ok - fewer than $min allocations counted: the hook misses some"
        exit 1
    fi
    set -- $(seq 1 "$total")
fi

started=0 aborted=0 passed=0
start=$(date +%s)
for n in "$@"; do
    job "$n"
    hook=$(stderr_of "$rank" | grep -c "^omptarget-mpi: test hook: allocation $n of rank $rank ")
    what=$(stderr_of "$rank" | sed -n "s/^omptarget-mpi: test hook: allocation $n of rank $rank (\(.*\)) fails.*/\1/p")
    # Where it failed, as the program saw it (on the host: the hook's line
    # was in the call's stderr; on a worker: a call failed).
    where=$(stdout_of 0 | sed -n 's/^# injected: //p')
    [ -n "$where" ] || where=$(stdout_of 0 | sed -n 's/^# \(call failed: .*\)/\1/p')
    oom=$(stderr_of "$rank" | grep -c "out of memory")
    if [ "$hook" -ne 1 ]; then
        not_ok "$n" "rank $rank: the hook says once that it failed allocation $n (found $hook)"
    elif [ "$job_status" -eq 0 ]; then
        started=1 passed=$((passed + 1))
        echo "ok $n - allocation $n of rank $rank ($what): ${where:-no call failed}; clean shutdown"
    elif [ "$job_status" -eq 3 ] && [ "$started" -eq 0 ] && [ "$oom" -ne 1 ]; then
        not_ok "$n" "allocation $n of rank $rank aborted the job with one line saying out of memory (found $oom)"
    elif [ "$job_status" -eq 3 ] && [ "$started" -eq 0 ]; then
        aborted=$((aborted + 1))
        echo "ok $n - allocation $n of rank $rank ($what) at start-up: the job is aborted"
    elif [ "$job_status" -eq 3 ]; then
        not_ok "$n" "allocation $n of rank $rank aborted the job after a job got through its start"
    else
        not_ok "$n" "allocation $n of rank $rank ($what): failed cleanly and the job shut down"
    fi
done
echo "# rank $rank: $# jobs in $(($(date +%s) - start)) s: $passed shut down cleanly," \
    "$aborted aborted at start-up, $failures failed"
[ "$failures" -eq 0 ]
