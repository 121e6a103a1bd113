#!/bin/sh
# check_mpi_free.sh NM BINARY... - the settings' programs are MPI-free: no
# MPI library among their dependencies and no symbol of MPI, of the
# simulator (sim_*, __wrap_MPI_*) or of the core's MPI half (otm_node_*),
# defined or undefined. A match means something pulled in the core or the
# simulator again, which the settings must not need.
set -u
nm=$1
shift
[ $# -gt 0 ] || { echo "FAIL no binaries given"; exit 1; }
status=0
for bin in "$@"; do
    name=$(basename "$bin")
    if ldd "$bin" | grep -qiE 'libmpi|libmpich|libopen-pal'; then
        echo "FAIL $name links an MPI library:"; ldd "$bin" | grep -iE 'mpi'
        status=1
    fi
    syms=$("$nm" "$bin") || { echo "FAIL $nm $bin"; exit 1; }
    bad=$(printf '%s\n' "$syms" |
          grep -E ' (P?MPIX?_|__wrap_MPI_|sim_|otm_node_)' || true)
    if [ -n "$bad" ]; then
        echo "FAIL $name has MPI, simulator or core symbols:"
        printf '%s\n' "$bad" | head -20
        status=1
    else
        echo "ok   $name: MPI-free"
    fi
done
exit $status
