#!/bin/sh
# The main job: an OpenMP program offloaded over MPI.
# Installs what is missing, builds the plugin, compiles examples/matmul.c
# with stock clang-14 and runs it on 3 ranks (rank 0 the host program,
# ranks 1 and 2 the two devices). Usage: ci/demo.sh [ranks]
# With OMPTARGET_MPI_TRACE=PREFIX set, each rank writes PREFIX.RANK.json and
# the demo then draws them into PREFIX.svg and merges them into
# PREFIX.merged.json (for Perfetto) with tools/trace2svg.py.
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
RANKS=${1:-3}

sh ci/setup.sh
cmake -S . -B "$BUILD_DIR" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target omptarget_rtl_mpi >/dev/null
clang-14 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu \
    examples/matmul.c -o "$BUILD_DIR/matmul" -lm
echo "running: $BUILD_DIR/bin/omptarget-mpirun -n $RANKS $BUILD_DIR/matmul"
trace=${OMPTARGET_MPI_TRACE:-}
[ -z "$trace" ] || rm -f "$trace".[0-9]*.json
OMPTARGET_MPI_INFO=1 "$BUILD_DIR/bin/omptarget-mpirun" -n "$RANKS" "$BUILD_DIR/matmul"
if [ -n "$trace" ]; then
    python3 tools/trace2svg.py --title "examples/matmul.c on $RANKS ranks" \
        -o "$trace.svg" --merge "$trace.merged.json" "$trace".[0-9]*.json
    echo "trace: $trace.svg (timeline), $trace.merged.json (open in ui.perfetto.dev)"
fi
