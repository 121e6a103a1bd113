#!/bin/sh
# Installs the Debian packages omptarget-mpi needs to build and test.
# Idempotent: packages already present are skipped, and apt-get runs only
# when something is missing. Needs root (or sudo) for apt-get.
set -eu

PACKAGES="cmake make gcc pkg-config clang-14 clang-tools-14 libomp-14-dev
mpich libmpich-dev libffi-dev libelf-dev libcmocka-dev
valgrind lcov procps libclang-rt-14-dev gnuplot-nox"

missing=""
for p in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "setup: all packages present"
    exit 0
fi

echo "setup: installing$missing"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
        echo "setup: need root (or sudo) to install:$missing" >&2
        exit 1
    }
    SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
