#!/bin/bash
# run_slurm.sh - the `slurm` label: starts a one-node Slurm cluster of its
# own (munged, slurmctld, slurmd), runs programs of the `omp` label through
# it, and stops and removes the cluster again.
#
# usage: run_slurm.sh --mode srun|env|sbatch --mpi mpich|openmpi --work DIR
#                     RUN_OMP MPIRUN PLUGIN_DIR PROGRAM[|RUN_OMP_OPTION...]...
#
#   --mode   how each job starts (slurm_launch.sh): srun = salloc +
#            omptarget-mpirun --srun; env = omptarget-mpirun --print-env +
#            srun; sbatch = a batch script running omptarget-mpirun -n 3.
#   --mpi    the MPI of the tree (CMake's OTM_MPI): srun's PMI plugin is
#            pmi2 for MPICH, pmix for Open MPI (docs/testing.md, "Slurm").
#   --work   the cluster's directory (in the build tree): munge key and
#            socket, slurm.conf, state, spool, logs, pid files, batch
#            scripts. Emptied first, removed at the end.
#   RUN_OMP  tests/omp/run_omp.sh, which runs each PROGRAM on 3 ranks and
#            checks it (PASS line, clean exit of every rank, no process
#            left), with slurm_launch.sh as its launcher. Options of
#            run_omp.sh for a program follow its path, each after a '|'
#            (PROGRAM|--env|NAME=VALUE).
#
# The cluster: munged with a fresh random key and its own socket; slurm.conf
# with SlurmctldHost = this host's short name at 127.0.0.1, one node
# declaring 16 CPUs whatever the hardware (SlurmdParameters=config_overrides;
# the largest job of the omp label has 9 ranks, which nap while idle),
# no cgroups (proctrack/linuxproc, task/none), no accounting, and a port pair
# of its own picked among free ports, so that it never meets a site's Slurm
# or another run's. Daemons run as root.
#
# Teardown: an EXIT trap (also on INT and TERM) cancels the cluster's jobs,
# stops slurmd, slurmctld and munged (TERM, then KILL after 10 s) and removes
# DIR; on failure it first prints the tails of the daemons' logs. A run
# killed with SIGKILL cannot clean up: the next run with the same DIR kills
# the daemons named in its pid files (only if their command line names DIR)
# before it starts.
#
# Besides the programs it checks that 'omptarget-mpirun --srun' outside an
# allocation is refused with its message (exit status 2).
#
# Exit status: 0 when every check passed, 1 otherwise, 77 (SKIPPED, reason
# on stdout) without root or without the Slurm and munge commands.
set -u

me=run_slurm.sh
SKIP=77
mode=
mpi=mpich
work=

usage() {
    sed -n '6,7p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --mode) [ $# -ge 2 ] || usage; mode=$2; shift 2 ;;
    --mpi) [ $# -ge 2 ] || usage; mpi=$2; shift 2 ;;
    --work) [ $# -ge 2 ] || usage; work=$2; shift 2 ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
    esac
done
[ $# -ge 4 ] && [ -n "$work" ] || usage
case $mode in srun | env | sbatch) ;; *) echo "$me: --mode wants srun, env or sbatch" >&2; exit 2 ;; esac
case $mpi in
mpich) pmi=pmi2 ;;
openmpi) pmi=pmix ;;
*) echo "$me: --mpi wants mpich or openmpi" >&2; exit 2 ;;
esac
run_omp=$1 mpirun=$2 plugin_dir=$3
shift 3
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd -P) || exit 2

skip() {
    echo "$me: SKIPPED: $*"
    exit "$SKIP"
}
[ "$(id -u)" -eq 0 ] || skip "needs root to run munged, slurmctld and slurmd (uid $(id -u))"
for cmd in munged munge slurmctld slurmd srun salloc sbatch sinfo scancel; do
    command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] ||
        skip "no '$cmd' (Debian packages slurmctld slurmd slurm-client munge: ci/setup.sh)"
done
sbin() { if command -v "$1" >/dev/null 2>&1; then command -v "$1"; else echo "/usr/sbin/$1"; fi; }
munged=$(sbin munged) slurmctld=$(sbin slurmctld) slurmd=$(sbin slurmd)

mkdir -p "$work" || exit 1
work=$(CDPATH='' cd -- "$work" && pwd -P) || exit 1
conf=$work/slurm.conf

# ---- leftovers of a run killed before it could clean up ------------------
# Only processes whose command line names this run's directory.
kill_pidfile() {
    local file=$1 sig=$2 pid
    [ -f "$file" ] || return 0
    pid=$(cat "$file" 2>/dev/null)
    case $pid in '' | *[!0-9]*) return 0 ;; esac
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$work/"; then
        kill "-$sig" "$pid" 2>/dev/null
        echo "$pid"
    fi
}
stop_daemons() {
    local f pids="" p i
    for f in slurmd.pid slurmctld.pid munge/munged.pid; do
        p=$(kill_pidfile "$work/$f" TERM)
        pids="$pids $p"
    done
    for i in $(seq 1 100); do
        alive=""
        for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
        [ -z "$alive" ] && return 0
        sleep 0.1
    done
    # shellcheck disable=SC2086
    kill -9 $alive 2>/dev/null
}
stop_daemons
rm -rf "$work"

failed=0
cleanup() {
    trap - EXIT INT TERM
    if [ -f "$conf" ] && [ -f "$work/slurmctld.pid" ]; then
        SLURM_CONF=$conf timeout 10 scancel --quiet --user=root 2>/dev/null
    fi
    stop_daemons
    if [ "$failed" -ne 0 ]; then
        for log in "$work"/log/*.log "$work"/munge/munged.log; do
            [ -f "$log" ] || continue
            echo "---- last lines of $log"
            tail -n 20 "$log"
        done
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'failed=1; exit 130' INT
trap 'failed=1; exit 143' TERM

n=0
check() {
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        failed=1
    fi
}
fail() {
    echo "$me: $*"
    failed=1
    exit 1
}

# ---- a port pair nobody listens on ---------------------------------------
listening=$(ss -Htln 2>/dev/null | awk '{print $4}' | sed 's/.*://')
port_free() { ! printf '%s\n' "$listening" | grep -qx "$1"; }
ctl_port=
for i in $(seq 1 50); do
    p=$((20000 + 2 * (RANDOM % 4000)))
    if port_free "$p" && port_free $((p + 1)); then ctl_port=$p; break; fi
done
[ -n "$ctl_port" ] || fail "no free port pair found"
d_port=$((ctl_port + 1))

# ---- munge ---------------------------------------------------------------
mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/log" "$work/jobs" || fail "mkdir in $work"
chmod 711 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 2>/dev/null || fail "no munge key"
chmod 400 "$work/munge/munge.key"
socket=$work/munge/munge.socket
"$munged" --force --key-file="$work/munge/munge.key" --socket="$socket" \
    --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" \
    --seed-file="$work/munge/munged.seed" || fail "munged did not start"
for i in $(seq 1 50); do
    [ -S "$socket" ] && munge -S "$socket" -n 2>/dev/null | unmunge -S "$socket" >/dev/null 2>&1 && break
    sleep 0.1
done
munge -S "$socket" -n 2>/dev/null | unmunge -S "$socket" >/dev/null 2>&1 || fail "munged does not answer on $socket"

# ---- slurm.conf ----------------------------------------------------------
host=$(hostname -s)
cat >"$conf" <<CONF
# The slurm label's one-node cluster (tests/slurm/run_slurm.sh).
ClusterName=otmtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
# Batch jobs start at once (by default their scheduling may wait 3 s).
SchedulerParameters=batch_sched_delay=0
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
PropagateResourceLimits=NONE
NodeName=$host NodeAddr=127.0.0.1 CPUs=16 RealMemory=1000 State=UNKNOWN
PartitionName=otm Nodes=$host Default=YES MaxTime=10 State=UP
CONF
export SLURM_CONF=$conf
# A site's settings would change the jobs.
unset SLURM_JOB_ID SLURM_JOBID SLURM_STEP_ID SLURM_NTASKS SLURM_EXPORT_ENV SQUEUE_FORMAT \
      SBATCH_PARTITION SLURM_PARTITION 2>/dev/null

"$slurmctld" -f "$conf" -i || fail "slurmctld did not start"
"$slurmd" -f "$conf" -N "$host" || fail "slurmd did not start"
state=
for i in $(seq 1 300); do
    state=$(sinfo -h -N -o %T 2>/dev/null)
    [ "$state" = idle ] && break
    sleep 0.1
done
[ "$state" = idle ] || fail "the node is not idle after 30 s (state '$state')"
check 0 "cluster up: munged, slurmctld (port $ctl_port), slurmd (port $d_port), node $host idle"

# ---- the launcher outside an allocation -----------------------------------
msg=$("$mpirun" --srun -n 3 /bin/true 2>&1)
rc=$?
[ "$rc" -eq 2 ] && printf '%s\n' "$msg" | grep -q 'not inside a Slurm allocation'
check $? "omptarget-mpirun --srun outside an allocation is refused (status $rc: $msg)"

# ---- the programs ----------------------------------------------------------
export OTM_SLURM_MODE=$mode OTM_SLURM_MPIRUN=$mpirun OTM_SLURM_PMI=$pmi OTM_SLURM_WORK=$work
for spec in "$@"; do
    IFS='|' read -r -a words <<<"$spec"
    prog=${words[0]}
    start=$(date +%s)
    out=$(sh "$run_omp" "${words[@]:1}" "$here/slurm_launch.sh" "$plugin_dir" "$prog" 2>&1)
    rc=$?
    check $rc "$mode: $(basename "$prog") ($(($(date +%s) - start)) s)"
    [ "$rc" -eq 0 ] || printf '%s\n' "$out" | sed 's/^/    /'
done

echo "# $n checks, failed: $failed"
exit "$failed"
