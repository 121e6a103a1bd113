#!/bin/sh
# run_mpi.sh NPROCS PROGRAM TAG [NAME=VALUE...]
#
# Runs PROGRAM as an MPI job of NPROCS ranks under $MPIEXEC (rank 0
# the host, ranks 1..NPROCS-1 its devices), with OMPTARGET_MPI_LAUNCHER=1,
# OMPTARGET_MPI_LOG_LEVEL=info and the given settings, then checks that it
# shut down cleanly on every rank:
#   - mpiexec's exit status is 0 (rank 0's main returned 0: its checks
#     passed), within a timeout of ${MPI_TEST_TIMEOUT:-300} seconds;
#   - rank 0 printed "omptarget-mpi: rank 0: all K device ranks acknowledged
#     the exit" (K = NPROCS - 1);
#   - each worker rank R printed "omptarget-mpi: rank R exited cleanly"
#     exactly once, on its own stderr;
#   - no process of the program is left.
# TAG is passed to the program as its only argument, so that this run's
# processes can be told from any other run of the same program.
#
# MPI_TEST_ALLOW_ABORT=TEXT: the job may instead have been aborted at
# start-up (run_alloc_faults.sh): a non-zero status that is not the
# timeout's, a line containing TEXT on some rank's stderr, no check run by
# rank 0's main, no process left. The shutdown checks are then skipped
# and the script exits with status 3. Each rank then writes its stdout and
# stderr to files itself: after MPI_Abort the launcher stops forwarding
# what is still in its pipes, which would lose the last lines.
#
# The MPI of $MPIEXEC is told by its --version (Open MPI's says OpenRTE;
# anything else is taken for MPICH's Hydra). For Open MPI the driver allows
# running as root, oversubscribes the cores and names every variable it sets
# with -x.
#
# Under memcheck (label valgrind): MPI_TEST_VALGRIND names valgrind and
# MPI_TEST_VALGRIND_SUPP its suppression file; every rank then runs under
# memcheck (--leak-check=full, definite and indirect leaks are errors) with
# its own log, and each rank must also report "ERROR SUMMARY: 0 errors".
# MPI_TEST_TIME_SCALE=N (default 1) multiplies the time limits that assume
# native speed: the settings OMPTARGET_MPI_TIMEOUT and
# OMPTARGET_MPI_KERNEL_TIMEOUT given here, and the programs' own watchdogs
# and host pauses (MT_TIME_SCALE); MPI_TEST_TIMEOUT stays as given.
set -u
if [ $# -lt 3 ]; then
    echo "usage: run_mpi.sh NPROCS PROGRAM TAG [NAME=VALUE...]" >&2
    exit 2
fi
np=$1
prog=$2
tag=$3
shift 3
timeout_s=${MPI_TEST_TIMEOUT:-300}
workers=$((np - 1))
scale=${MPI_TEST_TIME_SCALE:-1}

# Scale the time limits among the settings ("250ms" -> "2500ms" for 10).
n=$#
while [ "$n" -gt 0 ]; do
    a=$1
    shift
    case $a in
    OMPTARGET_MPI_TIMEOUT=[0-9]*|OMPTARGET_MPI_KERNEL_TIMEOUT=[0-9]*)
        v=${a#*=}
        num=${v%%[!0-9]*}
        a="${a%%=*}=$((num * scale))${v#"$num"}" ;;
    esac
    set -- "$@" "$a"
    n=$((n - 1))
done

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# Only the settings given here apply: drop any the caller's environment has.
for v in $(env | sed -n 's/^\(OMPTARGET_MPI_[A-Za-z0-9_]*\|OMPCLUSTER_[A-Za-z0-9_]*\|MT_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done

failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

case $("${MPIEXEC:-mpiexec}" --version 2>&1) in
*OpenRTE* | *"Open MPI"*) flavour=openmpi ;;
*) flavour=mpich ;;
esac

# Each rank's stdout and stderr go to $tmp/out.R and $tmp/err.R.
case $flavour in
mpich)
    rank_var=PMI_RANK
    mpi_opts="-outfile-pattern $tmp/out.%r -errfile-pattern $tmp/err.%r" ;;
openmpi)
    rank_var=OMPI_COMM_WORLD_RANK
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    mpi_opts="--oversubscribe --output-filename $tmp/ranks:nocopy"
    for kv in OMPTARGET_MPI_LAUNCHER=1 OMPTARGET_MPI_LOG_LEVEL=info MT_TIME_SCALE=1 "$@"; do
        mpi_opts="$mpi_opts -x ${kv%%=*}"
    done ;;
esac

# Under memcheck, each rank runs the program through this wrapper.
wrap=""
if [ -n "${MPI_TEST_VALGRIND:-}" ]; then
    wrap=$tmp/memcheck.sh
    {
        echo '#!/bin/sh'
        printf 'exec "%s" --error-exitcode=97 --leak-check=full ' "$MPI_TEST_VALGRIND"
        printf -- '--errors-for-leak-kinds=definite,indirect --num-callers=30 '
        printf -- '--suppressions="%s" ' "${MPI_TEST_VALGRIND_SUPP:?}"
        printf -- '--log-file="%s/memcheck.%%q{%s}" "$@"\n' "$tmp" "$rank_var"
    } >"$wrap"
    chmod +x "$wrap"
    echo "# every rank under memcheck, suppressions: $MPI_TEST_VALGRIND_SUPP"
fi

direct=""
if [ -n "${MPI_TEST_ALLOW_ABORT:-}" ]; then
    direct=$tmp/direct.sh
    {
        echo '#!/bin/sh'
        printf 'r=${%s:-x}\n' "$rank_var"
        printf 'exec "$@" >>"%s/direct-out.$r" 2>>"%s/direct-err.$r"\n' "$tmp" "$tmp"
    } >"$direct"
    chmod +x "$direct"
fi

echo "# ${MPIEXEC:-mpiexec} -n $np $prog $tag, settings: OMPTARGET_MPI_LAUNCHER=1 OMPTARGET_MPI_LOG_LEVEL=info $*"
start=$(date +%s.%N)
# $mpi_opts is split on blanks: mktemp's directory has none.
# shellcheck disable=SC2086
env OMPTARGET_MPI_LAUNCHER=1 OMPTARGET_MPI_LOG_LEVEL=info MT_TIME_SCALE="$scale" "$@" \
    timeout -k 10 "$timeout_s" "${MPIEXEC:-mpiexec}" -n "$np" $mpi_opts \
    ${direct:+"$direct"} ${wrap:+"$wrap"} "$prog" "$tag" >"$tmp/mpiexec.out" 2>"$tmp/mpiexec.err"
status=$?
end=$(date +%s.%N)

# Open MPI writes DIR/JOB/rank.R/std{out,err}, JOB being its job number.
if [ "$flavour" = openmpi ]; then
    for r in $(seq 0 "$workers"); do
        for s in out err; do
            for f in "$tmp"/ranks/*/rank."$r"/std"$s"; do
                [ -f "$f" ] && cat "$f" >>"$tmp/$s.$r"
            done
        done
    done
fi

for r in $(seq 0 "$workers"); do
    for s in out err; do
        [ -f "$tmp/direct-$s.$r" ] && cat "$tmp/direct-$s.$r" >>"$tmp/$s.$r"
    done
done

# Show everything each rank printed.
for r in $(seq 0 "$workers"); do
    for s in out err; do
        if [ -s "$tmp/$s.$r" ]; then
            echo "---- rank $r std$s ----"
            cat "$tmp/$s.$r"
        fi
    done
done
for s in out err; do
    if [ -s "$tmp/mpiexec.$s" ]; then
        echo "---- mpiexec std$s ----"
        cat "$tmp/mpiexec.$s"
    fi
done
echo "----"

aborted=0
if [ -n "${MPI_TEST_ALLOW_ABORT:-}" ] && [ "$status" -ne 0 ] && [ "$status" -ne 124 ] &&
    [ "$status" -ne 137 ] && cat "$tmp"/err.* 2>/dev/null | grep -q -F -e "$MPI_TEST_ALLOW_ABORT"; then
    aborted=1
    echo "# the job was aborted (status $status): \"$MPI_TEST_ALLOW_ABORT\""
    if grep -q "^ok \|^not ok " "$tmp/out.0" 2>/dev/null; then
        fail "rank 0 ran the program's checks before the job was aborted"
    fi
elif [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    fail "timed out after ${timeout_s}s (status $status)"
elif [ "$status" -ne 0 ]; then
    fail "exit status $status"
fi

if [ "$aborted" -eq 0 ]; then
    line="omptarget-mpi: rank 0: all $workers device ranks acknowledged the exit"
    n=$(grep -c -x -F -e "$line" "$tmp/err.0" 2>/dev/null)
    [ "${n:-0}" -eq 1 ] || fail "rank 0: expected the line \"$line\" once, found ${n:-0}"
    for r in $(seq 1 "$workers"); do
        n=$(grep -c "^omptarget-mpi: rank $r exited cleanly\( \|$\)" "$tmp/err.$r" 2>/dev/null)
        [ "${n:-0}" -eq 1 ] ||
            fail "rank $r: expected \"omptarget-mpi: rank $r exited cleanly\" once, found ${n:-0}"
        # A worker never reaches main: nothing it prints comes from the program.
        if grep -q "^ok \|^not ok " "$tmp/out.$r" 2>/dev/null; then
            fail "rank $r ran the program's main"
        fi
    done
    grep -q "^# .*: PASS$" "$tmp/out.0" 2>/dev/null || fail "rank 0 did not report PASS"
fi

# Memcheck: every rank's log exists and counts no error (leaks included).
# (An aborted job's ranks were killed: their logs are not complete.)
if [ -n "$wrap" ] && [ "$aborted" -eq 0 ]; then
    for r in $(seq 0 "$workers"); do
        log=$tmp/memcheck.$r
        if [ ! -s "$log" ]; then
            fail "rank $r: no memcheck log"
            continue
        fi
        echo "---- rank $r memcheck ----"
        if grep -q "ERROR SUMMARY: 0 errors" "$log"; then
            grep -E "(definitely|indirectly|possibly) lost:|suppressed:|ERROR SUMMARY" "$log"
        else
            cat "$log"
            fail "rank $r: memcheck reported errors"
        fi
    done
fi

# Leftover processes of this run: command lines "PROGRAM TAG".
# (under memcheck, preceded by valgrind and its own arguments)
pattern="^([^ ]*valgrind[^ ]* .* )?$(printf '%s %s' "$prog" "$tag" | sed 's/[][\.*^$+?(){}|]/\\&/g')\$"
left=""
for i in 1 2 3 4 5 6 7 8 9 10; do
    left=$(pgrep -f "$pattern")
    [ -z "$left" ] && break
    sleep 0.5
done
if [ -n "$left" ]; then
    fail "processes left over: $(echo $left)"
    for pid in $left; do
        ps -o pid=,args= -p "$pid"
        kill -KILL "$pid" 2>/dev/null
    done
fi

printf '# %d ranks, %.1f s, ' "$np" "$(awk "BEGIN { print $end - $start }")"
if [ "$failures" -eq 0 ] && [ "$aborted" -eq 1 ]; then
    echo "aborted at start-up as allowed, no process left"
    exit 3
fi
if [ "$failures" -eq 0 ]; then
    echo "clean shutdown: status 0, exit acknowledged by $workers device(s), every worker exited cleanly, no process left"
    exit 0
fi
echo "$failures shutdown check(s) failed"
exit 1
