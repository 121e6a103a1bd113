#!/bin/bash
# run_netns.sh - runs one program of the `omp` label with every MPI rank in
# its own Linux network namespace, so that the data between the host (rank 0)
# and its devices crosses a network stack (veth pairs and a bridge) instead
# of shared memory, and proves it from the interfaces' byte counters.
#
# usage: run_netns.sh [--mpi openmpi|mpich] [--ranks N] [--hosts H] [--min-bytes B]
#                     [--shm-control] [--timeout S] [--env NAME=VALUE]...
#                     [--expect-fail REGEX [--expect-status N]]
#                     RUN_OMP MPIRUN PLUGIN_DIR PROGRAM [ARGS...]
#
#   --mpi        the MPI the plugin (and so MPIRUN) was built for (CMake's
#                OTM_MPI; default mpich): it selects how the ranks are
#                launched into the namespaces and forced onto TCP.
#   --hosts H    H namespaces ("hosts", H divides N), N / H ranks in each,
#                in order (rank 0 and the next ones on the first); default
#                N, one rank each. Ranks of one host talk as MPI lets ranks
#                of one machine talk (the transport settings below), those
#                of two hosts over the veths.
#   RUN_OMP      tests/omp/run_omp.sh, which runs the program and checks it
#                (PASS line, clean exit of every rank, no process left);
#                --ranks, --timeout, --env, --expect-fail and --expect-status
#                are passed on to it.
#   MPIRUN       omptarget-mpirun.
#   --min-bytes  the bytes the program moves between its ranks at least
#                (what it maps to and from its devices, read from its
#                source); the run fails unless the veths of the rank
#                namespaces sent at least that many bytes in all.
#   --shm-control  the control of that check: MPI is left free to use shared
#                memory (none of the transport settings below), and the run
#                passes only if the program passes and FEWER than B bytes
#                crossed the veths, i.e. the counters tell data sent through
#                shared memory from data sent over the network. (MPICH
#                keeps one rank per namespace and uses shared memory across
#                them; Open MPI only uses it between ranks of one host, so
#                its control runs every rank in rank 0's namespace.)
#
# The network, made for this run only and named after its pid P:
#   otmnetns<P>-br    a namespace holding the bridge br0 and the veth ends
#                     v0..v<N-1> (nothing is added to the root namespace);
#   otmnetns<P>-r<K>  host K's namespace (rank K's with one rank per host):
#                     lo and otm0 (the peer of vK) with address
#                     10.213.47.<K+1>/24. No route leads anywhere else, so
#                     no packet can leave the namespaces.
# netns_mpirun.sh runs mpiexec inside otmnetns<P>-r0 with the rank addresses
# as hosts and netns_rsh.sh as its remote shell, which starts each daemon
# (Open MPI's orted, MPICH's Hydra proxy), and so each rank, in the
# namespace owning its address; the daemons connect back to mpiexec over
# otm0.
#
# Open MPI: MPI is forced onto its TCP transport over otm0:
#   OMPI_MCA_pml=ob1       the point-to-point layer over BTLs (not UCX)
#   OMPI_MCA_btl=tcp,self  no shared-memory BTL (vader); self only moves a
#                          rank's messages to itself
#   OMPI_MCA_btl_tcp_if_include=otm0  TCP on the veth only, not on lo
#
# MPICH (ch4:ucx): MPI is forced onto TCP over otm0:
#   UCX_TLS=self,tcp       no UCX shared-memory transport (posix, sysv, cma)
#   UCX_NET_DEVICES=otm0   TCP on the veth only, not on lo (also set for the
#                          control)
#   MPIR_CVAR_NOLOCAL=1    MPICH treats every other rank as remote, so its
#                          own shared-memory module is not used either
# The namespaces still share /dev/shm; the settings above keep MPI off it,
# and the byte counters show that the data went over the veths.
#
# Known problem, MPICH only: with MPICH 4.0.2 and UCX 1.13 over TCP,
# MPI_Finalize can hang: each endpoint's flush on close waits for an
# acknowledgement from the peer, and MPICH 4.0.2 closes its endpoints before
# its PMI barrier, so a rank (in practice rank 0, which closes last) can
# wait for a peer that has already closed its own and no longer makes
# progress. run_omp.sh then reports a time-out with the program's PASS line
# present and the "rank K exited cleanly" lines missing. Hence
# tests/netns/CMakeLists.txt disables the TCP tests of an MPICH tree unless
# -DOTM_NETNS=ON.
#
# Teardown: an EXIT trap (also run on INT and TERM) kills what is left in
# the run's namespaces and deletes them, which removes the veths and the
# bridge. A run killed with SIGKILL cannot clean up; the next run deletes
# the namespaces otmnetns<P>-* of runs whose process P no longer exists.
#
# Exit status: that of run_omp.sh, 1 if the byte check fails, 77 (SKIPPED,
# with the reason on stdout) when the namespaces cannot be made here: not
# root, no `ip netns`, or the kernel refuses a namespace, veth or bridge.
set -u

me=run_netns.sh
SKIP=77
prefix=otmnetns
iface=otm0
subnet=10.213.47

mpi=mpich
ranks=3
nhosts=
min_bytes=
control=0
omp_opts=()

usage() {
    sed -n '7,9p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

while [ $# -gt 0 ]; do
    case $1 in
    --mpi) [ $# -ge 2 ] || usage; mpi=$2; shift 2 ;;
    --ranks) [ $# -ge 2 ] || usage; ranks=$2; shift 2 ;;
    --hosts) [ $# -ge 2 ] || usage; nhosts=$2; shift 2 ;;
    --min-bytes) [ $# -ge 2 ] || usage; min_bytes=$2; shift 2 ;;
    --shm-control) control=1; shift ;;
    --timeout | --env | --expect-fail | --expect-status)
        [ $# -ge 2 ] || usage; omp_opts+=("$1" "$2"); shift 2 ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
    esac
done
[ $# -ge 4 ] || usage
case $mpi in
openmpi | mpich) ;;
*) echo "$me: --mpi wants openmpi or mpich, got '$mpi'" >&2; exit 2 ;;
esac
case $ranks in '' | *[!0-9]*) echo "$me: --ranks wants a number" >&2; exit 2 ;; esac
[ "$ranks" -ge 2 ] && [ "$ranks" -le 200 ] || { echo "$me: --ranks must be in 2..200" >&2; exit 2; }
nhosts=${nhosts:-$ranks}
case $nhosts in '' | *[!0-9]*) echo "$me: --hosts wants a number" >&2; exit 2 ;; esac
[ "$nhosts" -ge 2 ] && [ $((ranks % nhosts)) -eq 0 ] ||
    { echo "$me: --hosts must be at least 2 and divide --ranks ($ranks)" >&2; exit 2; }
per_host=$((ranks / nhosts))
case $min_bytes in
'' | *[!0-9]*) echo "$me: --min-bytes wants a positive number of bytes" >&2; exit 2 ;;
esac
[ "$min_bytes" -gt 0 ] || { echo "$me: --min-bytes must be positive" >&2; exit 2; }
run_omp=$1
mpirun=$2
shift 2
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd -P) || exit 2

skip() {
    echo "$me: SKIPPED: $*"
    exit "$SKIP"
}

# ---- preconditions -------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces (uid $(id -u))"
command -v ip >/dev/null 2>&1 || skip "no 'ip' command (Debian package iproute2)"
ip netns list >/dev/null 2>&1 || skip "'ip netns' does not work here"

# ---- leftovers of runs that were killed before they could clean up ----------
# Only namespaces of this prefix whose owner process is gone: a live run's
# namespaces are never touched.
delete_ns() {
    local ns=$1 pids
    pids=$(ip netns pids "$ns" 2>/dev/null)
    # shellcheck disable=SC2086
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
}
for ns in $(ip netns list | awk '{print $1}'); do
    case $ns in
    "$prefix"[0-9]*-*)
        owner=${ns#"$prefix"}
        owner=${owner%%-*}
        if ! kill -0 "$owner" 2>/dev/null; then
            echo "$me: deleting namespace $ns left by run $owner, which is gone"
            delete_ns "$ns"
        fi ;;
    esac
done

# ---- the network of this run ---------------------------------------------------
run=$prefix$$
br_ns=$run-br
rank_ns=()          # one per host
for ((k = 0; k < nhosts; k++)); do
    rank_ns+=("$run-r$k")
done
created=()

teardown() {
    local ns left=
    for ns in "${created[@]}"; do
        delete_ns "$ns"
    done
    for ns in "${created[@]}"; do
        if ip netns list | awk '{print $1}' | grep -qx -- "$ns"; then
            left="$left $ns"
        fi
    done
    if [ -n "$left" ]; then
        echo "$me: could not delete namespaces:$left" >&2
        return 1
    fi
    return 0
}
# TMPDIRs of the launcher's daemons (see netns_rsh.sh), removed on exit.
daemon_tmp=
omp_pid=
on_exit() {
    local status=$?
    trap - EXIT INT TERM
    # Interrupted while the program ran: stop the driver (the ranks die
    # with their namespaces).
    [ -n "$omp_pid" ] && kill "$omp_pid" 2>/dev/null
    if ! teardown && { [ "$status" -eq 0 ] || [ "$status" -eq "$SKIP" ]; }; then
        status=1
    fi
    # After teardown, which killed every process that could still use it.
    [ -n "$daemon_tmp" ] && rm -rf "$daemon_tmp"
    exit "$status"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

add_ns() {
    ip netns add "$1" 2>/dev/null || return 1
    created+=("$1")
}

setup_network() {
    add_ns "$br_ns" || { echo "cannot create namespace $br_ns"; return 1; }
    ip -n "$br_ns" link set lo up &&
    ip -n "$br_ns" link add br0 type bridge &&
    ip -n "$br_ns" link set br0 up || { echo "cannot create a bridge in $br_ns"; return 1; }
    for ((k = 0; k < nhosts; k++)); do
        local ns=${rank_ns[k]}
        add_ns "$ns" || { echo "cannot create namespace $ns"; return 1; }
        # Both ends are made inside the namespaces: the root namespace never
        # holds either of them.
        ip -n "$br_ns" link add "v$k" type veth peer name "$iface" netns "$ns" &&
        ip -n "$br_ns" link set "v$k" master br0 &&
        ip -n "$br_ns" link set "v$k" up &&
        ip -n "$ns" addr add "$subnet.$((k + 1))/24" dev "$iface" &&
        ip -n "$ns" link set "$iface" up &&
        ip -n "$ns" link set lo up || { echo "cannot connect $ns to the bridge"; return 1; }
    done
}
why=$(setup_network 2>&1)
ok=$?
# setup_network ran in a subshell: record what it created, for teardown.
for ns in "$br_ns" "${rank_ns[@]}"; do
    ip netns list | awk '{print $1}' | grep -qx -- "$ns" && created+=("$ns")
done
[ "$ok" -eq 0 ] || skip "network namespaces unavailable: ${why:-setup failed}"

# The launcher's hosts: host K on address K+1 with N / H slots, filled in
# order. Open MPI never uses shared memory between ranks it places on
# different hosts, so its control puts every rank on rank 0's host (N
# slots there).
hosts=
hostmap=
for ((k = 0; k < nhosts; k++)); do
    host=$subnet.$((k + 1)):$per_host
    hosts="$hosts${hosts:+,}$host"
    hostmap="$hostmap${hostmap:+ }$subnet.$((k + 1))=${rank_ns[k]}"
done
[ "$mpi" = openmpi ] && [ "$control" -eq 1 ] && hosts=$subnet.1:$ranks

# ---- byte counters -------------------------------------------------------------
# counter K rx|tx: bytes received or sent by otm0 in rank K's namespace.
counter() {
    ip netns exec "${rank_ns[$1]}" cat "/sys/class/net/$iface/statistics/$2_bytes"
}
snapshot() {
    local k
    for ((k = 0; k < nhosts; k++)); do
        echo "$(counter "$k" rx) $(counter "$k" tx)"
    done
}

# ---- the run ---------------------------------------------------------------------
export OTM_NETNS_MPI=$mpi OTM_NETNS_NS0=${rank_ns[0]} OTM_NETNS_HOSTS=$hosts
export OTM_NETNS_IFACE=$iface OTM_NETNS_MPIRUN=$mpirun OTM_NETNS_HOSTMAP=$hostmap
daemon_tmp=$(mktemp -d "${TMPDIR:-/tmp}/$run.XXXXXX") || exit 1
export OTM_NETNS_TMPDIR=$daemon_tmp
unset UCX_TLS UCX_NET_DEVICES MPIR_CVAR_NOLOCAL OMPI_MCA_pml OMPI_MCA_btl \
      OMPI_MCA_btl_tcp_if_include
if [ "$mpi" = openmpi ]; then
    [ "$control" -eq 1 ] ||
        export OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=$iface
    transport="OMPI_MCA_pml=${OMPI_MCA_pml-(default)} OMPI_MCA_btl=${OMPI_MCA_btl-(default)}"
    transport="$transport OMPI_MCA_btl_tcp_if_include=${OMPI_MCA_btl_tcp_if_include-(default)}"
else
    export UCX_NET_DEVICES=$iface
    [ "$control" -eq 1 ] || export UCX_TLS=self,tcp MPIR_CVAR_NOLOCAL=1
    transport="UCX_TLS=${UCX_TLS-(default)} UCX_NET_DEVICES=$UCX_NET_DEVICES"
    transport="$transport MPIR_CVAR_NOLOCAL=${MPIR_CVAR_NOLOCAL-(default)}"
fi

echo "$me: $mpi, $ranks ranks, $per_host a host, in namespaces ${rank_ns[*]} (bridge in $br_ns), hosts $hosts on $iface"
echo "$me: $transport"

mapfile -t before < <(snapshot)
# In the background, so that INT and TERM reach the trap at once.
sh "$run_omp" --ranks "$ranks" "${omp_opts[@]}" "$here/netns_mpirun.sh" "$@" &
omp_pid=$!
wait "$omp_pid"
status=$?
omp_pid=
mapfile -t after < <(snapshot)

total=0
for ((k = 0; k < nhosts; k++)); do
    read -r rx0 tx0 <<<"${before[k]}"
    read -r rx1 tx1 <<<"${after[k]}"
    echo "$me: host $k ${rank_ns[k]} $iface: sent $((tx1 - tx0)) bytes, received $((rx1 - rx0)) bytes"
    total=$((total + tx1 - tx0))
done
echo "$me: $total bytes crossed the veths in all (the program moves at least $min_bytes between its ranks)"

[ "$status" -eq 0 ] || exit "$status"
if [ "$control" -eq 1 ]; then
    if [ "$total" -ge "$min_bytes" ]; then
        echo "$me: FAILED: with shared memory allowed, $total bytes still crossed the" \
             "veths (at least $min_bytes): the counters cannot tell the two apart"
        exit 1
    fi
    echo "$me: passed (shared memory allowed: fewer than $min_bytes bytes crossed the veths)"
    exit 0
fi
if [ "$total" -lt "$min_bytes" ]; then
    echo "$me: FAILED: only $total bytes crossed the veths, fewer than the $min_bytes" \
         "the program moves between its ranks: the data did not go over the network"
    exit 1
fi
echo "$me: passed"
exit 0
