#!/bin/sh
# Installs the Debian packages omptarget-mpi needs to build and test.
# Idempotent: packages already present are skipped, and apt-get runs only
# when something is missing. Needs root (or sudo) for apt-get.
set -eu

PACKAGES="cmake make gcc pkg-config clang-14 clang-tools-14 libomp-14-dev
mpich libmpich-dev openmpi-bin libopenmpi-dev libffi-dev libelf-dev libcmocka-dev
valgrind lcov procps libclang-rt-14-dev clang-16 clang-tools-16
gnuplot-nox python3 iproute2"

# ---- Slurm (label slurm, tests/slurm): a one-node cluster started by the
# tests themselves; installing the packages starts no daemon we use.
PACKAGES="$PACKAGES slurmctld slurmd slurm-client munge"
# ---- end of Slurm

# libomptarget 16 for the omp16 tests. libomp-16-dev conflicts with
# libomp-14-dev, so its files (and libomp5-16's) are unpacked into the
# project, never installed: OTM_LLVM16_DIR, default .deps/llvm-16 (what
# CMake looks for). Skipped when already unpacked.
LLVM16_DEBS="libomp-16-dev libomp5-16"
LLVM16_DIR=${OTM_LLVM16_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.deps/llvm-16}

# unpack_debs DIR DEB...: downloads the packages and unpacks them into DIR
# (never installs them). Skipped when DIR was already unpacked.
unpack_debs() {
    dir=$1
    shift
    if [ -f "$dir/.unpacked" ]; then
        echo "setup: $* present in $dir"
        return 0
    fi
    echo "setup: unpacking $* into $dir"
    dl=$(mktemp -d "${TMPDIR:-/tmp}/otm-debs.XXXXXX")
    # As root, apt downloads as user _apt: give it the directory, or apt
    # warns that the download is performed unsandboxed.
    if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then
        chown _apt "$dl"
    fi
    if ! (cd "$dl" && apt-get download -qq "$@"); then
        # Fresh machine: no package lists yet.
        $SUDO apt-get update -qq
        (cd "$dl" && apt-get download -qq "$@")
    fi
    rm -rf "$dir.partial"
    mkdir -p "$dir.partial"
    for deb in "$dl"/*.deb; do
        dpkg-deb -x "$deb" "$dir.partial"
    done
    (cd "$dl" && ls ./*.deb) >"$dir.partial/.unpacked"
    rm -rf "$dl" "$dir"
    mv "$dir.partial" "$dir"
}

# shellcheck disable=SC2086
fetch_llvm16() { unpack_debs "$LLVM16_DIR" $LLVM16_DEBS; }

# --- LLVM 15 (the omp15 tests) ---------------------------------------------
# clang-15 and clang-tools-15 (clang-offload-wrapper and -bundler) are
# installed; libomp-15-dev conflicts with libomp-14-dev like 16's, so it and
# libomp5-15 are unpacked into OTM_LLVM15_DIR, default .deps/llvm-15 (what
# tests/omp/omp15.cmake looks for).
PACKAGES="$PACKAGES clang-15 clang-tools-15"
LLVM15_DEBS="libomp-15-dev libomp5-15"
LLVM15_DIR=${OTM_LLVM15_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.deps/llvm-15}
# shellcheck disable=SC2086
fetch_llvm15() { unpack_debs "$LLVM15_DIR" $LLVM15_DEBS; }
# --- end of LLVM 15 ----------------------------------------------------------

# --- LLVM 19 (the omp19 tests, clang-19's programs) -------------------------
# libomptarget 19 links its plugins in, so ci/llvm19.sh builds one with ours
# inside from Debian's llvm-toolchain-19 source, against llvm-19-dev (whose
# CMake package needs libzstd-dev). clang-19 and clang-tools-19 compile the
# programs; libomp-19-dev conflicts with libomp-14-dev, so it and
# libomp5-19 are unpacked into OTM_LLVM19_DIR, default .deps/llvm-19 (what
# tests/omp/omp19.cmake and ci/llvm19.sh look for).
PACKAGES="$PACKAGES clang-19 clang-tools-19 llvm-19-dev libzstd-dev xz-utils"
LLVM19_DEBS="libomp-19-dev libomp5-19"
LLVM19_DIR=${OTM_LLVM19_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.deps/llvm-19}
# shellcheck disable=SC2086
fetch_llvm19() {
    unpack_debs "$LLVM19_DIR" $LLVM19_DEBS
    OTM_LLVM19_DIR=$LLVM19_DIR sh "$(dirname "$0")/llvm19.sh"
}
# --- end of LLVM 19 ----------------------------------------------------------

# --- LLVM's own libomptarget tests (label llvm-suite, tests/llvm-suite) ----
# Each version's lit, FileCheck and `not` (llvm-N-tools), psutil for lit's
# per-test time limit; tests/llvm-suite/fetch.sh takes the suites from
# Debian's llvm-toolchain-14, -15, -16 and -19 sources into
# .deps/llvm-suite (19's from ci/llvm19.sh's source, so after it).
PACKAGES="$PACKAGES llvm-14-tools llvm-15-tools llvm-16-tools llvm-19-tools python3-psutil"
fetch_llvm_suite() { sh "$(dirname "$0")/../tests/llvm-suite/fetch.sh"; }
# --- end of llvm-suite -------------------------------------------------------

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
    SUDO=sudo
fi

if [ -z "$missing" ]; then
    echo "setup: all packages present"
    fetch_llvm16
    fetch_llvm15
    fetch_llvm19
    fetch_llvm_suite
    exit 0
fi

echo "setup: installing$missing"
if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; then
    echo "setup: need root (or sudo) to install:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
fetch_llvm16
fetch_llvm15
fetch_llvm19
fetch_llvm_suite
