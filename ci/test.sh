#!/bin/sh
# The test command: installs what is missing, configures, builds and runs
# every test label. Usage: ci/test.sh [ctest arguments...]
#   ci/test.sh              all tests
#   ci/test.sh -L sim       only the simulator tests
# BUILD_DIR (default: build) selects the build tree.
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

sh ci/setup.sh

# Warnings are errors in CI; locally they are reported but do not stop you.
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
cmake -S . -B "$BUILD_DIR" -DOTM_WERROR="$werror" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
ctest --test-dir "$BUILD_DIR" --output-on-failure "$@"
