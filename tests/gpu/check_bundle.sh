#!/bin/sh
# check_bundle.sh SOURCE BUILD WORK - the test gpu_bundle: builds the GPU
# check's archive from the build tree BUILD (ci/gpu-bundle.sh, this tree's
# MPI only; it builds the target otm_gpu_programs first, which a tree for
# Open MPI leaves out of its default target), unpacks it into
# WORK/elsewhere (not where it was staged: the bundle must be
# relocatable), and checks:
#   - it holds the five variants, sm_80, sm_90, jit_sm_70, jit_sm_80 and
#     jit_sm_90, and each program the images its variant promises
#     (gpu_probe images): sm_80/ an sm_80 cubin and x86_64, sm_90/ an
#     sm_90 cubin and x86_64, jit_sm_NN/ nvptx64 LLVM IR for sm_NN only;
#   - no ELF file of the bundle has a run path outside it ($ORIGIN only);
#   - gpu-check.sh, on a machine without the NVIDIA driver, says what is
#     missing in one line (libcuda.so.1) and exits 2, and runs nothing
#     (where the driver and a GPU are there, it must pass: 0 or 3);
#   - gpu-check.sh --cpu-only passes: both programs of the sm_80 and sm_90
#     variants on 2 device ranks with the host plugin's devices;
#   - its --help is the usage, whole; a bad --variant, and --cpu-only with
#     a jit variant, are refused with status 2.
# Prints one TAP line per check; exits 1 if any failed.
set -u
[ $# -eq 3 ] || { echo "usage: $0 SOURCE BUILD WORK" >&2; exit 2; }
src=$1 build=$2 work=$3
n=0 failures=0
check() {
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        failures=$((failures + 1))
    fi
}
# show FILE: a failed check's evidence.
show() { sed 's/^/    /' "$1"; }

rm -rf "$work"
mkdir -p "$work/elsewhere"
work=$(cd "$work" && pwd -P)
archive=$work/staged/omptarget-mpi-gpu.tar.gz
t0=$(date +%s)
sh "$src/ci/gpu-bundle.sh" --build-dir "$build" --openmpi-dir none \
    --out "$archive" >"$work/bundle.log" 2>&1
rc=$?
check $rc "ci/gpu-bundle.sh --build-dir BUILD builds the archive ($(( $(date +%s) - t0 )) s)"
[ $rc -eq 0 ] || { show "$work/bundle.log"; echo "# $n checks, $failures failed"; exit 1; }
sed -n 's/^bundle: \(.*tar\.gz\) /the archive: \1 /p' "$work/bundle.log" | sed "s|$work/||; s/^/# /"

tar -C "$work/elsewhere" -xzf "$archive"
check $? "it unpacks elsewhere"
b=$work/elsewhere/omptarget-mpi-gpu
rm -rf "$work/staged"

# ---- the images ----
"$b/programs/gpu_probe" images "$b"/programs/*/gpu_* >"$work/images.txt" 2>&1
check $? "gpu_probe images finds an image in every program"
# Every variant of tests/gpu/CMakeLists.txt, each with the images it
# promises, exactly (sorted, comma-separated): a jit variant its IR only,
# the others an x86_64 image and their cubin (any ELF ABI).
variants=$(for d in "$b"/programs/*/; do d=${d%/}; printf '%s ' "${d##*/}"; done)
[ "$variants" = "jit_sm_70 jit_sm_80 jit_sm_90 sm_80 sm_90 " ]
check $? "the bundle holds the variants sm_80, sm_90, jit_sm_70, jit_sm_80, jit_sm_90: $variants"
for v in sm_80 sm_90 jit_sm_70 jit_sm_80 jit_sm_90; do
    for p in gpu_matmul gpu_nowait; do
        got=$(sed -n "s|^$b/programs/$v/$p ||p" "$work/images.txt" | sort | tr '\n' ',')
        case $v in
        jit_*) want="llvm-ir nvptx64-nvidia-cuda ${v#jit_}," ;;
        *) want="cubin $v abi *,x86_64-elf," ;;
        esac
        ok=1
        # shellcheck disable=SC2254 # $want is a pattern
        case $got in $want) ok=0 ;; esac
        check $ok "programs/$v/$p holds exactly $(echo "${want%,}" | sed 's/ abi \*/ (any ABI)/; s/,/ and /'): ${got%,}"
    done
done

# ---- relocatable: run paths relative to $ORIGIN only ----
bad=$(find "$b" -type f | while read -r f; do
    readelf -d "$f" 2>/dev/null | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p' | tr ':' '\n' |
        while read -r p; do
            case $p in "\$ORIGIN"*) ;; *) printf '%s: %s\n' "${f#"$b"/}" "$p" ;; esac
        done
done)
[ -z "$bad" ]
check $? "no run path of the bundle leads outside it${bad:+: $bad}"

# ---- the check itself, here ----
if "$b/programs/gpu_probe" driver >"$work/driver.txt" 2>&1; then
    # A machine with the driver and a GPU: the real check must pass.
    sh "$b/gpu-check.sh" --logs "$work/logs-gpu" >"$work/gpu.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || [ $rc -eq 3 ]
    check $? "gpu-check.sh passes on this machine's GPUs (status $rc)"
    [ $rc -eq 0 ] || [ $rc -eq 3 ] || show "$work/gpu.log"
else
    t0=$(date +%s)
    sh "$b/gpu-check.sh" --logs "$work/logs-gpu" >"$work/gpu.log" 2>&1
    rc=$?
    took=$(( $(date +%s) - t0 ))
    [ $rc -eq 2 ]
    check $? "gpu-check.sh without the NVIDIA driver exits 2 (cannot run here): status $rc, $took s"
    line=$(cat "$work/gpu.log")
    [ "$(grep -c . "$work/gpu.log")" -eq 1 ] &&
        printf '%s\n' "$line" | grep -q '^gpu-check: cannot run here: .*libcuda\.so\.1'
    check $? "it says so in one line naming libcuda.so.1: $line"
    [ ! -e "$work/logs-gpu/summary" ]
    check $? "it ran no job"
fi

t0=$(date +%s)
sh "$b/gpu-check.sh" --cpu-only --logs "$work/logs-cpu" >"$work/cpu.log" 2>&1
rc=$?
check $rc "gpu-check.sh --cpu-only passes ($(( $(date +%s) - t0 )) s)"
[ $rc -eq 0 ] || show "$work/cpu.log"
for v in sm_80 sm_90; do
    for p in gpu_matmul gpu_nowait; do
        grep -q "^  PASS $v/$p: " "$work/cpu.log"
        check $? "its summary: $v/$p passed"
    done
done
grep -q '^  DEVICE 1 x86_64 device 0 of rank 1 on .* | ran on x86_64 in rank 1' "$work/cpu.log" &&
    grep -q '^  TIME compare device 1 ' "$work/cpu.log" &&
    grep -q '^  BAND rows 0\.\.' "$work/cpu.log"
check $? "it shows where each device's region ran, the times against the rank's CPU device, the bands"
! grep -q '^  CHECK exchange_across_ranks SKIP\|^  CHECK .* FAIL' "$work/cpu.log"
check $? "no check failed or was skipped for want of devices (4 host plugin devices a rank)"

sh "$b/gpu-check.sh" --help >"$work/help.log" 2>&1
rc=$?
[ $rc -eq 0 ] && head -n 1 "$work/help.log" | grep -q '^gpu-check.sh - ' &&
    tail -n 1 "$work/help.log" | grep -q 'see the README)\.$'
check $? "gpu-check.sh --help prints its usage, from its first line to the exit statuses (status $rc)"

sh "$b/gpu-check.sh" --variant sm_70 >"$work/bad.log" 2>&1
rc=$?
[ $rc -eq 2 ] && [ "$(grep -c . "$work/bad.log")" -eq 1 ] &&
    grep -q 'expected sm_80, sm_90, jit_sm_70, jit_sm_80 or jit_sm_90' "$work/bad.log"
check $? "a bad --variant is refused in one line naming the variants, status 2 ($rc): $(cat "$work/bad.log")"
sh "$b/gpu-check.sh" --cpu-only --variant jit_sm_80 >"$work/bad.log" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q 'jit ones hold no x86_64 image' "$work/bad.log"
check $? "--cpu-only with a jit variant is refused, status 2 ($rc)"

echo "# $n checks, $failures failed (logs in $work)"
# The unpacked bundle (180 MB) is kept only for a failure.
[ "$failures" -eq 0 ] || exit 1
rm -rf "$b"
