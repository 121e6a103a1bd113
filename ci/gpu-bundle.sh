#!/bin/sh
# ci/gpu-bundle.sh - packs the GPU check into one archive, for a machine
# with an NVIDIA GPU and no network (docs/gpu-check.md): unpack it there
# and run its gpu-check.sh.
#
# usage: ci/gpu-bundle.sh [--build-dir D] [--openmpi-dir D2|none] [--out FILE]
#                         [--no-build]
#
#   --build-dir D     a configured and built tree (default: build): its
#                     plugin and launcher, for the MPI it was built for
#                     (the launcher's mpi_flavour=), and its tests/gpu
#                     programs (target otm_gpu_programs, built first)
#   --openmpi-dir D2  a built tree for the other MPI (default: build-openmpi
#                     when it exists and D is MPICH's); 'none': D's MPI only.
#                     The GPU machine then runs whichever MPI it has.
#   --out FILE        the archive (default: D/gpu-bundle/omptarget-mpi-gpu.tar.gz)
#   --no-build        take D's programs as they are (fail if one is missing)
#
# Relative paths are taken from the current directory; the defaults build
# and build-openmpi from the source tree's root.
#
# The archive, omptarget-mpi-gpu/ unpacked:
#   gpu-check.sh, README.md (docs/gpu-check.md), MANIFEST (what is in it)
#   mpich/, openmpi/  each tree installed (cmake --install --prefix): the
#                     launcher bin/omptarget-mpirun and the plugin
#   llvm-16/lib/      libomp 16's runtime: libomp, libomptarget.so.16, its
#                     CUDA and x86_64 plugins (plain and nextgen), which a
#                     device rank opens from beside libomptarget
#   llvm-16/deps/     the shared libraries those and the plugin need,
#                     beyond the C library and the MPI (libLLVM-16, libffi,
#                     libelf, ICU...): gpu-check.sh uses each one only where
#                     the machine lacks it or has an older one
#   programs/         sm_80/, sm_90/ (x86_64 and a cubin), jit_sm_70/,
#                     jit_sm_80/, jit_sm_90/ (nvptx64 LLVM IR): gpu_matmul
#                     and gpu_nowait (tests/gpu), run path
#                     $ORIGIN/../../llvm-16/lib; gpu_probe
#
# Needs clang-16, libomp 16 unpacked (OTM_LLVM16_DIR; ci/setup.sh) and the
# CUDA toolkit (OTM_CUDA_PATH, default /usr/local/cuda), as tree D found
# them at its configuration: a missing one is one line, status 1.
set -eu
start=$(pwd)
cd "$(dirname "$0")/.."
root=$(pwd)
me='gpu-bundle.sh'
# from_start PATH: PATH as the caller meant it, from the current directory.
from_start() {
    case $1 in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s\n' "$start/$1" ;;
    esac
}

build_dir=$root/build
openmpi_dir=
out=
build=1
while [ $# -gt 0 ]; do
    case $1 in
    --build-dir) [ $# -ge 2 ] || { echo "$me: --build-dir needs a directory" >&2; exit 2; }
        build_dir=$(from_start "$2"); shift 2 ;;
    --openmpi-dir) [ $# -ge 2 ] || { echo "$me: --openmpi-dir needs a directory or none" >&2; exit 2; }
        openmpi_dir=none
        [ "$2" = none ] || openmpi_dir=$(from_start "$2")
        shift 2 ;;
    --out) [ $# -ge 2 ] || { echo "$me: --out needs a file" >&2; exit 2; }
        out=$(from_start "$2"); shift 2 ;;
    --no-build) build=0; shift ;;
    -h | --help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "$me: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done

die() {
    echo "$me: $*" >&2
    exit 1
}

[ -f "$build_dir/CMakeCache.txt" ] || die "$build_dir is not a configured build tree (cmake -S . -B $build_dir)"
build_dir=$(cd "$build_dir" && pwd)
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt" | head -n 1; }

# What the programs are built with, as the tree found it.
clang16=$(cache OTM_CLANG16)
case $clang16 in '' | *-NOTFOUND) clang16=$(command -v clang-16 || true) ;; esac
if [ -z "$clang16" ] || [ ! -x "$clang16" ]; then
    die "clang-16 not found (Debian packages clang-16 clang-tools-16: ci/setup.sh)"
fi
llvm16_dir=$(cache OTM_LLVM16_DIR)
llvm16_dir=${llvm16_dir:-${OTM_LLVM16_DIR:-$root/.deps/llvm-16}}
llvm16=$llvm16_dir/usr/lib/llvm-16/lib
[ -f "$llvm16/libomptarget.so.16" ] || die "libomp 16 not found: no $llvm16/libomptarget.so.16 (ci/setup.sh unpacks libomp-16-dev and libomp5-16 there; OTM_LLVM16_DIR)"
cuda=$(cache OTM_CUDA_PATH)
cuda=${cuda:-${OTM_CUDA_PATH:-/usr/local/cuda}}
for f in bin/ptxas bin/nvlink; do
    [ -x "$cuda/$f" ] || die "the CUDA toolkit not found: no $cuda/$f (OTM_CUDA_PATH)"
done

# Each tree's MPI, as its launcher says; two trees must be of two MPIs.
flavour_of() {
    [ -f "$1/bin/omptarget-mpirun" ] || die "$1/bin/omptarget-mpirun is missing: build $1 first"
    [ -f "$1/lib/libomptarget.rtl.mpi.so" ] || die "$1/lib/libomptarget.rtl.mpi.so is missing: build $1 first"
    grep -q OMPTARGET_MPI_REMOTE_PLUGINS "$1/lib/libomptarget.rtl.mpi.so" ||
        die "$1's plugin predates OMPTARGET_MPI_REMOTE_PLUGINS (it serves no GPU): build $1 again"
    sed -n 's/^mpi_flavour=//p' "$1/bin/omptarget-mpirun"
}
flavour=$(flavour_of "$build_dir")
trees="$build_dir"
if [ -z "$openmpi_dir" ] && [ "$flavour" != openmpi ] && [ -f "$root/build-openmpi/bin/omptarget-mpirun" ]; then
    openmpi_dir=$root/build-openmpi
fi
if [ -n "$openmpi_dir" ] && [ "$openmpi_dir" != none ]; then
    [ -d "$openmpi_dir" ] || die "--openmpi-dir $openmpi_dir: no such directory"
    openmpi_dir=$(cd "$openmpi_dir" && pwd)
    [ "$(flavour_of "$openmpi_dir")" = openmpi ] || die "$openmpi_dir is not built for Open MPI (OTM_MPI=openmpi)"
    [ "$flavour" != openmpi ] || die "$build_dir and $openmpi_dir are both built for Open MPI"
    trees="$trees $openmpi_dir"
fi

gpu=$build_dir/tests/gpu
if [ "$build" -eq 1 ]; then
    echo "bundle: building the programs (target otm_gpu_programs) in $build_dir"
    cmake --build "$build_dir" --target otm_gpu_programs >/dev/null ||
        die "cannot build target otm_gpu_programs in $build_dir (its configure output names what tests/gpu lacks)"
fi
for v in sm_80 sm_90 jit_sm_70 jit_sm_80 jit_sm_90; do
    for p in gpu_matmul gpu_nowait; do
        [ -x "$gpu/$v/$p" ] || die "$gpu/$v/$p is missing: build target otm_gpu_programs (tests/gpu; its configure output says what it lacks)"
    done
done
[ -x "$gpu/gpu_probe" ] || die "$gpu/gpu_probe is missing: build target gpu_probe"

[ -n "$out" ] || out=$build_dir/gpu-bundle/omptarget-mpi-gpu.tar.gz
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
stage=$(mktemp -d "${TMPDIR:-/tmp}/otm-gpu-bundle.XXXXXX")
trap 'rm -rf "$stage"' EXIT
b=$stage/omptarget-mpi-gpu
mkdir -p "$b/llvm-16/lib" "$b/llvm-16/deps" "$b/programs"

# ---- the plugin and launcher, a prefix per MPI ----
for t in $trees; do
    f=$(flavour_of "$t")
    cmake --install "$t" --prefix "$b/$f" >"$stage/install-$f.log" 2>&1 ||
        { cat "$stage/install-$f.log" >&2; die "cmake --install $t failed"; }
    # libomptarget 19 with the plugin inside (ci/llvm19.sh): not for these
    # programs, which libomptarget 16 runs (19's plugins cannot be proxied).
    rm -f "$b/$f"/lib/omptarget-mpi/libomptarget.so.19*
    echo "bundle: $f: $t installed into $f/"
done

# ---- libomp 16's runtime: the files and the names libomptarget opens ----
for f in libomp.so libomp.so.5 libomptarget.so libomptarget.so.16 \
         libomptarget.rtl.cuda.so libomptarget.rtl.cuda.so.16 \
         libomptarget.rtl.cuda.nextgen.so libomptarget.rtl.cuda.nextgen.so.16 \
         libomptarget.rtl.x86_64.so libomptarget.rtl.x86_64.so.16 \
         libomptarget.rtl.x86_64.nextgen.so libomptarget.rtl.x86_64.nextgen.so.16; do
    [ -e "$llvm16/$f" ] || die "libomp 16 lacks $llvm16/$f"
    cp -P "$llvm16/$f" "$b/llvm-16/lib/"
done

# ---- the programs ----
for v in sm_80 sm_90 jit_sm_70 jit_sm_80 jit_sm_90; do
    mkdir -p "$b/programs/$v"
    cp "$gpu/$v/gpu_matmul" "$gpu/$v/gpu_nowait" "$b/programs/$v/"
done
cp "$gpu/gpu_probe" "$b/programs/"
cp ci/gpu-check.sh "$b/gpu-check.sh"
chmod +x "$b/gpu-check.sh"
cp docs/gpu-check.md "$b/README.md"

# ---- the libraries they need ----
# Every ELF file of the bundle, then what ldd resolves for each: kept but
# for the C library (the machine's own, always) and the MPI the plugin
# links with its own dependencies (the machine's MPI), and what the bundle
# holds itself.
elfs=$(find "$b" -type f | while read -r f; do
    if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then printf '%s\n' "$f"; fi
done)
mpi_libs=
for t in $trees; do
    plugin=$t/lib/libomptarget.rtl.mpi.so
    for m in $(readelf -d "$plugin" | sed -n 's/.*(NEEDED).*\[\(libmpi[^]]*\)\].*/\1/p'); do
        path=$(ldd "$plugin" | awk -v m="$m" '$1 == m { print $3 }')
        [ -n "$path" ] || die "the plugin's $m does not resolve here (ldd $plugin)"
        mpi_libs="$mpi_libs $m $(ldd "$path" | awk '$2 == "=>" { print $1 }')"
    done
done
skip() {
    case $1 in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | \
    librt.so.* | libresolv.so.* | libutil.so.* | libanl.so.* | libcuda.so.*) return 0 ;;
    esac
    for m in $mpi_libs; do [ "$m" != "$1" ] || return 0; done
    [ -e "$b/llvm-16/lib/$1" ] && return 0
    return 1
}
# shellcheck disable=SC2086
deps=$(for f in $elfs; do
    LD_LIBRARY_PATH=$b/llvm-16/lib ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u)
printf '%s\n' "$deps" | while read -r name path; do
    [ -n "$name" ] || continue
    skip "$name" && continue
    case $path in "$b"/*) continue ;; esac
    cp -L "$path" "$b/llvm-16/deps/$name"
done
# Each one resolves within the bundle (and the MPI).
missing=$(for f in $elfs "$b"/llvm-16/deps/*; do
    LD_LIBRARY_PATH=$b/llvm-16/lib:$b/llvm-16/deps ldd "$f" 2>/dev/null |
        awk -v f="${f#"$b"/}" '/not found/ { print f ": " $1 }'
done | sort -u)
[ -z "$missing" ] || die "libraries that do not resolve in the bundle: $missing"

# ---- what it holds ----
{
    echo "omptarget-mpi GPU check bundle"
    echo "built: $(date -u +%Y-%m-%dT%H:%MZ) from $(git describe --always --dirty 2>/dev/null || echo 'a source tree')"
    for t in $trees; do echo "mpi: $(flavour_of "$t")/ ($(basename "$t"))"; done
    echo "libomp: $(ls "$llvm16_dir"/.unpacked >/dev/null 2>&1 && tr '\n' ' ' <"$llvm16_dir/.unpacked" || echo 16)"
    echo "clang: $("$clang16" --version | head -n 1)"
    echo "cuda: $("$cuda/bin/ptxas" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') (ptxas, nvlink) for the cubins"
    "$b/programs/gpu_probe" images "$b"/programs/*/gpu_* | sed "s|$b/||; s/^/image: /"
    for f in "$b"/llvm-16/deps/*; do echo "dep: ${f##*/}"; done
} >"$b/MANIFEST"

names() { for f in "$@"; do printf '%s ' "${f##*/}"; done; }
echo "bundle: programs $(names "$b"/programs/*)"
echo "bundle: libraries in llvm-16/deps: $(names "$b"/llvm-16/deps/*)"
tar -C "$stage" --owner=0 --group=0 --numeric-owner -czf "$out.partial" omptarget-mpi-gpu
mv "$out.partial" "$out"
echo "bundle: $out ($(du -h "$out" | cut -f1), $(du -sh "$b" | cut -f1) unpacked)"
