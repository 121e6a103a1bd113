#!/bin/sh
# test_launcher.sh LAUNCHER PLUGIN_DIR MPI - omptarget-mpirun against a fake
# mpiexec that prints what it was given.
#
# LAUNCHER is the configured script in the build tree, PLUGIN_DIR the build
# tree's directory of plugin symlinks, MPI the build's OTM_MPI (mpich or
# openmpi). The real plugin need not be built: the checks use a fake plugin
# file, or copies of the symlinks in a temporary prefix laid out like an
# install. Both flavours of the script are checked whatever the build's: a
# copy with its mpi_flavour line set to each.
set -u
launcher=$1
build_plugin_dir=$2
build_mpi=$3
failures=0
count=0

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

ok() {
    count=$((count + 1))
    echo "ok $count - $1"
}
not_ok() {
    count=$((count + 1))
    failures=$((failures + 1))
    echo "not ok $count - $1"
    [ -f "$tmp/out" ] && sed 's/^/#   out: /' "$tmp/out"
    [ -f "$tmp/err" ] && sed 's/^/#   err: /' "$tmp/err"
    return 0
}
# check DESCRIPTION COMMAND...: passes when COMMAND succeeds.
check() {
    what=$1
    shift
    if "$@"; then ok "$what"; else not_ok "$what"; fi
}
# run [NAME=VALUE...] [-u NAME] PROGRAM ARGS...: runs PROGRAM through env
# (an assignment before a shell function is not portable), output in
# $tmp/out and $tmp/err, status in $status.
run() {
    env "$@" >"$tmp/out" 2>"$tmp/err"
    status=$?
}
out_is() {
    printf '%s\n' "$@" >"$tmp/want"
    cmp -s "$tmp/want" "$tmp/out"
}
has() { grep -q -F -e "$2" "$1"; }
# gone PID: waits (30 s at most) until process PID no longer exists.
gone() {
    i=0
    while kill -0 "$1" 2>/dev/null; do
        i=$((i + 1))
        [ "$i" -le 300 ] || return 1
        sleep 0.1
    done
}

# ---- fixtures -------------------------------------------------------------

mkdir -p "$tmp/fakebin" "$tmp/plugins" "$tmp/empty" "$tmp/tools"
cat >"$tmp/fakebin/mpiexec" <<'EOF'
#!/bin/sh
: >"${FAKE_MARK:-/dev/null}"
printf 'LD_LIBRARY_PATH=%s\n' "${LD_LIBRARY_PATH-<unset>}"
printf 'OMPTARGET_MPI_LAUNCHER=%s\n' "${OMPTARGET_MPI_LAUNCHER-<unset>}"
for a in "$@"; do printf 'arg<%s>\n' "$a"; done
exit "${FAKE_STATUS:-0}"
EOF
chmod +x "$tmp/fakebin/mpiexec"
# Whichever name the launcher looks for first, PATH finds the fake.
for n in mpiexec.mpich mpiexec.openmpi; do ln -s mpiexec "$tmp/fakebin/$n"; done
fake=$tmp/fakebin/mpiexec
: >"$tmp/plugins/libomptarget.rtl.x86_64.so"
plugins=$tmp/plugins
# The tools the launcher needs, without any mpiexec.
for t in readlink dirname sed cat env sort; do
    ln -s "$(command -v "$t")" "$tmp/tools/$t"
done

# Two distinct fakes, to see which name the launcher picks.
mkdir -p "$tmp/twobin"
for n in mpiexec.mpich mpiexec.openmpi mpiexec; do
    printf '#!/bin/sh\necho "ran %s"\n' "$n" >"$tmp/twobin/$n"
    chmod +x "$tmp/twobin/$n"
done

unset MPIEXEC OMPTARGET_MPI_PLUGIN_DIR OMPTARGET_MPI_LAUNCHER LIBOMP_NUM_HIDDEN_HELPER_THREADS
for v in $(env | sed -n 's/^\(OMPTARGET_MPI_[A-Za-z0-9_]*\|OMPCLUSTER_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
export FAKE_MARK="$tmp/ran"

# ---- the build tree ----------------------------------------------------------

check "launcher is executable" test -x "$launcher"
check "the launcher's flavour is the build's ($build_mpi)" \
    test "$(grep -c "^mpi_flavour=$build_mpi\$" "$launcher")" -eq 1
# variant FLAVOUR: a copy of the launcher built for FLAVOUR.
variant() {
    sed "s/^mpi_flavour=.*/mpi_flavour=$1/" "$launcher" >"$tmp/launcher-$1"
    chmod +x "$tmp/launcher-$1"
}
variant mpich
variant openmpi
run PATH="$tmp/twobin:$tmp/tools" OMPTARGET_MPI_PLUGIN_DIR="$tmp/plugins" "$launcher" ./app
check "the launcher runs the mpiexec of its MPI ($build_mpi)" \
    out_is "ran mpiexec.$build_mpi"
mv "$tmp/twobin/mpiexec.$build_mpi" "$tmp/twobin.saved"
run PATH="$tmp/twobin:$tmp/tools" OMPTARGET_MPI_PLUGIN_DIR="$tmp/plugins" "$launcher" ./app
check "... else plain mpiexec" out_is "ran mpiexec"
mv "$tmp/twobin.saved" "$tmp/twobin/mpiexec.$build_mpi"

# The checks below that do not concern Open MPI run the MPICH flavour,
# which adds nothing to the command.
launcher=$tmp/launcher-mpich
L=$launcher
for name in libomptarget.rtl.x86_64.so libomptarget.rtl.x86_64.nextgen.so; do
    check "$name is a symlink in the build tree" test -L "$build_plugin_dir/$name"
    check "$name points at ../libomptarget.rtl.mpi.so" \
        test "$(readlink "$build_plugin_dir/$name")" = ../libomptarget.rtl.mpi.so
done

# ---- arguments pass through ------------------------------------------------

export OMPTARGET_MPI_PLUGIN_DIR="$plugins"
run LD_LIBRARY_PATH=/orig/lib "$L" --mpiexec "$fake" -n 3 ./app 'a b' '' "it's" -x --help
check "runs mpiexec with status 0" test "$status" -eq 0
check "args pass through in order, -n forwarded, env set" out_is \
    "LD_LIBRARY_PATH=$plugins:/orig/lib" "OMPTARGET_MPI_LAUNCHER=1" \
    "arg<-n>" "arg<3>" "arg<./app>" "arg<a b>" "arg<>" "arg<it's>" \
    "arg<-x>" "arg<--help>"

run -u LD_LIBRARY_PATH "$L" --mpiexec "$fake" ./app
check "unset LD_LIBRARY_PATH becomes the plugin dir, no colon" out_is "LD_LIBRARY_PATH=$plugins" \
    "OMPTARGET_MPI_LAUNCHER=1" "arg<./app>"

run FAKE_STATUS=7 "$L" --mpiexec "$fake" ./app
check "mpiexec's exit status is returned" test "$status" -eq 7

run "$L" --mpiexec="$fake" -- --dry-run ./app
check "-- ends launcher options and is consumed" out_is \
    "LD_LIBRARY_PATH=$plugins" "OMPTARGET_MPI_LAUNCHER=1" \
    "arg<--dry-run>" "arg<./app>"

run "$L" --mpiexec "$fake" -n 2 --dry-run ./app
check "launcher options only lead: a later --dry-run goes to mpiexec" \
    has "$tmp/out" "arg<--dry-run>"

# An mpiexec that hangs after its ranks ended (Open MPI 4.1's mpirun, in
# PMIx's finalisation): the launcher ends it and returns the ranks' status.
# It says its pid before it becomes the hung mpiexec (exec keeps the pid),
# so that the check waits for that process to be gone, not for any
# "sleep 120" of the machine to be absent at one instant.
printf '#!/bin/sh\necho $$ >"%s"\n(exit 0) &\n(exit 3) &\nsh -c "kill -TERM \\$\\$" &\nexec sleep 120\n' \
    "$tmp/hang.pid" >"$tmp/hangbin"
chmod +x "$tmp/hangbin"
run "$L" --mpiexec "$tmp/hangbin" -n 3 ./app
check "an mpiexec hung after its ranks ended is ended: the ranks' status" \
    test "$status" -eq 3
check "... saying so" has "$tmp/err" "every rank of the job has ended, mpiexec has not for 5 s"
check "... leaving no mpiexec behind" gone "$(cat "$tmp/hang.pid")"
# One whose rank outlives the watch's grace is left alone.
printf '#!/bin/sh\nsleep 6 &\nwait\nexit 4\n' >"$tmp/slowbin"
chmod +x "$tmp/slowbin"
run "$L" --mpiexec "$tmp/slowbin" ./app
check "an mpiexec whose rank runs past the grace ends by itself" test "$status" -eq 4
check "... unwatched" test ! -s "$tmp/err"

# The plugin ended the job with a status of its choosing (a fault, a lost
# device: `status N` in the map, after `end`); the MPI runtime reported
# another (a rank it killed, its abort). The launcher's status is the
# plugin's, and it says so.
cat >"$tmp/endbin" <<'EOF2'
#!/bin/sh
printf 'rank 0 device -1 pid 1 host h\nranks 1\nend\nstatus %s\n' "$SAID" \
    >>"$OMPTARGET_MPI_MAP"
exit "$FAKE_STATUS"
EOF2
chmod +x "$tmp/endbin"
run SAID=1 FAKE_STATUS=9 "$L" --mpiexec "$tmp/endbin" ./app
check "the plugin's end status wins over the MPI runtime's" test "$status" -eq 1
check "... saying so" has "$tmp/err" \
    "the job ends with exit status 1, as the plugin said above (the MPI runtime reported 9)"
run SAID=139 FAKE_STATUS=139 "$L" --mpiexec "$tmp/endbin" ./app
check "when they agree, the status is theirs" test "$status" -eq 139
check "... and the launcher says nothing" test ! -s "$tmp/err"

# A map of the caller's is the plugin's to judge: an empty one reaches the
# ranks as it is (the plugin refuses it), and one too long for a file name
# makes no tool of the launcher complain.
cat >"$tmp/mapbin" <<'EOF2'
#!/bin/sh
printf 'map<%s>\n' "${OMPTARGET_MPI_MAP-unset}"
EOF2
chmod +x "$tmp/mapbin"
run OMPTARGET_MPI_MAP= "$L" --mpiexec "$tmp/mapbin" ./app
check "an empty OMPTARGET_MPI_MAP reaches the ranks empty" out_is "map<>"
long=$tmp/$(printf '%01100d' 0)
run OMPTARGET_MPI_MAP="$long" "$L" --mpiexec "$tmp/mapbin" ./app
check "an OMPTARGET_MPI_MAP of 1,100 bytes reaches the ranks as it is" out_is "map<$long>"
check "... and the launcher says nothing of it" test ! -s "$tmp/err"
run OMPTARGET_MPI_MAP=' OFF ' "$L" --mpiexec "$tmp/mapbin" ./app
check "' OFF ' is off, as the plugin reads it" test "$status" -eq 0 -a ! -s "$tmp/err"

run MPIEXEC="$fake" "$L" ./app
check "MPIEXEC selects mpiexec" has "$tmp/out" "arg<./app>"

run PATH="$tmp/fakebin:$PATH" "$L" ./app
check "mpiexec is found in PATH" has "$tmp/out" "arg<./app>"

run MPIEXEC=/nonexistent/mpiexec "$L" --mpiexec "$fake" ./app
check "--mpiexec wins over MPIEXEC" test "$status" -eq 0

# ---- dry run -----------------------------------------------------------------

rm -f "$tmp/ran"
run LD_LIBRARY_PATH=/orig/lib "$L" --dry-run --mpiexec "$fake" -n 3 ./app 'a b' '' "it's"
check "--dry-run exits 0" test "$status" -eq 0
check "--dry-run runs nothing" test ! -e "$tmp/ran"
check "--dry-run prints LD_LIBRARY_PATH, the helper threads and the command, one line each" \
    out_is "LD_LIBRARY_PATH=$plugins:/orig/lib" "LIBOMP_NUM_HIDDEN_HELPER_THREADS=16" \
    "$fake -n 3 ./app 'a b' '' 'it'\\''s'"
line=$(sed -n 3p "$tmp/out")
eval "set -- $line"
check "the printed command reads back as the same words" \
    test "$#:$1:$2:$3:$4:$5:$6:$7" = "7:$fake:-n:3:./app:a b::it's"

# ---- the program among mpiexec's (or srun's) arguments ------------------------
#
# Read by each launcher's options and their values, so that an rsh agent,
# a hostfile or a working directory is never taken for the program: a
# program that requires unified shared memory (here: named usm_app, for
# the fake omptarget-mpi-requires beside the launcher) starts through
# omptarget-mpi-layout, inserted right before it. No command has setarch.

cat >"$tmp/omptarget-mpi-requires" <<'EOF2'
#!/bin/sh
case ${1##*/} in usm_app) echo "requires 0x8" ;; *) exit 1 ;; esac
EOF2
printf '#!/bin/sh\nexec "$@"\n' >"$tmp/omptarget-mpi-layout"
chmod +x "$tmp/omptarget-mpi-requires" "$tmp/omptarget-mpi-layout"
lay=$tmp/omptarget-mpi-layout
# program_case NAME WANT [NAME=VALUE...] LAUNCHER --dry-run ARGS...: the
# command (the last line) must be WANT, and stderr must name the program.
program_case() {
    name=$1 want=$2
    shift 2
    run "$@"
    check "program: $name" test "$(tail -n 1 "$tmp/out")" = "$want"
    check "program: $name: stderr names it" has "$tmp/err" "the program: "
}
program_case "hydra, the default" "$fake -n 2 $lay ./usm_app" "$L" --dry-run \
    --mpiexec "$fake" -n 2 ./usm_app
program_case "hydra, -launcher-exec's value is no program" \
    "$fake -launcher-exec /bin/true -n 2 $lay ./usm_app a" "$L" --dry-run \
    --mpiexec "$fake" -launcher-exec /bin/true -n 2 ./usm_app a
program_case "hydra, a hostfile, a working directory, -genv's two values" \
    "$fake -f /bin/true -wdir /tmp -genv A /bin/true -n 2 $lay ./usm_app" "$L" --dry-run \
    --mpiexec "$fake" -f /bin/true -wdir /tmp -genv A /bin/true -n 2 ./usm_app
program_case "hydra, '--' names the program and goes" \
    "$fake -n 2 -new-option $lay ./usm_app -- x" "$L" --dry-run \
    --mpiexec "$fake" -n 2 -new-option -- ./usm_app -- x
program_case "hydra, a program that does not require it" "$fake -n 2 ./plain_app" \
    "$L" --dry-run --mpiexec "$fake" -n 2 ./plain_app
check "... is named on stderr" has "$tmp/err" "the program: ./plain_app"
program_case "open mpi, an rsh agent, a hostfile, -x, a working directory" \
    "$fake -x LD_LIBRARY_PATH -x OMPTARGET_MPI_LAUNCHER -x LIBOMP_NUM_HIDDEN_HELPER_THREADS -x OMPTARGET_MPI_PLUGIN_DIR --mca plm_rsh_agent /bin/true --hostfile /bin/true -x FOO -wd /tmp -n 2 $lay ./usm_app" \
    "$tmp/launcher-openmpi" --dry-run --mpiexec "$fake" --mca plm_rsh_agent /bin/true --hostfile /bin/true -x FOO \
    -wd /tmp -n 2 ./usm_app
program_case "srun, --chdir, -w and -n values" \
    "$fake --mpi=pmi2 -n 2 --chdir /tmp -w /bin/true -n3 $lay ./usm_app" \
    SLURM_JOB_ID=1 "$L" --dry-run --srun --srun-path "$fake" -n 2 --chdir /tmp -w /bin/true -n3 ./usm_app
run OMPTARGET_MPI_USM=on "$L" --dry-run --mpiexec "$fake" -n 2 ./plain_app
check "OMPTARGET_MPI_USM=on: every program through the layout tool, said why" \
    test "$(tail -n 1 "$tmp/out")" = "$fake -n 2 $lay ./plain_app"
check "... OMPTARGET_MPI_USM=on named" has "$tmp/err" "OMPTARGET_MPI_USM=on"
run OMPTARGET_MPI_USM=off "$L" --dry-run --mpiexec "$fake" -n 2 ./usm_app
check "OMPTARGET_MPI_USM=off: no layout tool" \
    test "$(tail -n 1 "$tmp/out")" = "$fake -n 2 ./usm_app"
run "$L" --randomize --mpiexec "$fake" -n 2 ./usm_app
check "a real run: no setarch, the layout tool before the program" out_is \
    "LD_LIBRARY_PATH=$plugins" "OMPTARGET_MPI_LAUNCHER=1" "arg<-n>" "arg<2>" \
    "arg<$lay>" "arg<./usm_app>"
rm "$tmp/omptarget-mpi-requires" "$tmp/omptarget-mpi-layout"

# ---- libomp's hidden helper threads (target nowait regions in flight) --------------

cat >"$tmp/fakebin/mpiexec-helpers" <<'EOF2'
#!/bin/sh
printf 'helpers<%s>\n' "${LIBOMP_NUM_HIDDEN_HELPER_THREADS-unset}"
EOF2
chmod +x "$tmp/fakebin/mpiexec-helpers"
run "$L" --mpiexec "$tmp/fakebin/mpiexec-helpers" -n 3 ./app
check "the job gets libomp's maximum of hidden helper threads, 16" out_is "helpers<16>"
run LIBOMP_NUM_HIDDEN_HELPER_THREADS=4 "$L" --mpiexec "$tmp/fakebin/mpiexec-helpers" ./app
check "... but a value of the user's is kept" out_is "helpers<4>"
run LIBOMP_NUM_HIDDEN_HELPER_THREADS= "$L" --mpiexec "$tmp/fakebin/mpiexec-helpers" ./app
check "... even an empty one (libomp's to judge)" out_is "helpers<>"
run LIBOMP_NUM_HIDDEN_HELPER_THREADS=4 "$L" --dry-run --mpiexec "$fake" ./app
check "--dry-run shows no helper line for the user's value" \
    out_is "LD_LIBRARY_PATH=$plugins" "$fake ./app"
run "$L" --print-env
check "--print-env exports the helper threads" \
    has "$tmp/out" "export LIBOMP_NUM_HIDDEN_HELPER_THREADS=16"
run LIBOMP_NUM_HIDDEN_HELPER_THREADS=4 "$L" --print-env
check "... but not over the user's value" \
    test "$(grep -c LIBOMP_NUM_HIDDEN_HELPER_THREADS "$tmp/out")" -eq 0
run "$L" --help
check "--help names the helper threads" has "$tmp/out" "LIBOMP_NUM_HIDDEN_HELPER_THREADS"

# ---- rank 0's stderr into its stdout when ours are one file (2>&1) ------------

cat >"$tmp/fakebin/mpiexec-merge" <<'EOF2'
#!/bin/sh
printf 'merge<%s>\n' "${OMPTARGET_MPI_STDERR_TO_STDOUT-unset}"
EOF2
chmod +x "$tmp/fakebin/mpiexec-merge"
env "$L" --mpiexec "$tmp/fakebin/mpiexec-merge" -n 3 ./app >"$tmp/out" 2>&1
check "stdout and stderr one file: rank 0 is told to write its stderr to its stdout" \
    out_is "merge<1>"
run "$L" --mpiexec "$tmp/fakebin/mpiexec-merge" -n 3 ./app
check "... apart: not told" out_is "merge<unset>"
env OMPTARGET_MPI_STDERR_TO_STDOUT=off "$L" --mpiexec "$tmp/fakebin/mpiexec-merge" ./app \
    >"$tmp/out" 2>&1
check "... a value of the user's is kept" out_is "merge<off>"
env "$L" --dry-run --mpiexec "$fake" ./app >"$tmp/out" 2>&1
check "--dry-run shows the merge when it sets it" \
    out_is "omptarget-mpirun: the program: ./app" "LD_LIBRARY_PATH=$plugins" \
    "LIBOMP_NUM_HIDDEN_HELPER_THREADS=16" "OMPTARGET_MPI_STDERR_TO_STDOUT=1" "$fake ./app"

# ---- libomptarget's GPU plugins masked (gpu-off/) ------------------------------------

mkdir -p "$tmp/plugins-gpu/gpu-off"
: >"$tmp/plugins-gpu/libomptarget.rtl.x86_64.so"
run -u LD_LIBRARY_PATH OMPTARGET_MPI_PLUGIN_DIR="$tmp/plugins-gpu" "$L" --mpiexec "$fake" ./app
check "a plugin directory's gpu-off/ follows it in LD_LIBRARY_PATH" \
    has "$tmp/out" "LD_LIBRARY_PATH=$tmp/plugins-gpu:$tmp/plugins-gpu/gpu-off"
run -u LD_LIBRARY_PATH OMPTARGET_MPI_PLUGIN_DIR="$tmp/plugins-gpu" "$L" --gpu-plugins \
    --mpiexec "$fake" ./app
check "--gpu-plugins leaves it out" out_is "LD_LIBRARY_PATH=$tmp/plugins-gpu" \
    "OMPTARGET_MPI_LAUNCHER=1" "arg<./app>"
run -u LD_LIBRARY_PATH OMPTARGET_MPI_PLUGIN_DIR="$tmp/plugins-gpu" "$L" --print-env
check "--print-env has it too" \
    has "$tmp/out" "export LD_LIBRARY_PATH=$tmp/plugins-gpu:$tmp/plugins-gpu/gpu-off"
for name in libomptarget.rtl.cuda.so libomptarget.rtl.cuda.nextgen.so \
            libomptarget.rtl.amdgpu.so libomptarget.rtl.amdgpu.nextgen.so; do
    check "the build's gpu-off/$name is the library that is no plugin" \
        test "$(readlink "$build_plugin_dir/gpu-off/$name")" = ../libomptarget-mpi-none.so
done
check "... which defines no __tgt_rtl_ function" \
    test "$(nm -D --defined-only "$build_plugin_dir/libomptarget-mpi-none.so" | grep -c __tgt_rtl_)" -eq 0

# ---- help and usage ------------------------------------------------------------

run "$L" --help
check "--help exits 0" test "$status" -eq 0
check "--help shows usage" has "$tmp/out" "usage: omptarget-mpirun"
check "--help names the variables it sets" has "$tmp/out" "OMPTARGET_MPI_LAUNCHER=1"
check "--help names LD_LIBRARY_PATH" has "$tmp/out" "LD_LIBRARY_PATH"
check "--help has examples" has "$tmp/out" "omptarget-mpirun -n 3 ./app"
run "$L" --mpiexec "$fake"
check "no program is a usage error (2)" test "$status" -eq 2
run "$L" --mpiexec
check "--mpiexec without a path is a usage error (2)" test "$status" -eq 2

# ---- missing mpiexec -------------------------------------------------------------

msg="omptarget-mpirun: mpiexec not found; install an MPI (Debian: apt-get install mpich) or set MPIEXEC"
run PATH="$tmp/tools" "$L" -n 2 ./app
check "no mpiexec in PATH exits 127" test "$status" -eq 127
check "... with the message" has "$tmp/err" "$msg"
run MPIEXEC="$tmp/empty/mpiexec" "$L" ./app
check "MPIEXEC naming nothing exits 127" test "$status" -eq 127
run "$L" --mpiexec "$tmp/empty" ./app
check "--mpiexec naming a directory exits 127" test "$status" -eq 127
check "... with the message" has "$tmp/err" "$msg"
run PATH="$tmp/tools" "$L" --dry-run ./app
check "--dry-run also checks mpiexec" test "$status" -eq 127

# ---- Open MPI: -x for every variable the ranks need --------------------------------

O=$tmp/launcher-openmpi
nl='
'
run LD_LIBRARY_PATH=/orig/lib OMPTARGET_MPI_FRAGMENT_SIZE=4096 OMPCLUSTER_NUM_COMMS=2 \
    OMPTARGET_MPI_LOG_LEVEL=info OMPTARGET_OTHER=1 MT_X=1 \
    "OTHER=a${nl}OMPTARGET_MPI_FORGED=1" \
    "$O" --mpiexec "$fake" -n 3 ./app -x 'a b'
check "openmpi: status 0" test "$status" -eq 0
check "openmpi: -x for LD_LIBRARY_PATH, the launcher mark, each setting set (the job's map too), then the args" \
    out_is "LD_LIBRARY_PATH=$plugins:/orig/lib" "OMPTARGET_MPI_LAUNCHER=1" \
    "arg<-x>" "arg<LD_LIBRARY_PATH>" "arg<-x>" "arg<OMPTARGET_MPI_LAUNCHER>" \
    "arg<-x>" "arg<LIBOMP_NUM_HIDDEN_HELPER_THREADS>" "arg<-x>" "arg<OMPCLUSTER_NUM_COMMS>" \
    "arg<-x>" "arg<OMPTARGET_MPI_FRAGMENT_SIZE>" \
    "arg<-x>" "arg<OMPTARGET_MPI_LOG_LEVEL>" \
    "arg<-x>" "arg<OMPTARGET_MPI_MAP>" \
    "arg<-x>" "arg<OMPTARGET_MPI_PLUGIN_DIR>" \
    "arg<-n>" "arg<3>" "arg<./app>" "arg<-x>" "arg<a b>"
check "openmpi: a name inside another variable's value is not forwarded" \
    test "$(grep -c FORGED "$tmp/out")" -eq 0
run OMPTARGET_MPI_LAUNCHER=0 "$O" --mpiexec "$fake" ./app
check "openmpi: OMPTARGET_MPI_LAUNCHER is forwarded once" \
    test "$(grep -c -x 'arg<OMPTARGET_MPI_LAUNCHER>' "$tmp/out")" -eq 1
run "$O" --dry-run --mpiexec "$fake" -n 2 ./app
check "openmpi: --dry-run shows the -x options" out_is "LD_LIBRARY_PATH=$plugins" \
    "LIBOMP_NUM_HIDDEN_HELPER_THREADS=16" \
    "$fake -x LD_LIBRARY_PATH -x OMPTARGET_MPI_LAUNCHER -x LIBOMP_NUM_HIDDEN_HELPER_THREADS -x OMPTARGET_MPI_PLUGIN_DIR -n 2 ./app"
run FAKE_STATUS=5 "$O" --mpiexec "$fake" ./app
check "openmpi: mpiexec's exit status is returned" test "$status" -eq 5
run PATH="$tmp/twobin:$tmp/tools" "$O" ./app
check "openmpi: mpiexec.openmpi is preferred" out_is "ran mpiexec.openmpi"
run PATH="$tmp/tools" "$O" -n 2 ./app
check "openmpi: no mpiexec exits 127" test "$status" -eq 127
check "... naming Open MPI's package" has "$tmp/err" "apt-get install openmpi-bin) or set MPIEXEC"
run "$L" --help
check "--help says the plugin's MPI" has "$tmp/out" "This plugin was built for mpich."
run "$O" --help
check "... and what the launcher adds for Open MPI" has "$tmp/out" "-x LD_LIBRARY_PATH -x OMPTARGET_MPI_LAUNCHER"

# ---- plugin directory ---------------------------------------------------------------

run OMPTARGET_MPI_PLUGIN_DIR="$tmp/nonexistent" "$L" --mpiexec "$fake" ./app
check "a missing plugin directory exits 1" test "$status" -eq 1
check "... naming OMPTARGET_MPI_PLUGIN_DIR" has "$tmp/err" "OMPTARGET_MPI_PLUGIN_DIR"
check "... and running nothing" test ! -s "$tmp/out"
run OMPTARGET_MPI_PLUGIN_DIR="$tmp/empty" "$L" --mpiexec "$fake" ./app
check "a directory without the plugin exits 1" test "$status" -eq 1
check "... naming the plugin file" has "$tmp/err" "$tmp/empty/libomptarget.rtl.x86_64.so"

# An install-like prefix: the script finds lib/omptarget-mpi next to itself.
unset OMPTARGET_MPI_PLUGIN_DIR
prefix=$tmp/prefix
mkdir -p "$prefix/bin" "$prefix/lib" "$tmp/elsewhere"
cp "$launcher" "$prefix/bin/omptarget-mpirun"
cp -R -P "$build_plugin_dir" "$prefix/lib/omptarget-mpi"
: >"$prefix/lib/libomptarget.rtl.mpi.so"
ln -s "$prefix/bin/omptarget-mpirun" "$tmp/elsewhere/omptarget-mpirun"
want=$(cd "$prefix/lib/omptarget-mpi" && pwd -P)
dirs=$want:$want/gpu-off     # the plugin directory, then its GPU plugins' mask

# The program's MPI layer beside the plugin's links: preloaded into the
# job, before what LD_PRELOAD held; forwarded with -x by the Open MPI
# flavour; printed by --print-env. Without it (below), no LD_PRELOAD.
layer=$want/libomptarget-mpi-pmpi.so
check "the build's plugin dir holds the program's MPI layer" \
    test -f "$build_plugin_dir/libomptarget-mpi-pmpi.so"
run -u LD_LIBRARY_PATH LD_PRELOAD=/orig/pre.so "$prefix/bin/omptarget-mpirun" --dry-run \
    --mpiexec "$fake" ./app
check "--dry-run shows LD_PRELOAD: the layer first, then what it held" \
    out_is "LD_LIBRARY_PATH=$dirs" "LD_PRELOAD=$layer:/orig/pre.so" \
    "LIBOMP_NUM_HIDDEN_HELPER_THREADS=16" "$fake ./app"
run -u LD_PRELOAD "$prefix/bin/omptarget-mpirun" --print-env
check "--print-env exports LD_PRELOAD with the layer" \
    has "$tmp/out" "export LD_PRELOAD=$layer"
sed "s/^mpi_flavour=.*/mpi_flavour=openmpi/" "$prefix/bin/omptarget-mpirun" \
    >"$prefix/bin/omptarget-mpirun-openmpi"
chmod +x "$prefix/bin/omptarget-mpirun-openmpi"
run -u LD_LIBRARY_PATH -u LD_PRELOAD "$prefix/bin/omptarget-mpirun-openmpi" --dry-run \
    --mpiexec "$fake" ./app
check "openmpi: -x LD_PRELOAD after the launcher mark" \
    has "$tmp/out" "$fake -x LD_LIBRARY_PATH -x OMPTARGET_MPI_LAUNCHER -x LD_PRELOAD -x LIBOMP_NUM_HIDDEN_HELPER_THREADS ./app"
rm -f "$prefix/lib/omptarget-mpi/libomptarget-mpi-pmpi.so"
run -u LD_PRELOAD "$prefix/bin/omptarget-mpirun" --print-env
check "... without the layer, no LD_PRELOAD" test "$(grep -c LD_PRELOAD "$tmp/out")" -eq 0
for script in "$prefix/bin/omptarget-mpirun" "$tmp/elsewhere/omptarget-mpirun"; do
    (unset LD_LIBRARY_PATH; "$script" --dry-run --mpiexec "$fake" ./app \
        >"$tmp/out" 2>"$tmp/err")
    check "plugin dir found relative to $script" \
        out_is "LD_LIBRARY_PATH=$dirs" "LIBOMP_NUM_HIDDEN_HELPER_THREADS=16" "$fake ./app"
done
LD_LIBRARY_PATH=/orig "$prefix/bin/omptarget-mpirun" --mpiexec "$fake" ./app \
    >"$tmp/out" 2>"$tmp/err"
check "LD_LIBRARY_PATH starts with the plugin dir" \
    has "$tmp/out" "LD_LIBRARY_PATH=$dirs:/orig"
OMPTARGET_MPI_PLUGIN_DIR="$plugins" "$prefix/bin/omptarget-mpirun" --dry-run \
    --mpiexec "$fake" ./app >"$tmp/out" 2>"$tmp/err"
check "OMPTARGET_MPI_PLUGIN_DIR overrides the relative lookup" \
    has "$tmp/out" "LD_LIBRARY_PATH=$plugins"

rm "$prefix/lib/libomptarget.rtl.mpi.so"
"$prefix/bin/omptarget-mpirun" --mpiexec "$fake" ./app >"$tmp/out" 2>"$tmp/err"
status=$?
check "a dangling plugin link exits 1" test "$status" -eq 1
check "... saying so" has "$tmp/err" "dangling"
rm -r "$prefix/lib/omptarget-mpi"
"$prefix/bin/omptarget-mpirun" --mpiexec "$fake" ./app >"$tmp/out" 2>"$tmp/err"
status=$?
check "a missing lib/omptarget-mpi exits 1" test "$status" -eq 1

echo "1..$count"
[ "$failures" -eq 0 ] || { echo "# $failures of $count checks failed"; exit 1; }
