#!/bin/sh
# check_mismatch.sh - ranks whose settings are not the same: the job is
# refused at start-up, on every rank at once, within two timeouts.
#
# usage: check_mismatch.sh LAUNCHER PROGRAM MPI CASE
#   MPI    mpich or openmpi: how one rank gets a value of its own
#          (mpiexec's per-executable -env NAME VALUE, or -x NAME=VALUE)
#   CASE   devices  OMPTARGET_MPI_WINDOW=9 on ranks 1..2 only
#          host     OMPTARGET_MPI_WINDOW=9 on rank 0 only
#          comms    OMPTARGET_MPI_NUM_COMMS=4 on rank 0, 8 on ranks 1..2
#
# Runs `LAUNCHER -n 1 PROGRAM : -n 2 PROGRAM` (MPMD, each part with its
# own value, every rank with OMPTARGET_MPI_TIMEOUT=10s) and fails unless
# the job ends with status 1 within 20 s (two timeouts), exactly one line
# of stderr is the plugin's refusal naming the variable, the ranks and
# their values, stdout is empty (no rank ran main), and once it ended no
# process of it is left, nor libomp's registration of any of its ranks in
# /dev/shm; under Open MPI, its shared-memory segments and session
# directory (moved into a directory of the test's own) are gone too.
set -u
me=check_mismatch.sh
[ $# -eq 4 ] || { sed -n '4p' "$0" | sed 's/^# //' >&2; exit 2; }
launcher=$1
prog=$2
mpi=$3
case=$4
tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_mismatch.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# Each rank writes its pid before it becomes the program (exec keeps it).
cat >"$tmp/as_rank" <<'WRAP'
#!/bin/sh
echo $$ >>"$1"
shift
exec "$@"
WRAP
chmod +x "$tmp/as_rank"

# $1: the ranks' part (0 or 1), $2 $3: a variable and its value, or nothing.
own() {
    [ -n "${2:-}" ] || return 0
    if [ "$mpi" = openmpi ]; then
        printf '%s\n' -x "$2=$3"
    else
        printf '%s\n' -env "$2" "$3"
    fi
}
w=OMPTARGET_MPI_WINDOW
c=OMPTARGET_MPI_NUM_COMMS
case $case in
devices) first=; rest="$w 9"
         want='OMPTARGET_MPI_WINDOW=9: expected an integer in 1\.\.4 \(ranks 1\.\.2\)' ;;
host) first="$w 9"; rest=
      want='OMPTARGET_MPI_WINDOW=9: expected an integer in 1\.\.4 \(rank 0\)' ;;
comms) first="$c 4"; rest="$c 8"
       want='OMPTARGET_MPI_NUM_COMMS must be the same on every rank: 4 on rank 0, 8 on ranks 1\.\.2' ;;
*) echo "$me: unknown case $case" >&2; exit 2 ;;
esac
want="^omptarget-mpi: $want; the job ends \\(status 1\\) before any rank runs the program\$"

unset PMI_RANK PMI_SIZE PMI_FD PMIX_RANK OMPI_COMM_WORLD_SIZE MPI_LOCALNRANKS \
      OMPTARGET_MPI_LAUNCHER OMPTARGET_MPI_WINDOW OMPTARGET_MPI_NUM_COMMS 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# Open MPI's segments and session directory where this test can see them.
mkdir -p "$tmp/shm" "$tmp/tmp"
export OMPI_MCA_btl_vader_backing_directory="$tmp/shm" TMPDIR="$tmp/tmp"
export OMPTARGET_MPI_TIMEOUT=10s OTM_TEST_NDEVICES=2
pids=$tmp/pids
# shellcheck disable=SC2046,SC2086
timeout -k 5 20 "$launcher" -n 1 $(own 0 $first) "$tmp/as_rank" "$pids" "$prog" \
    : -n 2 $(own 1 $rest) "$tmp/as_rank" "$pids" "$prog" >"$tmp/out" 2>"$tmp/err"
status=$?

fail() {
    echo "$me: $case: $*"
    echo "----- stdout -----"; cat "$tmp/out"
    echo "----- stderr -----"; cat "$tmp/err"
    exit 1
}
case $status in
1) ;;
124 | 137) fail "the job still ran 20 s (two timeouts) after it started" ;;
*) fail "exit status $status, expected 1" ;;
esac
[ -s "$tmp/out" ] && fail "stdout is not empty: a rank ran the program"
said=$(grep -Ec -- "$want" "$tmp/err")
[ "$said" = 1 ] || fail "$said lines of stderr are '$want', expected exactly 1"
other=$(grep -c 'omptarget-mpi' "$tmp/err")
[ "$other" = 1 ] || fail "$other lines of the plugin on stderr, expected the refusal alone"
[ "$(wc -l <"$pids")" -eq 3 ] || fail "$(wc -l <"$pids") ranks started, expected 3"

# The job has ended; its processes may take a moment to be reaped.
i=0
while :; do
    alive=
    for pid in $(cat "$pids"); do
        kill -0 "$pid" 2>/dev/null && alive="$alive $pid"
    done
    [ -n "$alive" ] || break
    i=$((i + 1))
    [ "$i" -le 100 ] || fail "ranks still alive 10 s after the job ended:$alive"
    sleep 0.1
done
uid=$(id -u)
for pid in $(cat "$pids"); do
    [ ! -e "/dev/shm/__KMP_REGISTERED_LIB_${pid}_$uid" ] ||
        fail "rank pid $pid left /dev/shm/__KMP_REGISTERED_LIB_${pid}_$uid"
done
left=$(find "$tmp/shm" "$tmp/tmp" -mindepth 1 2>/dev/null | head -n 5)
[ -z "$left" ] || fail "the MPI runtime left files behind: $left"
grep -E -- "$want" "$tmp/err"
echo "$me: $case: refused, status 1, nothing left behind"
