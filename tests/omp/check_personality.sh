#!/bin/sh
# check_personality.sh LAUNCHER - every rank the launcher starts keeps the
# kernel's address randomisation: no rank's personality has
# ADDR_NO_RANDOMIZE (0x0040000), read from /proc/self/personality by each
# rank (cat, three ranks). Under OMPTARGET_MPI_USM=on the device ranks
# start through omptarget-mpi-layout: the legacy layout
# (ADDR_COMPAT_LAYOUT, 0x0200000) on exactly two ranks, still randomised.
set -u
launcher=$1
# Open MPI's mpiexec: as root, 3 ranks on 2 cores (MPICH ignores these).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
fail() { echo "check_personality: $*" >&2; exit 1; }

# $1: what the ranks printed. Prints how many have bit $2 set; fails
# unless there are three.
count_bit() {
    [ "$(printf '%s\n' "$1" | grep -c .)" -eq 3 ] || return 1
    n=0
    for v in $1; do
        [ $((0x$v & $2)) -eq 0 ] || n=$((n + 1))
    done
    echo "$n"
}
out=$("$launcher" -n 3 cat /proc/self/personality) || fail "the job failed: $out"
n=$(count_bit "$out" 0x0040000) || fail "not three personalities: $out"
[ "$n" -eq 0 ] || fail "$n of 3 ranks run without address randomisation: $out"
out=$(OMPTARGET_MPI_USM=on "$launcher" -n 3 cat /proc/self/personality) ||
    fail "the job under OMPTARGET_MPI_USM=on failed: $out"
n=$(count_bit "$out" 0x0040000) || fail "not three personalities: $out"
[ "$n" -eq 0 ] || fail "OMPTARGET_MPI_USM=on: $n of 3 ranks without randomisation: $out"
n=$(count_bit "$out" 0x0200000)
[ "$n" -eq 2 ] || fail "OMPTARGET_MPI_USM=on: $n ranks in the legacy layout, not 2: $out"
echo "check_personality: every rank randomised (3 of 3, twice); the device ranks of a" \
     "unified-memory job in the legacy layout (2 of 3)"
