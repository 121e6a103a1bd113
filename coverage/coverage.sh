#!/bin/sh
# coverage/coverage.sh: line, branch and function coverage of src/ and sim/
# by the unit, sim, mpi and omp tests, with a gate on src/.
#
# Builds a gcc tree with --coverage -O0 (-DOTM_COVERAGE=ON) in
# ${COV_DIR:-build-coverage}, runs the tests labelled unit, sim, mpi and omp
# (the mpi and omp ones under MPICH: every rank, the workers included, writes
# its gcov data at exit; the omp programs are built by clang, the plugin they
# load by gcc with --coverage), collects with lcov (branch coverage on) and writes an HTML
# report to $COV_DIR/coverage/html/index.html. Prints the figures of src/
# and of sim/ and exits non-zero if a test failed or src/ is below the
# thresholds below.
#
# Error paths are reached by fault injection (the simulator's faults,
# allocation failure hooks, bad input), never excluded with LCOV_EXCL
# markers: every line and branch gcc sees counts.
set -eu

# --- thresholds for src/ (percent; decimals allowed: below() compares the
# hit and found counts against them exactly, in awk's floating point) ------
SRC_LINES_MIN=95.5
SRC_BRANCHES_MIN=86

cd "$(dirname "$0")/.."
root=$(pwd)
COV_DIR=${COV_DIR:-build-coverage}
out="$COV_DIR/coverage"
start=$(date +%s)

werror=OFF
[ "${CI:-}" = "true" ] && werror=ON

rc="--rc lcov_branch_coverage=1"

CC=gcc cmake -S . -B "$COV_DIR" -DCMAKE_BUILD_TYPE=Debug -DOTM_COVERAGE=ON \
    -DOTM_WERROR="$werror" >/dev/null
cmake --build "$COV_DIR" -j "$(nproc)"

# Counters of an earlier run would add up with this one's.
lcov --quiet --zerocounters --directory "$COV_DIR"
rm -rf "$out"
mkdir -p "$out"

# The unit and sim tests side by side, the MPI jobs one at a time (as
# ci/test.sh runs them; gcov merges the counters of concurrent processes).
tests_ok=1
ctest --test-dir "$COV_DIR" -L '^(unit|sim)$' -j "$(nproc)" --output-on-failure || tests_ok=0
ctest --test-dir "$COV_DIR" -L '^(mpi|omp)$' -LE '^(unit|sim)$' --output-on-failure ||
    tests_ok=0

# shellcheck disable=SC2086
lcov --quiet $rc --capture --directory "$COV_DIR" --output-file "$out/all.info"
# shellcheck disable=SC2086
lcov --quiet $rc --extract "$out/all.info" "$root/src/*" --output-file "$out/src.info"
# shellcheck disable=SC2086
lcov --quiet $rc --extract "$out/all.info" "$root/sim/*" --output-file "$out/sim.info"
# sim/scenarios.c holds the tests' host programs, not the simulator.
# shellcheck disable=SC2086
lcov --quiet $rc --remove "$out/sim.info" "$root/sim/scenarios.c" --output-file "$out/sim.info"
# shellcheck disable=SC2086
lcov --quiet $rc --add-tracefile "$out/src.info" --add-tracefile "$out/sim.info" \
    --output-file "$out/report.info"
# shellcheck disable=SC2086
genhtml --quiet $rc --branch-coverage --function-coverage --prefix "$root" \
    --title "omptarget-mpi: src/ and sim/" --output-directory "$out/html" \
    "$out/report.info"

# figures INFO: "lines branches functions" as percentages with one decimal,
# from the tracefile's LH/LF, BRH/BRF and FNH/FNF records.
figures() {
    awk -F: '
        /^LF:/ { lf += $2 } /^LH:/ { lh += $2 }
        /^BRF:/ { bf += $2 } /^BRH:/ { bh += $2 }
        /^FNF:/ { ff += $2 } /^FNH:/ { fh += $2 }
        function pct(h, f) { return f ? 100 * h / f : 100 }
        END { printf "%.1f %.1f %.1f %d/%d %d/%d %d/%d\n",
                     pct(lh, lf), pct(bh, bf), pct(fh, ff), lh, lf, bh, bf, fh, ff }' "$1"
}

# Per directory of src/ and sim/, then the totals the gate reads.
echo
printf '%-14s %8s %8s %10s   %s\n' "coverage" "lines" "branches" "functions" "(hit/found: lines, branches, functions)"
for d in src/config src/core src/device src/settings src/plugin src/shell src sim; do
    # shellcheck disable=SC2086
    lcov --quiet $rc --extract "$out/report.info" "$root/$d/*" \
        --output-file "$out/part.info" 2>/dev/null || continue
    set -- $(figures "$out/part.info")
    printf '%-14s %7s%% %7s%% %9s%%   (%s, %s, %s)\n' "$d/" "$1" "$2" "$3" "$4" "$5" "$6"
done
rm -f "$out/part.info"

set -- $(figures "$out/src.info")
echo
echo "thresholds for src/: lines >= $SRC_LINES_MIN%, branches >= $SRC_BRANCHES_MIN%"
echo "src/: lines $1% ($4), branches $2% ($5), functions $3% ($6)"
echo "report: $out/html/index.html"
echo "coverage run: $(( $(date +%s) - start )) s"

# below HIT/FOUND MIN: true when HIT/FOUND < MIN% (exact, not the rounded
# figure printed; MIN may have decimals: LC_ALL=C, so that awk reads its
# point as one whatever the locale).
below() {
    echo "$1" | LC_ALL=C awk -F/ -v min="$2" '{ exit !($1 * 100 < min * $2) }'
}

status=0
if [ "$tests_ok" -ne 1 ]; then
    echo "coverage: FAIL: some tests failed (see above)"
    status=1
fi
if below "$4" "$SRC_LINES_MIN"; then
    echo "coverage: FAIL: src/ lines $1% < $SRC_LINES_MIN%"
    status=1
fi
if below "$5" "$SRC_BRANCHES_MIN"; then
    echo "coverage: FAIL: src/ branches $2% < $SRC_BRANCHES_MIN%"
    status=1
fi
[ "$status" -eq 0 ] && echo "coverage: PASS"
exit "$status"
