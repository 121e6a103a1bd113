#!/bin/sh
# check_install.sh CMAKE BUILD_DIR PREFIX NM CHECK_EXPORTS EXPECTED - installs
# the build tree with `cmake --install BUILD_DIR --prefix PREFIX` (PREFIX is
# emptied first) and checks the installed layout:
#   - PREFIX/lib/libomptarget.rtl.mpi.so is a regular file exporting exactly
#     the expected __tgt_rtl_* (CHECK_EXPORTS with EXPECTED),
#   - PREFIX/lib/omptarget-mpi/ holds both names libomptarget looks up,
#     libomptarget.rtl.x86_64.so (LLVM 14, 16) and
#     libomptarget.rtl.x86_64.nextgen.so (LLVM 16, tried first), each a
#     symlink that resolves to that plugin,
#   - PREFIX/lib/omptarget-mpi/libomptarget.so.19.1 is a file when the
#     build tree has that runtime (ci/llvm19.sh),
#   - PREFIX/bin/omptarget-mpirun --dry-run -n 2 ./app puts the installed
#     alias directory first in LD_LIBRARY_PATH, not the build tree's, and
#     preloads the installed program's MPI layer from it,
#   - the CMake package (lib/cmake/omptarget-mpi/, used by
#     check_downstream.sh) is installed.
# Prints one TAP line per check; exits 1 if any failed.
set -u
[ $# -eq 6 ] || { echo "usage: $0 CMAKE BUILD_DIR PREFIX NM CHECK_EXPORTS EXPECTED" >&2; exit 2; }
cmake=$1 build=$2 prefix=$3 nm=$4 check_exports=$5 expected=$6
unset LIBOMP_NUM_HIDDEN_HELPER_THREADS     # the launcher's default is checked
n=0 failures=0
check() {
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        failures=$((failures + 1))
    fi
}

rm -rf "$prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$prefix.log" 2>&1
rc=$?
check $rc "cmake --install $build --prefix $prefix"
[ $rc -eq 0 ] || { cat "$prefix.log"; exit 1; }
prefix=$(cd "$prefix" && pwd -P)

plugin=$prefix/lib/libomptarget.rtl.mpi.so
[ -f "$plugin" ] && [ ! -L "$plugin" ]
check $? "the plugin is installed as a file: lib/libomptarget.rtl.mpi.so"
out=$(sh "$check_exports" "$nm" "$plugin" "" "$expected" 2>&1)
rc=$?
check $rc "the installed plugin exports exactly the expected __tgt_rtl_* ($(grep -c . "$expected") functions)"
[ $rc -eq 0 ] || printf '%s\n' "$out" | sed 's/^/    /'

for alias in libomptarget.rtl.x86_64.so libomptarget.rtl.x86_64.nextgen.so; do
    link=$prefix/lib/omptarget-mpi/$alias
    [ -L "$link" ] && [ "$(readlink -f "$link")" = "$plugin" ]
    check $? "lib/omptarget-mpi/$alias is a link resolving to the installed plugin ($(readlink "$link" 2>/dev/null))"
done

# libomptarget 19 with our plugin inside, when the build tree has it: a
# copy in the install tree, not the build tree's link into .deps/.
if [ -e "$build/lib/omptarget-mpi/libomptarget.so.19.1" ]; then
    rt=$prefix/lib/omptarget-mpi/libomptarget.so.19.1
    [ -f "$rt" ] && [ ! -L "$rt" ]
    check $? "lib/omptarget-mpi/libomptarget.so.19.1 is installed as a file"
fi

# Its stderr apart from stdout (the test's own): were they one file, it
# would also print OMPTARGET_MPI_STDERR_TO_STDOUT=1.
dry=$(OMPTARGET_MPI_PLUGIN_DIR='' LD_LIBRARY_PATH='' "$prefix/bin/omptarget-mpirun" --dry-run -n 2 ./app)
check $? "the installed omptarget-mpirun --dry-run -n 2 ./app succeeds"
first=$(printf '%s\n' "$dry" | sed -n '1s/^LD_LIBRARY_PATH=//p')
[ "$first" = "$prefix/lib/omptarget-mpi:$prefix/lib/omptarget-mpi/gpu-off" ]
check $? "its LD_LIBRARY_PATH is the installed alias directory, then its gpu-off/ ($first)"
[ "$(readlink "$prefix/lib/omptarget-mpi/gpu-off/libomptarget.rtl.cuda.so")" = \
  ../libomptarget-mpi-none.so ] && [ -f "$prefix/lib/omptarget-mpi/libomptarget-mpi-none.so" ]
check $? "gpu-off/ masks the CUDA plugin with the installed library that is no plugin"
preload=$(printf '%s\n' "$dry" | sed -n '2s/^LD_PRELOAD=//p')
[ "$preload" = "$prefix/lib/omptarget-mpi/libomptarget-mpi-pmpi.so" ] && [ -f "$preload" ]
check $? "its LD_PRELOAD is the installed program's MPI layer ($preload)"
printf '%s\n' "$dry" | sed -n '3p' | grep -q -x 'LIBOMP_NUM_HIDDEN_HELPER_THREADS=16'
check $? "it sets libomp's hidden helper threads ($(printf '%s\n' "$dry" | sed -n '3p'))"
printf '%s\n' "$dry" | sed -n '4p' | grep -q -- ' -n 2 \./app$'
check $? "its command ends with '-n 2 ./app' ($(printf '%s\n' "$dry" | sed -n '4p'))"
case $dry in
*"$(cd "$build" && pwd -P)/lib/omptarget-mpi"*) false ;;
*) true ;;
esac
check $? "the dry run does not name the build tree's plugin directory"

for f in omptarget-mpiConfig.cmake omptarget-mpiConfigVersion.cmake; do
    [ -f "$prefix/lib/cmake/omptarget-mpi/$f" ]
    check $? "the CMake package file lib/cmake/omptarget-mpi/$f is installed"
done

echo "# $n checks, $failures failed"
[ "$failures" -eq 0 ]
