#!/bin/sh
# check_downstream.sh CMAKE CC PREFIX WORK RUN_OMP - configures and builds
# tests/install/downstream (a project using find_package(omptarget-mpi)) in
# WORK against the install PREFIX (made by the install_tree test) with the C
# compiler CC, then runs its program through the launcher the package
# names (OMPTARGET_MPI_LAUNCHER) with RUN_OMP (tests/omp/run_omp.sh).
set -u
[ $# -eq 5 ] || { echo "usage: $0 CMAKE CC PREFIX WORK RUN_OMP" >&2; exit 2; }
cmake=$1 cc=$2 prefix=$3 work=$4 run_omp=$5
src=$(CDPATH='' cd -- "$(dirname -- "$0")/downstream" && pwd -P) || exit 2
rm -rf "$work"
"$cmake" -S "$src" -B "$work" -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" \
    >"$work.log" 2>&1 && "$cmake" --build "$work" >>"$work.log" 2>&1 ||
    { echo "not ok - configure and build of the downstream project"; cat "$work.log"; exit 1; }
echo "ok - the downstream project found omptarget-mpi $(sed -n 4p "$work/found.txt") and built"
launcher=$(sed -n 1p "$work/found.txt") plugin_dir=$(sed -n 2p "$work/found.txt")
case $launcher in
"$(cd "$prefix" && pwd -P)"/*) echo "ok - its launcher is the install prefix's: $launcher" ;;
*) echo "not ok - the launcher $launcher is not under $prefix"; exit 1 ;;
esac
sh "$run_omp" "$launcher" "$plugin_dir" "$work/app" || { echo "not ok - app through $launcher"; exit 1; }
echo "ok - app ran on 3 ranks through the found launcher"
