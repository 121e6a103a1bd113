#!/bin/sh
# coverage/mutate.sh: mutation testing of the protocol core (src/core/*.c)
# by the unit and sim tests. See docs/mutation.md.
#
# Usage: sh coverage/mutate.sh [options]
#   --list              lists every mutant (id, file:line, class, before,
#                       after) and exits; nothing is built
#   --only N,M,...      runs these mutants
#   --sample K          runs K mutants drawn with --seed S (default 1)
#   --seed S            the seed of --sample (deterministic: same tree, same
#                       K and S, same mutants)
#   --quick             runs a fixed set of 3 mutants that the tests are known
#                       to kill, and fails unless every one is killed (CI)
#   --min-score P       exits non-zero if the kill score is below P percent
#   --timeout SECONDS   the time limit of each of a mutant's two test runs
#                       (default: three times the unmutated run's, at least
#                       30 s for the short tests and 60 s for the long ones)
#   --resume            keeps the verdicts already in the results of the
#                       build tree and runs only the mutants it lacks (an
#                       interrupted run, the same selection on the same tree)
# Without --only, --sample or --quick: every mutant (long: 2 s to a minute
# each).
#
# Each mutant is one change on one line of one src/core file (the mutants
# are enumerated by coverage/mutants.py). For each: the file is saved aside,
# the mutant written in its place, the build tree ${MUTATE_DIR:-build-mutate}
# rebuilt (make recompiles the file and relinks what uses it), then
# ctest -L "unit|sim" -LE valgrind runs (-j2, stopping at the first failure;
# the short tests first, the tests labelled long only if those pass) under
# the time limit, and the file is restored (also on exit, INT, TERM).
# Verdicts: killed (a test failed), survived (every test passed), timeout
# (the time limit was reached; counted as killed), build-failed (the mutant
# does not compile; not counted).
#
# Exit status: 0 when the run completed (whatever the score), 1 if the
# baseline (unmutated) run fails, a quick mutant is not killed, or the score
# is below --min-score; 2 if src/core could not be restored or was modified
# before the run; 64 on bad usage.
set -eu

cd "$(dirname "$0")/.."
root=$(pwd)
MUTATE_DIR=${MUTATE_DIR:-build-mutate}
gen="python3 $root/coverage/mutants.py"

# The quick set, named by file, class and text (before, after) rather than
# by number, so that it survives edits elsewhere in src/core.
QUICK="frag.c|flip|if (frag == 0 |if (frag != 0
frag.c|flip|(total % p.frag != 0)|(total % p.frag == 0)
node.c|flip|MPI_Comm_dup(MPI_COMM_WORLD, out) != MPI_SUCCESS|== MPI_SUCCESS"

usage() {
    sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 64
}

mode=all only="" sample="" seed=1 min_score="" limit="" resume=0
while [ $# -gt 0 ]; do
    case $1 in
    --list) mode=list ;;
    --only) [ $# -ge 2 ] || usage; mode=only only=$2; shift ;;
    --sample) [ $# -ge 2 ] || usage; mode=sample sample=$2; shift ;;
    --seed) [ $# -ge 2 ] || usage; seed=$2; shift ;;
    --quick) mode=quick ;;
    --min-score) [ $# -ge 2 ] || usage; min_score=$2; shift ;;
    --timeout) [ $# -ge 2 ] || usage; limit=$2; shift ;;
    --resume) resume=1 ;;
    -h | --help) usage ;;
    *) echo "mutate: unknown option $1" >&2; usage ;;
    esac
    shift
done

work="$MUTATE_DIR/mutate"
mkdir -p "$work"
list="$work/mutants.tsv"
$gen list "$root" >"$list"
total=$(wc -l <"$list")

if [ "$mode" = list ]; then
    awk -F '\t' '{ printf "%5d %-18s %-6s %s  =>  %s\n", $1, $2 ":" $3, $4, $5, $6 }' "$list"
    echo "$total mutants" >&2
    exit 0
fi

case $mode in
all) ids=$(seq -s , 1 "$total") ;;
only) ids=$only ;;
sample) ids=$($gen sample "$root" "$sample" "$seed") ;;
quick)
    ids=""
    old_ifs=$IFS
    IFS='
'
    for q in $QUICK; do
        IFS='|'
        # shellcheck disable=SC2086
        set -- $q
        IFS=$old_ifs
        id=$($gen find "$root" "$1" "$2" "$3" "$4") || {
            echo "mutate: quick mutant '$q' not found: update QUICK" >&2
            exit 1
        }
        ids="${ids:+$ids,}$id"
    done
    IFS=$old_ifs
    ;;
esac

if ! git diff --quiet -- src/core; then
    echo "mutate: src/core has uncommitted changes; commit or stash them first" >&2
    exit 2
fi

# ---- restoring the tree ------------------------------------------------------
saved="" # the src/core file currently replaced by a mutant, if any
restore() {
    if [ -n "$saved" ]; then
        cp "$work/original.c" "src/core/$saved"
        saved=""
    fi
}
# shellcheck disable=SC2317 # invoked by the trap
on_exit() {
    rc=$?
    restore
    if ! git diff --quiet -- src/core; then
        echo "mutate: src/core differs from git after the run" >&2
        rc=2
    fi
    exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Mutants may warn (an unused variable): the mutation tree never uses
# -Werror, in CI too. But a function that falls off its end without a
# return value is undefined behaviour, not a program to judge: such a
# mutant (a dropped last `return`) fails to build.
[ -f "$MUTATE_DIR/CMakeCache.txt" ] ||
    cmake -S . -B "$MUTATE_DIR" -DOTM_WERROR=OFF \
        -DCMAKE_C_FLAGS=-Werror=return-type >/dev/null

build() { cmake --build "$MUTATE_DIR" -j 2 >"$work/build.log" 2>&1; }

# The tests of one mutant, under the time limits $1 and $2 of its two runs:
# the short tests first, then, if they all pass, the tests labelled long
# (test_events and test_launcher). Whatever the short ones kill is killed by the whole suite,
# so the verdict is the whole suite's, at a fraction of the time. The
# status is ctest's (the first failure's), 124 or 137 when a limit was
# reached.
short_tests() {
    timeout --kill-after=10 "$1" ctest --test-dir "$MUTATE_DIR" -L "unit|sim" \
        -LE "valgrind|long" -j 2 --stop-on-failure >"$work/ctest.log" 2>&1
}
long_tests() {
    timeout --kill-after=10 "$1" ctest --test-dir "$MUTATE_DIR" -L long \
        -j 2 --stop-on-failure >>"$work/ctest.log" 2>&1
}
tests() {
    rc=0
    short_tests "$1" || rc=$?
    [ $rc -ne 0 ] || long_tests "$2" || rc=$?
    return $rc
}

# ---- baseline ---------------------------------------------------------------
echo "mutate: $total mutants in src/core; baseline build and tests in $MUTATE_DIR"
build || { cat "$work/build.log" >&2; echo "mutate: the unmutated tree does not build" >&2; exit 1; }
baseline_failed() {
    tail -30 "$work/ctest.log" >&2
    echo "mutate: the baseline (unmutated) tests fail" >&2
    exit 1
}
t0=$(date +%s)
short_tests 3600 || baseline_failed
t1=$(date +%s)
long_tests 3600 || baseline_failed
t2=$(date +%s)
short=$((t1 - t0)) long=$((t2 - t1))
if [ -n "$limit" ]; then
    limit_short=$limit limit_long=$limit
else
    limit_short=$((3 * short < 30 ? 30 : 3 * short))
    limit_long=$((3 * long < 60 ? 60 : 3 * long))
fi
echo "mutate: baseline passed in ${short}s + ${long}s (short and long tests);" \
    "time limits per mutant ${limit_short}s and ${limit_long}s"

# ---- the mutants ------------------------------------------------------------
killed=0 survived=0 timedout=0 broken=0
if [ "$resume" -eq 1 ] && [ -f "$work/results" ]; then
    echo "mutate: resuming: $(wc -l <"$work/results") verdicts kept from $work/results"
    cat "$work/results"
    count() { awk -v v="$1" '$4 == v' "$work/results" | wc -l; }
    killed=$(count killed) survived=$(count survived)
    timedout=$(count timeout) broken=$(count build-failed)
else
    : >"$work/survivors"
    : >"$work/results"
fi
for id in $(echo "$ids" | tr , ' '); do
    if [ "$resume" -eq 1 ] && awk -v id="$id" '$1 == id { f = 1 } END { exit !f }' "$work/results"; then
        continue
    fi
    line=$(awk -F '\t' -v id="$id" '$1 == id' "$list")
    if [ -z "$line" ]; then
        echo "mutate: no mutant $id (1..$total)" >&2
        exit 64
    fi
    file=$(echo "$line" | cut -f2)
    lno=$(echo "$line" | cut -f3)
    class=$(echo "$line" | cut -f4)
    cp "src/core/$file" "$work/original.c"
    saved=$file
    $gen apply "$root" "$id" "$work/mutant.c"
    cp "$work/mutant.c" "src/core/$file"
    t0=$(date +%s)
    if ! build; then
        verdict=build-failed
        broken=$((broken + 1))
    else
        set +e
        tests "$limit_short" "$limit_long"
        rc=$?
        set -e
        if [ $rc -eq 0 ]; then
            verdict=survived
            survived=$((survived + 1))
            {
                echo "--- mutant $id: $file:$lno ($class)"
                diff -u --label "a/src/core/$file" --label "b/src/core/$file" \
                    "$work/original.c" "$work/mutant.c" || true
            } >>"$work/survivors"
        elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
            verdict=timeout
            timedout=$((timedout + 1))
        elif grep -q "tests failed out of" "$work/ctest.log"; then
            verdict=killed
            killed=$((killed + 1))
        else
            tail -30 "$work/ctest.log" >&2
            echo "mutate: ctest failed without a failing test (status $rc)" >&2
            exit 1
        fi
    fi
    restore
    secs=$(($(date +%s) - t0))
    printf '%5d %-18s %-6s %-12s %4ds\n' "$id" "$file:$lno" "$class" "$verdict" "$secs" |
        tee -a "$work/results"
done

# The tree is the original again: rebuild it so the build tree matches.
build || true

counted=$((killed + survived + timedout))
score=$(awk -v k=$((killed + timedout)) -v n=$counted \
    'BEGIN { if (n == 0) print "0.0"; else printf "%.1f", 100 * k / n }')
echo
echo "mutate: killed $killed, survived $survived, timed out $timedout" \
    "(kill score $score% of $counted); build-failed $broken (not counted)"
if [ -s "$work/survivors" ]; then
    echo
    echo "mutate: survivors"
    cat "$work/survivors"
fi

status=0
if [ "$mode" = quick ] && [ "$killed" -ne "$(echo "$ids" | tr , '\n' | wc -l)" ]; then
    echo "mutate: a quick mutant was not killed: the script or the tests are broken" >&2
    status=1
fi
if [ -n "$min_score" ] &&
    awk -v s="$score" -v m="$min_score" 'BEGIN { exit !(s < m) }'; then
    echo "mutate: kill score $score% below --min-score $min_score%" >&2
    status=1
fi
exit $status
