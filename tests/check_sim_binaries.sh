#!/bin/sh
# Every simulator test must really run on the simulator: it links no MPI
# library, defines the __wrap_MPI_* functions, and has no undefined MPI_*
# symbol left (each would be a call escaping to a real MPI).
status=0
for bin in "$@"; do
    name=$(basename "$bin")
    if ldd "$bin" | grep -qiE 'libmpi|libmpich|libopen-pal'; then
        echo "FAIL $name links an MPI library:"; ldd "$bin" | grep -iE 'mpi'
        status=1
    fi
    if ! nm "$bin" | grep -q ' T __wrap_MPI_Isend$'; then
        echo "FAIL $name does not contain the simulator's wrappers"
        status=1
    fi
    undef=$(nm -u "$bin" | grep -E ' (P?MPI|MPIX)_' || true)
    if [ -n "$undef" ]; then
        echo "FAIL $name has unresolved MPI symbols: $undef"
        status=1
    fi
    [ $status -eq 0 ] && echo "ok   $name: simulator only"
done
[ $# -gt 0 ] || { echo "FAIL no binaries given"; exit 1; }
exit $status
