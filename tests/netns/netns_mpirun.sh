#!/bin/sh
# netns_mpirun.sh - the launcher that run_omp.sh calls in the `netns` label
# (`netns_mpirun.sh -n N PROGRAM ARGS...`). It runs omptarget-mpirun, and so
# mpiexec, inside the first namespace (rank 0's), with one namespace per rank
# as a "host", and netns_rsh.sh as the remote shell, which enters the
# namespace that owns an address instead of logging in to another machine.
#
# Open MPI (OTM_NETNS_MPI=openmpi):
#
#   ip netns exec NS0 omptarget-mpirun --mca plm_rsh_agent netns_rsh.sh
#       --mca plm_rsh_no_tree_spawn 1 --mca orte_leave_session_attached 1
#       --mca oob_tcp_if_include IFACE --host HOSTS -n N PROGRAM ARGS...
#
# With HOSTS = A0:S,A1:S,... (S slots a host), mpirun fills the hosts in
# order, runs rank 0 (and the rest of A0's) itself (A0 is one of its own
# addresses) and starts an orted daemon on each other host through
# netns_rsh.sh; no daemon
# starts another (no tree spawn), so every daemon comes from mpirun, in
# rank 0's namespace. netns_rsh.sh gives each daemon a TMPDIR of its own:
# all namespaces share /tmp and the host name, so their session
# directories (/tmp/ompi.HOST.UID/...) would collide (a daemon then fails
# with "mkdir ... File exists"). The daemons stay attached to netns_rsh.sh
# instead of daemonizing (orte_leave_session_attached), so that such an
# error reaches the test's output instead of leaving mpirun waiting. The
# daemons and mpirun talk over IFACE only (oob_tcp_if_include). The MPI
# transport between the ranks is chosen by run_netns.sh (OMPI_MCA_*).
#
# MPICH (OTM_NETNS_MPI=mpich):
#
#   ip netns exec NS0 omptarget-mpirun -launcher rsh
#       -launcher-exec netns_rsh.sh -iface IFACE -hosts HOSTS
#       -n N PROGRAM ARGS...
#
# With HOSTS = A0:S,A1:S,... Hydra fills the hosts in order, S ranks each,
# starts the proxy of A0 itself (a local address) and the others through
# netns_rsh.sh.
# -iface makes Hydra advertise its address on the namespaces' network, so
# that every proxy reaches it over the veths.
#
# Set by run_netns.sh: OTM_NETNS_MPI (openmpi or mpich), OTM_NETNS_NS0
# (rank 0's namespace), OTM_NETNS_HOSTS (the launcher's host list, with
# slots: A0:S,A1:S,...), OTM_NETNS_IFACE (the
# interface name in every namespace), OTM_NETNS_MPIRUN (omptarget-mpirun)
# and OTM_NETNS_HOSTMAP (for netns_rsh.sh).
set -u

for v in OTM_NETNS_MPI OTM_NETNS_NS0 OTM_NETNS_HOSTS OTM_NETNS_IFACE OTM_NETNS_MPIRUN \
         OTM_NETNS_HOSTMAP; do
    eval "val=\${$v:-}"
    [ -n "$val" ] || { echo "netns_mpirun.sh: $v is not set (run through run_netns.sh)" >&2; exit 2; }
done
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd -P) || exit 2
case $OTM_NETNS_MPI in
openmpi)
    exec ip netns exec "$OTM_NETNS_NS0" "$OTM_NETNS_MPIRUN" \
        --mca plm_rsh_agent "$here/netns_rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
        --mca orte_leave_session_attached 1 --mca oob_tcp_if_include "$OTM_NETNS_IFACE" \
        --host "$OTM_NETNS_HOSTS" "$@" ;;
mpich)
    exec ip netns exec "$OTM_NETNS_NS0" "$OTM_NETNS_MPIRUN" \
        -launcher rsh -launcher-exec "$here/netns_rsh.sh" \
        -iface "$OTM_NETNS_IFACE" -hosts "$OTM_NETNS_HOSTS" "$@" ;;
*)
    echo "netns_mpirun.sh: OTM_NETNS_MPI='$OTM_NETNS_MPI': want openmpi or mpich" >&2
    exit 2 ;;
esac
