#!/bin/sh
# fuzz/run.sh HARNESS SECONDS - builds the fuzz tree (build-fuzz/, clang-14,
# OTM_FUZZ=ON) if needed and runs HARNESS (fuzz_gate, fuzz_image,
# fuzz_config, fuzz_api, fuzz_schedule; the fuzz_ prefix may be left out)
# over a scratch copy of its seed corpus for SECONDS, then prints
# executions/s and total executions. The seeds in fuzz/corpus are never
# written to; new inputs and crashes go to build-fuzz/fuzz/run-HARNESS/.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 HARNESS SECONDS" >&2; exit 2; }
h=fuzz_${1#fuzz_} secs=$2
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build-fuzz
if [ ! -f "$build/CMakeCache.txt" ]; then
    CC=clang-14 cmake -S "$src" -B "$build" -DOTM_FUZZ=ON >/dev/null
fi
cmake --build "$build" --target "$h" -j"$(nproc)" >/dev/null
work=$build/fuzz/run-$h
mkdir -p "$work/corpus" "$work/artifacts"
cp -n "$src/fuzz/corpus/$h/"* "$work/corpus/" 2>/dev/null || true
extra=""
[ "$h" = fuzz_config ] && extra="-dict=$src/fuzz/config.dict"
# Entropic scheduling spends most of these two harnesses' time updating
# feature frequencies (fuzz/CMakeLists.txt).
case $h in fuzz_api|fuzz_schedule) extra="-entropic=0" ;; esac
log=$work/last.log
rc=0
# shellcheck disable=SC2086
"$build/fuzz/$h" -max_total_time="$secs" -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" $extra "$work/corpus" >"$log" 2>&1 || rc=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
echo "$h: ${runs:-?} executions, ${rate:-?} exec/s in ${secs}s (log: $log)"
if [ "$rc" -ne 0 ]; then
    grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz_[a-z]+:)|Test unit written' "$log" || true
    echo "$h: FAILED (exit $rc); minimize with: $build/fuzz/$h -minimize_crash=1 -runs=10000 ARTIFACT" >&2
fi
exit "$rc"
