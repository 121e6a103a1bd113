#!/bin/sh
# test_launcher.sh LAUNCHER PLUGIN_DIR - omptarget-mpirun against a fake
# mpiexec that prints what it was given.
#
# LAUNCHER is the configured script in the build tree, PLUGIN_DIR the build
# tree's directory of plugin symlinks. The real plugin need not be built:
# the checks use a fake plugin file, or copies of the symlinks in a
# temporary prefix laid out like an install.
set -u
launcher=$1
build_plugin_dir=$2
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
L=$launcher
out_is() {
    printf '%s\n' "$@" >"$tmp/want"
    cmp -s "$tmp/want" "$tmp/out"
}
has() { grep -q -F -e "$2" "$1"; }

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
for t in readlink dirname sed cat; do
    ln -s "$(command -v "$t")" "$tmp/tools/$t"
done

unset MPIEXEC OMPTARGET_MPI_PLUGIN_DIR OMPTARGET_MPI_LAUNCHER
export FAKE_MARK="$tmp/ran"

# ---- the build tree ----------------------------------------------------------

check "launcher is executable" test -x "$launcher"
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
check "--dry-run prints LD_LIBRARY_PATH and the command, one line each" \
    out_is "LD_LIBRARY_PATH=$plugins:/orig/lib" \
    "$fake -n 3 ./app 'a b' '' 'it'\\''s'"
line=$(sed -n 2p "$tmp/out")
eval "set -- $line"
check "the printed command reads back as the same words" \
    test "$#:$1:$2:$3:$4:$5:$6:$7" = "7:$fake:-n:3:./app:a b::it's"

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

for script in "$prefix/bin/omptarget-mpirun" "$tmp/elsewhere/omptarget-mpirun"; do
    (unset LD_LIBRARY_PATH; "$script" --dry-run --mpiexec "$fake" ./app \
        >"$tmp/out" 2>"$tmp/err")
    check "plugin dir found relative to $script" \
        out_is "LD_LIBRARY_PATH=$want" "$fake ./app"
done
LD_LIBRARY_PATH=/orig "$prefix/bin/omptarget-mpirun" --mpiexec "$fake" ./app \
    >"$tmp/out" 2>"$tmp/err"
check "LD_LIBRARY_PATH starts with the plugin dir" \
    has "$tmp/out" "LD_LIBRARY_PATH=$want:/orig"
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
