#!/bin/sh
# The test command: installs what is missing, configures, builds and runs
# every test label. Usage: ci/test.sh [ctest arguments...]
#   ci/test.sh              all tests, the libFuzzer harnesses included,
#                           then the coverage gate (coverage/coverage.sh)
#                           and the mutation quick mode (coverage/mutate.sh)
#   ci/test.sh -L sim       only the simulator tests
# BUILD_DIR (default: build), FUZZ_DIR (default: build-fuzz), TSAN_DIR
# (default: build-tsan) and OPENMPI_DIR (default: build-openmpi) select the
# build trees.
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
FUZZ_DIR=${FUZZ_DIR:-build-fuzz}
TSAN_DIR=${TSAN_DIR:-build-tsan}

# Each part says how long it took (ci: PART: N s), for the 60-minute
# budget of a CI run.
t0=$(date +%s)
took() {
    echo "ci: $1: $(( $(date +%s) - t0 )) s"
    t0=$(date +%s)
}

sh ci/setup.sh
took setup

# Warnings are errors in CI; locally they are reported but do not stop you.
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON

# The fuzz harnesses need clang and sanitizers: a build tree of their own.
# Each runs a fixed number of inputs from a fixed seed (label fuzz).
if [ $# -eq 0 ]; then
    CC=clang-14 cmake -S . -B "$FUZZ_DIR" -DOTM_FUZZ=ON >/dev/null
    cmake --build "$FUZZ_DIR" -j "$(nproc)" --target fuzz_gate fuzz_image fuzz_config \
        fuzz_api fuzz_schedule
    ctest --test-dir "$FUZZ_DIR" -L fuzz --output-on-failure
    took fuzz

    # ThreadSanitizer: the threaded mpi jobs in a clang tree of their own
    # (label tsan).
    CC=clang-14 cmake -S . -B "$TSAN_DIR" -DOTM_TSAN=ON -DOTM_WERROR="$werror" >/dev/null
    cmake --build "$TSAN_DIR" -j "$(nproc)"
    ctest --test-dir "$TSAN_DIR" -L tsan --output-on-failure
    took tsan
fi

cmake -S . -B "$BUILD_DIR" -DOTM_WERROR="$werror" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
if [ $# -eq 0 ]; then
    # The tests of one process each (labels unit and sim, and their
    # memcheck runs; the MPI jobs among these hold a lock) side by side;
    # the jobs of the other labels one at a time, since their checks find
    # a program's processes by its name. Both halves run whatever fails.
    failed=0
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" \
        -L '^(unit|sim|valgrind)$' || failed=1
    ctest --test-dir "$BUILD_DIR" --output-on-failure -LE '^(unit|sim|valgrind)$' || failed=1
    [ "$failed" -eq 0 ] || { echo "ci: the main tree's tests failed" >&2; exit 1; }
else
    ctest --test-dir "$BUILD_DIR" --output-on-failure "$@"
fi
took "the main tree"

# The plugin built for Open MPI (OTM_MPI=openmpi) in a tree of its own: the
# labels that run it, mpi, omp, omp19, netns and slurm (the rest does not
# depend on the MPI; omp15 and omp16 load the same plugin as omp does, from
# another libomptarget, which the MPICH tree covers; netns runs over Open
# MPI's TCP transport, see tests/netns; slurm starts its ranks with srun
# --mpi=pmix, see tests/slurm).
if [ $# -eq 0 ]; then
    OPENMPI_DIR=${OPENMPI_DIR:-build-openmpi}
    cmake -S . -B "$OPENMPI_DIR" -DOTM_MPI=openmpi -DOTM_WERROR="$werror" >/dev/null
    cmake --build "$OPENMPI_DIR" -j "$(nproc)"
    ctest --test-dir "$OPENMPI_DIR" -L "^(mpi|omp|omp19|netns|slurm)$" --output-on-failure
    took "the Open MPI tree"
fi

# Coverage of the unit, sim and mpi tests in a gcc --coverage tree of its
# own (COV_DIR, default build-coverage); fails below the thresholds.
if [ $# -eq 0 ]; then
    sh coverage/coverage.sh
    took coverage
fi

# Mutation testing, quick mode: three mutants of src/core the unit and sim
# tests are known to kill, in a build tree of its own (MUTATE_DIR, default
# build-mutate); fails if one survives, so the script keeps working. The
# full campaign is run by hand: see docs/mutation.md.
if [ $# -eq 0 ]; then
    sh coverage/mutate.sh --quick
    took mutation
fi
