# job_lib.sh - what the omp label's job scripts that act on a running job
# share (check_signals.sh, check_stopped.sh, check_killed.sh): sourced, with
# `me` (the script's name) and `prog` (the program's absolute path) set first.
#
#   job_start_env    the environment of a job the script starts itself: no
#                    launcher mark inherited, Open MPI allowed to run as root
#                    and to oversubscribe, two devices expected
#   job_fail MSG     prints MSG, then the job's stdout and stderr; exit 1
#   job_wait_run PID waits (30 s at most) for the program's "RUN" line
#   job_wait_region PID
#                    waits (30 s at most) until omp_signal_wait's region
#                    runs on device 0: the file it creates first, at
#                    $tmp/mark (job_start_env sets OTM_TEST_MARK)
#   job_wait_end PID WHAT
#                    waits (30 s at most) for the launcher PID to end, then
#                    sets `status` to its exit status; fails saying "the
#                    job still ran 30 s after WHAT" otherwise
#   job_wait_gone    waits (10 s at most) until no process of prog is left
# $tmp holds the job's out and err; it and the program's processes go at
# the script's exit.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/$me.XXXXXX") || exit 1
pattern="^$(printf '%s' "$prog" | sed 's/[][\.*^$+?(){}|]/\\&/g')( |\$)"
job_cleanup() {
    pkill -9 -f "$pattern" 2>/dev/null
    rm -rf "$tmp"
}
trap job_cleanup EXIT

job_start_env() {
    unset PMI_RANK PMI_SIZE PMI_FD PMIX_RANK OMPI_COMM_WORLD_SIZE MPI_LOCALNRANKS \
          OMPTARGET_MPI_LAUNCHER 2>/dev/null
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_rmaps_base_oversubscribe=1
    export OTM_TEST_NDEVICES=2 OTM_TEST_MARK="$tmp/mark"
}

job_fail() {
    echo "$me: $*"
    echo "----- stdout -----"; cat "$tmp/out"
    echo "----- stderr -----"; cat "$tmp/err"
    exit 1
}

job_wait_run() {
    i=0
    until grep -q '^RUN ' "$tmp/out"; do
        i=$((i + 1))
        [ "$i" -le 300 ] || { kill -9 "$1"; job_fail "no RUN line within 30 s"; }
        kill -0 "$1" 2>/dev/null || job_fail "the launcher ended before the program started"
        sleep 0.1
    done
}

job_wait_region() {
    i=0
    until [ -e "$tmp/mark" ]; do
        i=$((i + 1))
        [ "$i" -le 300 ] || { kill -9 "$1"; job_fail "the region did not start within 30 s"; }
        kill -0 "$1" 2>/dev/null || job_fail "the launcher ended before the region started"
        sleep 0.1
    done
}

job_wait_end() {
    i=0
    while kill -0 "$1" 2>/dev/null; do
        i=$((i + 1))
        [ "$i" -le 300 ] || { kill -9 "$1"; job_fail "the job still ran 30 s after $2"; }
        sleep 0.1
    done
    wait "$1"
    status=$?
}

job_wait_gone() {
    i=0
    while pgrep -f "$pattern" >/dev/null; do
        i=$((i + 1))
        [ "$i" -le 100 ] || job_fail "processes of $(basename "$prog") still alive 10 s after" \
                                    "the launcher: $(pgrep -af "$pattern" | tr '\n' ';')"
        sleep 0.1
    done
}
