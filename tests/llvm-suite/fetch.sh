#!/bin/sh
# Fetches LLVM's own libomptarget test suites for the label llvm-suite:
# from Debian's source packages llvm-toolchain-14, -15, -16 and -19, the
# suite's directory (openmp/libomptarget/test up to 16, offload/test in 19)
# and the two CMake files that fill in its lit.site.cfg.in: the project's
# CMakeLists.txt (the list of targets, LIBOMPTARGET_ALL_TARGETS) and
# OpenMPTesting.cmake (the compiler's OpenMP flags). Each lands in
# OTM_LLVM_SUITE_DIR/VERSION (default .deps/llvm-suite/VERSION) with a file
# .source naming the tarball; a version already there is skipped.
#
# usage: tests/llvm-suite/fetch.sh [VERSION...]   (default: 14 15 16 19)
#
# The source comes through a private apt configuration holding the deb-src
# entries of the machine's Debian mirror, as ci/llvm19.sh does: the
# machine's own apt sources are not changed. LLVM 19's suite is taken from
# the source ci/llvm19.sh already unpacked (.deps/llvm-19-src), when it is
# there, rather than downloaded a second time. Each orig tarball is about
# 130 MB; only the files above are unpacked.
#
# A version whose source cannot be had is reported and left out (exit
# status 0): its test of the label then reports itself skipped, with the
# reason. Called by ci/setup.sh.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
deps=$root/.deps
dest=${OTM_LLVM_SUITE_DIR:-$deps/llvm-suite}

say() { echo "llvm-suite: $*"; }

# The files taken from the source tree, per version: the suite's
# directory, its project's CMakeLists.txt and OpenMPTesting.cmake.
suite_files() {
    case $1 in
    14 | 15 | 16)
        echo openmp/libomptarget/test openmp/libomptarget/CMakeLists.txt \
             openmp/cmake/OpenMPTesting.cmake ;;
    *) echo offload/test offload/CMakeLists.txt offload/cmake/OpenMPTesting.cmake ;;
    esac
}

# apt_setup DIR: a private apt configuration in DIR (deb-src of the
# machine's mirror, for its release and its -updates); sets "$@" to the
# apt-get options that use it. Updated once per run of this script.
apt_ready=
apt_setup() {
    apt=$1
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    # The machine's Debian mirror (deb822 or one-line sources), else Debian's.
    mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
             sed -n 's|^URIs: *\([^ ]*/debian\)/*$|\1|p' | head -1)
    [ -n "$mirror" ] || mirror=$(sed -n 's|^deb  *\([^ ]*/debian\)/* .*|\1|p' \
                                 /etc/apt/sources.list 2>/dev/null | head -1)
    [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
    for suite in "$codename" "$codename-updates"; do
        echo "deb-src $mirror $suite main"
    done >"$apt/sources.list"
    apt_opts="-o Dir::Etc::SourceList=$apt/sources.list -o Dir::Etc::SourceParts=/dev/null
              -o Dir::State::Lists=$apt/lists -o Dir::Cache=$apt/cache
              -o APT::Sandbox::User=root"
    if [ -z "$apt_ready" ]; then
        # shellcheck disable=SC2086
        apt-get $apt_opts update -qq || return 1
        apt_ready=1
    fi
}

# fetch VERSION: downloads llvm-toolchain-VERSION's source, unpacks the
# suite into $dest/VERSION.
fetch() {
    ver=$1
    apt=$dest/apt
    apt_setup "$apt" || return 1
    dl=$dest/dl-$ver
    rm -rf "$dl"
    mkdir -p "$dl"
    # shellcheck disable=SC2086
    (cd "$dl" && apt-get $apt_opts source --download-only -qq "llvm-toolchain-$ver") ||
        return 1
    tarball=$(ls "$dl"/llvm-toolchain-"$ver"_*.orig.tar.xz) || return 1
    top=$(basename "$tarball" .orig.tar.xz)   # the tarball's top directory
    part=$dest/$ver.partial
    rm -rf "$part"
    mkdir -p "$part"
    say "unpacking the suite of $(basename "$tarball")"
    # shellcheck disable=SC2046
    tar -xJf "$tarball" -C "$part" --strip-components=1 \
        $(suite_files "$ver" | tr ' ' '\n' | sed "s|^|$top/|") || return 1
    basename "$tarball" >"$part/.source"
    rm -rf "$dl" "${dest:?}/$ver"
    mv "$part" "$dest/$ver"
}

# LLVM 19: copied from ci/llvm19.sh's unpacked source when it has the suite.
from_llvm19_src() {
    src=$deps/llvm-19-src
    [ -f "$src/.source" ] || return 1
    for f in $(suite_files 19); do
        [ -e "$src/$f" ] || return 1
    done
    part=$dest/19.partial
    rm -rf "$part"
    mkdir -p "$part/offload/cmake"
    for f in $(suite_files 19); do
        cp -r "$src/$f" "$part/$f"
    done
    cp "$src/.source" "$part/.source"
    rm -rf "$dest/19"
    mv "$part" "$dest/19"
}

[ $# -gt 0 ] || set -- 14 15 16 19
mkdir -p "$dest"
for ver in "$@"; do
    if [ -f "$dest/$ver/.source" ]; then
        say "LLVM $ver's suite present in $dest/$ver ($(cat "$dest/$ver/.source"))"
        continue
    fi
    if [ "$ver" = 19 ] && from_llvm19_src; then
        say "LLVM 19's suite copied from $deps/llvm-19-src"
        continue
    fi
    say "fetching Debian's llvm-toolchain-$ver source"
    if ! fetch "$ver"; then
        rm -rf "$dest/$ver.partial" "$dest/dl-$ver"
        say "skipped LLVM $ver: its source could not be fetched (no deb-src access to the Debian mirror?)"
    fi
done
rm -rf "$dest/apt"
