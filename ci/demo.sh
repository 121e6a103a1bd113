#!/bin/sh
# The main job: an OpenMP program offloaded over MPI.
# Installs what is missing, builds the plugin, compiles examples/matmul.c
# with stock clang-14 and runs it with one device rank per core of this
# machine (at least two) besides rank 0, the host program; each device
# computes with one OpenMP thread (OMP_NUM_THREADS, unless set), so that
# the devices share the cores rather than fight over them. It prints which
# rank, machine and process computed each band and for how long, the
# check against the host, and how many devices computed at once.
# Usage: ci/demo.sh [ranks]
# With OMPTARGET_MPI_TRACE=PREFIX set, each rank writes PREFIX.RANK.json and
# the demo then draws them into PREFIX.svg and merges them into
# PREFIX.merged.json (for Perfetto) with tools/trace2svg.py.
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cores=$(nproc)
RANKS=${1:-$((cores > 2 ? cores + 1 : 3))}
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export OMP_NUM_THREADS

sh ci/setup.sh
cmake -S . -B "$BUILD_DIR" >/dev/null
cmake --build "$BUILD_DIR" -j "$cores" --target omptarget_rtl_mpi omptarget_mpi_pmpi \
    omptarget_mpi_none omptarget-mpi-witness >/dev/null
clang-14 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu \
    examples/matmul.c -o "$BUILD_DIR/matmul" -lm
echo "running: OMP_NUM_THREADS=$OMP_NUM_THREADS $BUILD_DIR/bin/omptarget-mpirun -n $RANKS $BUILD_DIR/matmul"
trace=${OMPTARGET_MPI_TRACE:-}
[ -z "$trace" ] || rm -f "$trace".[0-9]*.json
OMPTARGET_MPI_INFO=1 "$BUILD_DIR/bin/omptarget-mpirun" -n "$RANKS" "$BUILD_DIR/matmul"
if [ -n "$trace" ]; then
    python3 tools/trace2svg.py --title "examples/matmul.c on $RANKS ranks" \
        -o "$trace.svg" --merge "$trace.merged.json" "$trace".[0-9]*.json
    echo "trace: $trace.svg (timeline), $trace.merged.json (open in ui.perfetto.dev)"
fi
