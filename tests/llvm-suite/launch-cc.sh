#!/bin/sh
# launch-cc.sh - the compiler of the llvm-suite label's "ours" column.
#
# usage: launch-cc.sh LAUNCHER RANKS LOG COMPILER ARGS...
#
# Runs COMPILER ARGS as it is. When that linked an executable (no -c, -S,
# -E, -shared, -fsyntax-only), the executable is moved to OUT.bin and OUT
# becomes a script that runs `LAUNCHER -n RANKS OUT.bin ARGS`: however a
# test's RUN lines start the program (%libomptarget-run-<target>, a bare %t,
# under env or not), it then runs through the launcher, on RANKS ranks, and
# nothing else of the RUN lines changes. The stock column compiles with
# COMPILER directly, so both columns build the same programs.
#
# A crash. Run on its own, a program whose process dies of a signal has
# crashed, and lit tells a crash from a failure in one place: the `not`
# program (%not in the RUN lines), where `not --crash` passes only a crash
# and plain `not` passes only a failure that is no crash. Through the
# launcher, the job's exit status says it: 128 + N when the program (rank
# 0) died of signal N before any other rank ended, or when a region died
# of it (the plugin ends the job with that status), whatever the MPI
# runtime reported. The run script then ends itself by that signal: the
# crash, as a plain run shows it, for `not` and `not --crash` alike.
# Each run appends `PROGRAM STATUS CRASH NOT RANKS` to LOG: the launcher's
# exit status, `crash` or `-`, the `not` that started the script (`not`,
# `not--crash` or `-`), and the job's size as our plugin on rank 0 wrote
# it in the job's map (OMPTARGET_MPI_MAP: `-` when the plugin never
# started: no region, no device query), which shows that the column ran
# on this plugin.
set -u
[ $# -ge 4 ] || { echo "usage: launch-cc.sh LAUNCHER RANKS LOG COMPILER ARGS..." >&2; exit 2; }
launcher=$1
ranks=$2
log=$3
shift 3

# The output file (-o FILE: the suites' RUN lines never join them, and
# options such as `-mllvm -openmp-...` start with -o) and whether the
# command links an executable.
out=a.out
links=1
prev=
for arg in "$@"; do
    [ "$prev" = -o ] && out=$arg
    case $arg in
    -c | -S | -E | -shared | -fsyntax-only | -M | -MM) links= ;;
    esac
    prev=$arg
done

"$@" || exit $?
[ -n "$links" ] || exit 0

case $out in /*) ;; *) out=$(pwd)/$out ;; esac
mv -f "$out" "$out.bin" || exit 1

# q WORD: WORD quoted for sh.
q() {
    printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}
# The run script; \$ is expanded when it runs, $(q ...) now.
# shellcheck disable=SC2094   # $out's name is read, not the file
cat >"$out" <<EOF
#!/bin/sh
# Written by launch-cc.sh: runs $(basename "$out").bin through the launcher.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
OMPTARGET_MPI_MAP=\$(mktemp "\${TMPDIR:-/tmp}/llvm-suite-map.XXXXXX") || exit 1
export OMPTARGET_MPI_MAP
$(q "$launcher") -n $ranks $(q "$out.bin") "\$@"
status=\$?
ranks=\$(sed -n 's/^ranks \([0-9][0-9]*\)\$/\1/p' "\$OMPTARGET_MPI_MAP")
crash=-
if [ "\$status" -gt 128 ] && [ "\$status" -lt 160 ]; then
    crash=crash
fi
rm -f "\$OMPTARGET_MPI_MAP" "\$OMPTARGET_MPI_MAP".*
# The parent's command line: is this run under the \`not\` program?
by=\$(tr '\\000' ' ' <"/proc/\$PPID/cmdline" 2>/dev/null)
case \${by%% *} in
*/not | not) case \$by in *' --crash '*) by=not--crash ;; *) by=not ;; esac ;;
*) by=- ;;
esac
echo $(q "$out.bin") "\$status" "\$crash" "\$by" "\${ranks:--}" >>$(q "$log")
if [ "\$crash" = crash ]; then
    signal=\$((status - 128))
    trap - "\$signal"
    kill -"\$signal" \$\$
fi
exit "\$status"
EOF
chmod +x "$out"
