#!/bin/sh
# netns_rsh.sh - the "remote shell" of the `netns` label: the launcher runs
# it as `netns_rsh.sh HOST COMMAND...` to start its daemon on HOST: Open
# MPI's mpirun (--mca plm_rsh_agent netns_rsh.sh) its orted, MPICH's Hydra
# (-launcher rsh -launcher-exec netns_rsh.sh) its proxy. Neither passes an
# option before HOST here (Open MPI 4.1 adds none to this agent with
# plm_rsh_args empty); one would be refused as an unknown host. Here a host is an address of one of the
# test's network namespaces, and the command runs inside that namespace
# instead of on another machine.
#
# OTM_NETNS_HOSTMAP (set by run_netns.sh) maps addresses to namespaces:
# "ADDRESS=NAMESPACE ADDRESS=NAMESPACE ...". An address not in the map is an
# error: nothing is ever started outside the test's namespaces.
#
# OTM_NETNS_TMPDIR (set by run_netns.sh, removed by it afterwards): the
# command runs with TMPDIR=$OTM_NETNS_TMPDIR/NAMESPACE, a directory of its
# own, since the namespaces share /tmp and the host name and Open MPI's
# daemons would otherwise make the same session directory there.
#
# Like rsh, the words of COMMAND are joined and run by sh (both launchers
# quote them for a remote shell).
set -u

[ $# -ge 2 ] || { echo "netns_rsh.sh: usage: netns_rsh.sh HOST COMMAND..." >&2; exit 2; }
host=$1
shift

ns=
for pair in ${OTM_NETNS_HOSTMAP:-}; do
    if [ "${pair%%=*}" = "$host" ]; then
        ns=${pair#*=}
        break
    fi
done
if [ -z "$ns" ]; then
    echo "netns_rsh.sh: host '$host' is not an address of the test's namespaces" \
         "(OTM_NETNS_HOSTMAP='${OTM_NETNS_HOSTMAP:-}')" >&2
    exit 255
fi
if [ -n "${OTM_NETNS_TMPDIR:-}" ]; then
    TMPDIR=$OTM_NETNS_TMPDIR/$ns
    mkdir -p "$TMPDIR" || exit 255
    export TMPDIR
fi
exec ip netns exec "$ns" sh -c "$*"
