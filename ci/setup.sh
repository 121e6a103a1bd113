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

fetch_llvm16() {
    if [ -f "$LLVM16_DIR/.unpacked" ]; then
        echo "setup: libomp 16 present in $LLVM16_DIR"
        return 0
    fi
    echo "setup: unpacking $LLVM16_DEBS into $LLVM16_DIR"
    dl=$(mktemp -d "${TMPDIR:-/tmp}/otm-llvm16.XXXXXX")
    # As root, apt downloads as user _apt: give it the directory, or apt
    # warns that the download is performed unsandboxed.
    if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then
        chown _apt "$dl"
    fi
    # shellcheck disable=SC2086
    if ! (cd "$dl" && apt-get download -qq $LLVM16_DEBS); then
        # Fresh machine: no package lists yet.
        $SUDO apt-get update -qq
        # shellcheck disable=SC2086
        (cd "$dl" && apt-get download -qq $LLVM16_DEBS)
    fi
    rm -rf "$LLVM16_DIR.partial"
    mkdir -p "$LLVM16_DIR.partial"
    for deb in "$dl"/*.deb; do
        dpkg-deb -x "$deb" "$LLVM16_DIR.partial"
    done
    (cd "$dl" && ls ./*.deb) >"$LLVM16_DIR.partial/.unpacked"
    rm -rf "$dl" "$LLVM16_DIR"
    mv "$LLVM16_DIR.partial" "$LLVM16_DIR"
}

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
