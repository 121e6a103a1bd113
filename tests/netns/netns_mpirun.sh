#!/bin/sh
# netns_mpirun.sh - the launcher that run_omp.sh calls in the `netns` label
# (`netns_mpirun.sh -n N PROGRAM ARGS...`). It runs omptarget-mpirun, and so
# mpiexec.mpich, inside the first namespace (rank 0's), with one namespace per
# rank as a "host":
#
#   ip netns exec NS0 omptarget-mpirun -launcher rsh
#       -launcher-exec netns_rsh.sh -iface IFACE -hosts A0,A1,...
#       -n N PROGRAM ARGS...
#
# Hydra puts rank K on host AK (one slot per host, in order), starts the
# proxy of A0 itself (a local address) and the others through netns_rsh.sh,
# which enters the namespace that owns the address. -iface makes Hydra
# advertise its address on the namespaces' network, so that every proxy
# reaches it over the veths.
#
# Set by run_netns.sh: OTM_NETNS_NS0 (rank 0's namespace), OTM_NETNS_HOSTS
# (A0,A1,...), OTM_NETNS_IFACE (the interface name in every namespace),
# OTM_NETNS_MPIRUN (omptarget-mpirun) and OTM_NETNS_HOSTMAP (netns_rsh.sh).
set -u

for v in OTM_NETNS_NS0 OTM_NETNS_HOSTS OTM_NETNS_IFACE OTM_NETNS_MPIRUN OTM_NETNS_HOSTMAP; do
    eval "val=\${$v:-}"
    [ -n "$val" ] || { echo "netns_mpirun.sh: $v is not set (run through run_netns.sh)" >&2; exit 2; }
done
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd -P) || exit 2
exec ip netns exec "$OTM_NETNS_NS0" "$OTM_NETNS_MPIRUN" \
    -launcher rsh -launcher-exec "$here/netns_rsh.sh" \
    -iface "$OTM_NETNS_IFACE" -hosts "$OTM_NETNS_HOSTS" "$@"
