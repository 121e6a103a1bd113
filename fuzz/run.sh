#!/bin/sh
# fuzz/run.sh [-n RUNS] HARNESS [SECONDS] - builds the fuzz tree (build-fuzz/,
# clang-14, OTM_FUZZ=ON) if needed and runs HARNESS (fuzz_gate, fuzz_image,
# fuzz_config, fuzz_api, fuzz_schedule; the fuzz_ prefix may be left out)
# over a scratch copy of its seed corpus until RUNS inputs were executed
# or SECONDS passed, whichever comes first (at least one of them must be
# given), then prints executions, executions/s, the time taken, the
# corpus size and the coverage reached (libFuzzer's cov and ft). The seeds
# in fuzz/corpus are never written to; new inputs and crashes go to
# build-fuzz/fuzz/run-HARNESS/.
#   fuzz/run.sh gate 600            ten minutes
#   fuzz/run.sh -n 1000000 api      a million executions
set -eu
usage() { echo "usage: $0 [-n RUNS] HARNESS [SECONDS]" >&2; exit 2; }
runs=-1
if [ "${1:-}" = -n ]; then
    [ $# -ge 2 ] || usage
    runs=$2
    shift 2
fi
[ $# -eq 1 ] || [ $# -eq 2 ] || usage
h=fuzz_${1#fuzz_} secs=${2:-0}
case $runs$secs in *[!0-9-]*) usage ;; esac
[ "$runs" -gt 0 ] || [ "$secs" -gt 0 ] || usage
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
start=$(date +%s)
# shellcheck disable=SC2086
"$build/fuzz/$h" -runs="$runs" -max_total_time="$secs" -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" $extra "$work/corpus" >"$log" 2>&1 || rc=$?
took=$(($(date +%s) - start))
# The log may hold the input bytes a harness printed: read it as text.
done_runs=$(grep -a '^stat::number_of_executed_units:' "$log" | tail -n 1 | tr -dc 0-9)
rate=$(grep -a '^stat::average_exec_per_sec:' "$log" | tail -n 1 | tr -dc 0-9)
# The last status line: "#N DONE cov: C ft: F corp: K/SIZE ...".
cov=$(grep -a -E '^#[0-9]+' "$log" | tail -n 1 |
      sed -n 's/.*\(cov: [0-9]* ft: [0-9]* corp: [^ ]*\).*/\1/p')
echo "$h: ${done_runs:-?} executions, ${rate:-?} exec/s, ${took}s;" \
     "${cov:-cov: ?}; $(ls "$work/corpus" | wc -l) inputs in $work/corpus;" \
     "$(ls "$work/artifacts" | wc -l) crashes (log: $log)"
if [ "$rc" -ne 0 ]; then
    grep -a -E '^(==[0-9]+==ERROR|SUMMARY|fuzz_[a-z]+:)|Test unit written' "$log" || true
    echo "$h: FAILED (exit $rc); minimize with: $build/fuzz/$h -minimize_crash=1 -runs=10000 ARTIFACT" >&2
fi
exit "$rc"
