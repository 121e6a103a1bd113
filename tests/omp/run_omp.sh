#!/bin/sh
# run_omp.sh - runs one OpenMP test program of the `omp` label and checks
# that it passed and that every rank shut down cleanly.
#
# usage: run_omp.sh [--repeat N] [--no-launcher] [--launcher-option OPT]...
#                   [--ranks N] [--timeout S]
#                   [--env NAME=VALUE]... [--expect-fail REGEX [--expect-status N
#                   [--unacknowledged K]] | --expect-refusal REGEX] [--stdout-check CMD]
#                   [--allow-stderr REGEX]
#                   LAUNCHER PLUGIN_DIR PROGRAM [ARGS...]
#
#   (default)      runs `LAUNCHER -n N PROGRAM ARGS` (N = 3: rank 0 and two
#                  devices) with OMPTARGET_MPI_LOG_LEVEL=info and fails if
#                  - it does not exit with status 0 within S seconds (120),
#                  - stdout has no line "PASS <program>: ...",
#                  - stderr lacks "rank 0: all N-1 device ranks acknowledged the exit",
#                  - stderr lacks "rank K exited cleanly after M events" for
#                    any K in 1..N-1,
#                  - stderr has an error of the plugin or of libomptarget,
#                  - a process of PROGRAM is still alive afterwards.
#   --no-launcher  runs PROGRAM itself, no mpiexec, with PLUGIN_DIR first in
#                  LD_LIBRARY_PATH (so libomptarget loads the plugin) and no
#                  launcher variable in the environment; then the plugin must
#                  warn "not started by an MPI launcher" and the program must
#                  still pass (host fallback).
#   --launcher-option OPT  passed to the launcher before -n (for example
#                  --gpu-plugins); may be repeated.
#   --env NAME=VALUE  exported for the run (after the defaults, so it can
#                  override OMPTARGET_MPI_LOG_LEVEL); may be repeated.
#   --expect-fail REGEX  the run is EXPECTED TO FAIL (a device fault): it
#                  fails unless the program exits with a non-zero status
#                  that is not a timeout within S seconds, stdout has a line
#                  "RUN <program>: ..." (it got as far as the faulting
#                  region), stderr matches the extended regular expression
#                  REGEX (grep -E), at most one line says "the job ends
#                  with exit status" (one fault, one end), no rank died of
#                  a fault "outside any target region" after it, and no
#                  process of PROGRAM is left. The PASS line, acknowledge and
#                  exited-cleanly checks and the check for other messages
#                  of the plugin are skipped.
#   --expect-status N  with --expect-fail: the exit status must be N, and
#                  the job must have ended in order: rank 0 logged that all
#                  device ranks acknowledged the exit, as the plugin ends it after
#                  a fault. (The device ranks' own last line, "exited
#                  cleanly", is not required: Open MPI's mpiexec ends the job
#                  as soon as rank 0 exits with a non-zero status, which may
#                  be before they print it.)
#   --unacknowledged K  with --expect-status: K device ranks could not hear the
#                  exit (a region still running on them): rank 0 logged
#                  "K device rank(s) did not acknowledge the exit" instead.
#   --expect-refusal REGEX  the plugin must REFUSE the job before any rank
#                  runs the program (a bad setting): exit status 1 in time,
#                  nothing on stdout, exactly one line of stderr matching
#                  REGEX (one message for the whole job), no process left.
#   --allow-stderr REGEX  lines of stderr matching REGEX (grep -E) are
#                  expected (the program provokes them) and not reported as
#                  other messages of the plugin.
#   --repeat N     (first, if given) the whole run and its checks N times
#                  in a row (a race must not win once); fails at the first
#                  run that fails, with its output and its number.
#   --stdout-check CMD  after the run, `CMD FILE` (CMD split at blanks, e.g.
#                  "sh /path/check_stdout.sh order") must exit with status 0,
#                  FILE being the captured stdout; on failure its output is
#                  shown. In addition to the other checks.
#
# Every run sets Open MPI's own variables, which MPICH ignores, so that the
# same driver serves a plugin built for either (OTM_MPI): running as root
# allowed, cores oversubscribed (3 ranks on 2 cores). The launcher itself
# forwards the plugin's variables with -x.
#
# On failure it prints why, then the captured stdout and stderr.
set -u

me=run_omp.sh

if [ "${1:-}" = --repeat ]; then
    case ${2:-} in '' | *[!0-9]*) echo "$me: --repeat wants a number" >&2; exit 2 ;; esac
    runs=$2
    shift 2
    log=$(mktemp "${TMPDIR:-/tmp}/run_omp.repeat.XXXXXX") || exit 1
    trap 'rm -f "$log"' EXIT
    i=1
    while [ "$i" -le "$runs" ]; do
        if ! sh "$0" "$@" >"$log" 2>&1; then
            cat "$log"
            echo "$me: run $i of $runs FAILED (its output above)"
            exit 1
        fi
        i=$((i + 1))
    done
    cat "$log"
    echo "$me: $runs runs in a row passed (the last one's output above)"
    exit 0
fi

mode=launcher
ranks=3
limit=120

usage() {
    sed -n '5,8p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

envs=
launcher_options=
expect_fail=
expect_regex=
expect_status=
unacknowledged=
expect_refusal=
stdout_check=
allow_stderr=
while [ $# -gt 0 ]; do
    case $1 in
    --no-launcher) mode=plain; shift ;;
    --launcher-option)
        [ $# -ge 2 ] || usage
        launcher_options="$launcher_options $2"; shift 2 ;;
    --ranks) [ $# -ge 2 ] || usage; ranks=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || usage; limit=$2; shift 2 ;;
    --env)
        [ $# -ge 2 ] || usage
        case $2 in
        [A-Za-z_]*=*) ;;
        *) echo "$me: --env wants NAME=VALUE, got '$2'" >&2; exit 2 ;;
        esac
        envs="$envs
$2"
        shift 2 ;;
    --expect-fail)
        [ $# -ge 2 ] || usage
        expect_fail=1; expect_regex=$2; shift 2 ;;
    --expect-status)
        [ $# -ge 2 ] || usage
        expect_status=$2; shift 2 ;;
    --unacknowledged)
        [ $# -ge 2 ] || usage
        unacknowledged=$2; shift 2 ;;
    --expect-refusal)
        [ $# -ge 2 ] || usage
        expect_refusal=1; expect_regex=$2; shift 2 ;;
    --stdout-check)
        [ $# -ge 2 ] || usage
        stdout_check=$2; shift 2 ;;
    --allow-stderr)
        [ $# -ge 2 ] || usage
        allow_stderr=$2; shift 2 ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
    esac
done
[ $# -ge 3 ] || usage
[ -z "$expect_fail$expect_refusal" ] || [ "$mode" = launcher ] ||
    { echo "$me: --expect-fail and --expect-refusal need the launcher" >&2; exit 2; }
[ -z "$expect_fail" ] || [ -z "$expect_refusal" ] ||
    { echo "$me: --expect-fail and --expect-refusal exclude each other" >&2; exit 2; }
case $ranks in '' | *[!0-9]*) echo "$me: --ranks wants a number" >&2; exit 2 ;; esac
[ "$ranks" -ge 2 ] || { echo "$me: --ranks must be at least 2" >&2; exit 2; }
launcher=$1
plugin_dir=$2
prog=$3
shift 3

[ -f "$prog" ] && [ -x "$prog" ] || { echo "$me: $prog is not an executable" >&2; exit 1; }
# An absolute path without ./ or symlinked directories: the pattern that
# finds the program's processes afterwards.
name=$(basename "$prog")
prog=$(cd "$(dirname "$prog")" && pwd -P)/$name
devices=$((ranks - 1))

tmp=$(mktemp -d "${TMPDIR:-/tmp}/run_omp.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
out=$tmp/stdout
err=$tmp/stderr

# A launcher leaves these behind; a test run inherits none of them (the
# plugin takes any of them as "started by a launcher").
unset PMI_RANK PMI_SIZE PMI_FD PMIX_RANK OMPI_COMM_WORLD_SIZE MPI_LOCALNRANKS \
      OMPTARGET_MPI_LAUNCHER 2>/dev/null

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

OMPTARGET_MPI_LOG_LEVEL=info
OTM_TEST_NDEVICES=$devices
export OMPTARGET_MPI_LOG_LEVEL OTM_TEST_NDEVICES
if [ "$mode" = plain ]; then
    OTM_TEST_NDEVICES=0
fi
old_ifs=$IFS
IFS='
'
for kv in $envs; do
    export "$kv"
done
IFS=$old_ifs

start=$(date +%s)
if [ "$mode" = plain ]; then
    LD_LIBRARY_PATH=$plugin_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
    timeout -k 10 "$limit" "$prog" "$@" >"$out" 2>"$err"
    status=$?
else
    # shellcheck disable=SC2086 # the options split at blanks
    timeout -k 10 "$limit" "$launcher" $launcher_options -n "$ranks" "$prog" "$@" \
        >"$out" 2>"$err"
    status=$?
fi
elapsed=$(($(date +%s) - start))

problems=
problem() {
    problems="$problems
  - $*"
}

if [ -n "$expect_refusal" ]; then
    # A refused job: status 1, no rank ran the program, one message.
    case $status in
    1) ;;
    124 | 137) problem "timed out after ${limit}s (status $status), expected a refusal" ;;
    *) problem "exit status $status, expected 1 (the job refused)" ;;
    esac
    [ -s "$out" ] && problem "stdout is not empty: a rank ran the program"
    said=$(grep -Ec -- "$expect_regex" "$err")
    [ "$said" = 1 ] ||
        problem "$said lines of stderr match '$expect_regex', expected exactly 1"
elif [ -n "$expect_fail" ]; then
    # An expected failure: a non-zero status in time, the program got as far
    # as the faulting region, the fault reported as REGEX says.
    case $status in
    0) problem "exit status 0, but the run was expected to fail" ;;
    124 | 137) problem "timed out after ${limit}s (status $status), expected a failure in time" ;;
    esac
    grep -q "^RUN $name: " "$out" ||
        problem "no line 'RUN $name: ...' on stdout (did the program start?)"
    grep -Eq -- "$expect_regex" "$err" ||
        problem "stderr does not match the expected failure (the run ended with status" \
                "$status): $expect_regex"
    # The plugin's lines only: the launcher adds one of its own when the MPI
    # runtime's status differs from the plugin's (Open MPI's mpiexec has
    # been seen to crash in its own finalize after an abort).
    ends=$(grep -c 'omptarget-mpi: .*the job ends with exit status' "$err")
    [ "$ends" -le 1 ] ||
        problem "$ends lines of the plugin say 'the job ends with exit status': the job" \
                "was ended more than once"
    grep -q 'outside any target region' "$err" &&
        problem "a rank died of a second fault, outside any target region"
    if [ -n "$expect_status" ]; then
        [ "$status" = "$expect_status" ] ||
            problem "exit status $status, expected $expect_status"
        if [ -n "$unacknowledged" ]; then
            grep -q "$unacknowledged device rank(s) did not acknowledge the exit" "$err" ||
                problem "no line '$unacknowledged device rank(s) did not acknowledge the exit'"
        else
            grep -q "rank 0: all $devices device ranks acknowledged the exit" "$err" ||
                problem "the job did not end in order: no line 'rank 0: all $devices device ranks acknowledged the exit'"
        fi
    fi
else
    case $status in
    0) ;;
    124 | 137) problem "timed out after ${limit}s (status $status)" ;;
    *) problem "exit status $status" ;;
    esac

    grep -q "^PASS $name: " "$out" || problem "no line 'PASS $name: ...' on stdout"

    # The plugin writes each log line in pieces and several ranks share the
    # launcher's stderr, so the lines are matched without their prefix.
    if [ "$mode" = plain ]; then
        grep -q "not started by an MPI launcher" "$err" ||
            problem "no plugin warning 'not started by an MPI launcher' on stderr" \
                    "(was the plugin in $plugin_dir loaded?)"
    else
        grep -q "rank 0: all $devices device ranks acknowledged the exit" "$err" ||
            problem "no line 'rank 0: all $devices device ranks acknowledged the exit' on stderr"
        exited=$(grep -o 'rank [0-9][0-9]* exited cleanly after [0-9][0-9]* events' "$err" |
                 sed 's/^rank \([0-9]*\) .*/\1/' | sort -un | tr '\n' ' ')
        k=1
        while [ "$k" -le "$devices" ]; do
            case " $exited" in
            *" $k "*) ;;
            *) problem "no line 'rank $k exited cleanly after M events' on stderr" ;;
            esac
            k=$((k + 1))
        done
    fi
    # Any other line of the plugin (the shell says "omptarget-mpi: ", the core
    # "omptarget-mpi[RANK]: ") is an error or a warning the program may have
    # survived (e.g. a failed device-to-device copy that libomptarget redid
    # through the host): known messages and prefixes are removed from lines
    # that carry a prefix, and what remains is reported.
    reported=$err
    if [ -n "$allow_stderr" ]; then
        reported=$tmp/stderr.reported
        grep -Ev -- "$allow_stderr" "$err" >"$reported"
    fi
    unexpected=$(sed -n -E '/omptarget-mpi(\[[0-9]+\])?: /{
        h
        s/rank 0: all [0-9]+ device ranks acknowledged the exit//g
        s/rank [0-9]+: plugin [A-Za-z0-9_-]+ skipped: .*//g
        s/rank [0-9]+: plugin [A-Za-z0-9_-]+: [0-9]+ device\(s\)//g
        s/rank [0-9]+ exited cleanly after [0-9]+ events//g
        s/not started by an MPI launcher, so 0 devices; run `omptarget-mpirun -n N .\/app` \(N >= 2\)//g
        s/omptarget-mpi(\[[0-9]+\])?: //g
        /[^[:space:]]/{
            g
            p
        }
    }' "$reported"; grep -i 'libomptarget' "$reported")
    if [ -n "$unexpected" ]; then
        problem "messages of the plugin or of libomptarget on stderr:
$(printf '%s\n' "$unexpected" | sed 's/^/      /')"
    fi
fi

if [ -n "$stdout_check" ]; then
    # CMD split at blanks on purpose; FILE appended.
    # shellcheck disable=SC2086
    check_out=$($stdout_check "$out" 2>&1)
    check_status=$?
    if [ "$check_status" -ne 0 ]; then
        problem "stdout check '$stdout_check' failed (status $check_status):
$(printf '%s\n' "$check_out" | sed 's/^/      /')"
    fi
fi

# Nothing of the program may outlive the run: not the host, not a device rank.
pattern="^$(printf '%s' "$prog" | sed 's/[][\.*^$+?(){}|]/\\&/g')( |\$)"
# A rank may still be exiting when the launcher returns (Open MPI's
# mpiexec does not wait for every one): waited for, 10 s at most.
left=$(pgrep -f "$pattern")
i=0
while [ -n "$left" ] && [ "$i" -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
    left=$(pgrep -f "$pattern")
done
if [ -n "$left" ]; then
    problem "processes of $name still alive after the run:" \
            "$(ps -o pid=,stat=,args= -p "$(echo $left | tr ' ' ',')" 2>/dev/null | tr '\n' ';')"
    for pid in $left; do
        kill -9 "$pid" 2>/dev/null
    done
fi

if [ -n "$problems" ]; then
    echo "$me: $name FAILED ($mode mode, ${elapsed}s):$problems"
    echo "----- stdout of $name -----"
    if [ "$(wc -c <"$out")" -gt 262144 ]; then
        # omp_printf_big writes 10 MiB: its start and end are enough.
        head -n 100 "$out" | cut -c 1-200
        echo "... ($(wc -l <"$out") lines, $(wc -c <"$out") bytes in all; the last 20:)"
        tail -n 20 "$out" | cut -c 1-200
    else
        cat "$out"
    fi
    echo "----- stderr of $name -----"
    cat "$err"
    echo "-----"
    exit 1
fi
if [ -n "$expect_refusal" ]; then
    grep -E -- "$expect_regex" "$err"
    echo "$me: $name refused as expected (status $status, ${elapsed}s)"
    exit 0
fi
if [ -n "$expect_fail" ]; then
    cat "$out"
    grep -E -- "$expect_regex" "$err"
    echo "$me: $name failed as expected (status $status, $mode mode, ${elapsed}s)"
    exit 0
fi
if [ -n "$stdout_check" ]; then
    # The stdout of these programs is large; its checker's verdict instead.
    grep -E '^PASS ' "$out"
    printf '%s\n' "$check_out"
else
    cat "$out"
fi
grep -E 'acknowledged the exit|exited cleanly|not started by an MPI launcher' "$err"
echo "$me: $name passed ($mode mode, ${elapsed}s)"
exit 0
