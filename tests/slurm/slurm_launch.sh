#!/bin/sh
# slurm_launch.sh - the launcher that run_omp.sh calls in the `slurm` label
# (`slurm_launch.sh -n N PROGRAM ARGS...`): it starts the job through the
# test's Slurm cluster in one of the three ways a user would.
#
#   srun    salloc -n N omptarget-mpirun --srun -n N PROGRAM ARGS
#           (inside the allocation the launcher runs srun --mpi=PMI)
#   env     eval "$(omptarget-mpirun --print-env)"
#           srun --mpi=PMI -n N PROGRAM ARGS   (no allocation: srun makes one)
#   sbatch  sbatch -n N SCRIPT, SCRIPT running
#           omptarget-mpirun -n N PROGRAM ARGS (mpiexec inside the allocation);
#           the job's stdout and stderr are then copied to ours, and its exit
#           status becomes ours.
#
# Set by run_slurm.sh: OTM_SLURM_MODE (srun, env or sbatch), OTM_SLURM_MPIRUN
# (omptarget-mpirun), OTM_SLURM_PMI (srun's --mpi for the MPI of the tree),
# OTM_SLURM_WORK (the cluster's directory, for the batch scripts) and
# SLURM_CONF (the test cluster's slurm.conf).
set -u

me=slurm_launch.sh
for v in OTM_SLURM_MODE OTM_SLURM_MPIRUN OTM_SLURM_PMI OTM_SLURM_WORK SLURM_CONF; do
    eval "val=\${$v:-}"
    [ -n "$val" ] || { echo "$me: $v is not set (run through run_slurm.sh)" >&2; exit 2; }
done
[ $# -ge 3 ] && [ "$1" = -n ] || { echo "$me: usage: $me -n N PROGRAM [ARGS...]" >&2; exit 2; }
ntasks=$2
shift 2

quote() {
    printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

case $OTM_SLURM_MODE in
srun)
    exec salloc -Q -n "$ntasks" "$OTM_SLURM_MPIRUN" --srun -n "$ntasks" "$@" ;;
env)
    env_lines=$("$OTM_SLURM_MPIRUN" --print-env) || exit 1
    eval "$env_lines"
    exec srun -Q --mpi="$OTM_SLURM_PMI" -n "$ntasks" "$@" ;;
sbatch)
    job=$(mktemp "$OTM_SLURM_WORK/jobs/job.XXXXXX") || exit 1
    {
        echo '#!/bin/sh'
        printf 'exec %s -n %s' "$(quote "$OTM_SLURM_MPIRUN")" "$ntasks"
        for arg in "$@"; do
            printf ' %s' "$(quote "$arg")"
        done
        echo
    } >"$job.sh"
    # Not 'sbatch --wait', which polls the job every 2 to 10 s: the job's
    # state every 0.1 s, then its exit code from the controller's record
    # (ExitCode=STATUS:SIGNAL).
    id=$(sbatch --parsable -n "$ntasks" -D "$PWD" -o "$job.out" -e "$job.err" "$job.sh") ||
        { rm -f "$job" "$job.sh"; exit 1; }
    id=${id%%;*}
    trap 'scancel "$id" 2>/dev/null; exit 143' TERM INT
    while :; do
        info=$(scontrol -o show job "$id" 2>/dev/null)
        case $info in
        *JobState=PENDING* | *JobState=RUNNING* | *JobState=CONFIGURING* | *JobState=COMPLETING*)
            sleep 0.1 ;;
        *JobState=*) break ;;
        *) echo "$me: job $id has vanished" >&2; exit 1 ;;
        esac
    done
    code=$(printf '%s\n' "$info" | sed -n 's/.* ExitCode=\([0-9]*\):\([0-9]*\).*/\1 \2/p')
    set -- $code
    if [ $# -ne 2 ]; then
        echo "$me: no ExitCode for job $id: $info" >&2
        status=1
    elif [ "$2" -ne 0 ]; then
        status=$((128 + $2))
    else
        status=$1
    fi
    cat "$job.out" 2>/dev/null
    cat "$job.err" >&2 2>/dev/null
    rm -f "$job" "$job.sh" "$job.out" "$job.err"
    exit "$status" ;;
*)
    echo "$me: OTM_SLURM_MODE='$OTM_SLURM_MODE': want srun, env or sbatch" >&2
    exit 2 ;;
esac
