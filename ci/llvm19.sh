#!/bin/sh
# Builds libomptarget 19 with omptarget-mpi inside, for the omp19 tests and
# for programs built by clang-19 (the launcher puts it first). From LLVM 19
# on, libomptarget links its plugins in and loads none by file name, so
# ours has to be built into it: this takes Debian's own llvm-toolchain-19
# source, builds only its offload/ directory (standalone, against
# llvm-19-dev) with one plugin, ours (src/nextgen, copied in as
# offload/plugins-nextgen/mpi), and puts libomptarget.so.19.1 into
# OTM_LLVM19_OFFLOAD_DIR/lib (default .deps/llvm-19-offload/lib), where
# CMake finds it. No upstream file is patched.
#
# Called by ci/setup.sh after the packages are installed. Cached: skipped
# when that directory was built from the same src/nextgen and this script.
# When the source cannot be had (no deb-src access), it says so and exits
# 0 without the runtime: the omp19 label is then skipped, with the reason.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
deps=$root/.deps
out=${OTM_LLVM19_OFFLOAD_DIR:-$deps/llvm-19-offload}
src=$deps/llvm-19-src
libomp=${OTM_LLVM19_DIR:-$deps/llvm-19}/usr/lib/llvm-19   # unpacked by ci/setup.sh

say() { echo "llvm19: $*"; }

key=$(find "$0" "$root/src/nextgen" -type f | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)
if [ -f "$out/lib/libomptarget.so.19.1" ] && [ "$(cat "$out/.built" 2>/dev/null)" = "$key" ]; then
    say "libomptarget 19 with omptarget-mpi present in $out"
    exit 0
fi

for need in clang-19 clang++-19 /usr/lib/llvm-19/lib/cmake/llvm/LLVMConfig.cmake \
            "$libomp/lib/libomp.so.5"; do
    if ! command -v "$need" >/dev/null 2>&1 && [ ! -e "$need" ]; then
        say "skipped: $need not found (ci/setup.sh installs clang-19 and llvm-19-dev and unpacks libomp 19)"
        exit 0
    fi
done

# The source: the offload/ and cmake/ directories (and one file of
# openmp/) of Debian's llvm-toolchain-19, fetched through a private apt
# configuration that adds the deb-src entries of the machine's Debian
# release (the machine's own sources are not changed). Kept in
# .deps/llvm-19-src once unpacked.
fetch_source() {
    apt=$deps/llvm-19-apt
    rm -rf "$apt"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/dl"
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    # The machine's Debian mirror (its deb822 or one-line sources), else
    # Debian's own.
    mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
             sed -n 's|^URIs: *\([^ ]*/debian\)/*$|\1|p' | head -1)
    [ -n "$mirror" ] || mirror=$(sed -n 's|^deb  *\([^ ]*/debian\)/* .*|\1|p' \
                                 /etc/apt/sources.list 2>/dev/null | head -1)
    [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
    for suite in "$codename" "$codename-updates"; do
        echo "deb-src $mirror $suite main"
    done >"$apt/sources.list"
    set -- -o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" \
        -o APT::Sandbox::User=root
    apt-get "$@" update -qq &&
        (cd "$apt/dl" && apt-get "$@" source --download-only -qq llvm-toolchain-19) ||
        return 1
    tarball=$(ls "$apt"/dl/llvm-toolchain-19_*.orig.tar.xz) || return 1
    top=$(basename "$tarball" .orig.tar.xz)   # the tarball's top directory
    rm -rf "$src.partial"
    mkdir -p "$src.partial"
    say "unpacking offload/ and cmake/ of $(basename "$tarball")"
    # offload/'s CMake tries its version script (the exported symbols and
    # their version, VERS1.0, which programs linked against Debian's
    # libomptarget ask for) with a file of openmp/.
    tar -xJf "$tarball" -C "$src.partial" --strip-components=1 \
        "$top/offload" "$top/cmake" "$top/openmp/runtime/src/exports_test_so.txt" ||
        return 1
    basename "$tarball" >"$src.partial/.source"
    rm -rf "$src" "$apt"
    mv "$src.partial" "$src"
}

if [ ! -f "$src/.source" ] || [ ! -f "$src/openmp/runtime/src/exports_test_so.txt" ]; then
    say "fetching Debian's llvm-toolchain-19 source"
    if ! fetch_source; then
        say "skipped: the llvm-toolchain-19 source could not be fetched (no deb-src access to the Debian mirror?)"
        exit 0
    fi
fi

rm -rf "$src/offload/plugins-nextgen/mpi"
cp -r "$root/src/nextgen" "$src/offload/plugins-nextgen/mpi"

build=$deps/llvm-19-offload.build
rm -rf "$build"     # a fresh configure: CMake caches the results of its checks
say "building libomptarget 19 from $(cat "$src/.source") with the mpi plugin"
cmake -S "$src/offload" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
    -DLLVM_DIR=/usr/lib/llvm-19/lib/cmake/llvm \
    -DLIBOMPTARGET_PLUGINS_TO_BUILD=mpi \
    -DLIBOMPTARGET_BUILD_DEVICERTL_BCLIB=OFF \
    -DLIBOMP_OMP_TOOLS_INCLUDE_DIR="$libomp/lib/clang/19/include" \
    -DOPENMP_ENABLE_LIBOMPTARGET_PROFILING=OFF \
    -DLIBOMP_STANDALONE="$libomp/lib/libomp.so.5" \
    -DLIBOMP_INCLUDE_DIR="$libomp/lib/clang/19/include" >"$build.log" 2>&1 ||
    { cat "$build.log" >&2; say "configure failed"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target omptarget >>"$build.log" 2>&1 ||
    { tail -50 "$build.log" >&2; say "build failed"; exit 1; }

rm -rf "$out"
mkdir -p "$out/lib"
cp "$build/libomptarget.so.19.1" "$out/lib/"
echo "$key" >"$out/.built"
say "built $out/lib/libomptarget.so.19.1"
