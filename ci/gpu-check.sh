#!/bin/sh
# gpu-check.sh - the GPU check, run from the unpacked bundle that
# ci/gpu-bundle.sh made (README.md beside this script): omptarget-mpi's
# device ranks serve the node's NVIDIA GPUs
# (OMPTARGET_MPI_REMOTE_PLUGINS=cuda) to a program on rank 0; the
# programs check every result against the host.
#
# usage: ./gpu-check.sh [--cpu-only] [--mpi mpich|openmpi] [--variant V]
#                       [--n N] [--m M] [--timeout S] [--logs DIR]
#
#   (default)     finds the MPI, the driver (libcuda.so.1) and the GPUs,
#                 then runs programs/<variant>/gpu_matmul and gpu_nowait
#                 on 3 ranks (rank 0 the program, ranks 1 and 2 devices,
#                 each serving its CPU and the node's GPUs): the variants
#                 for the GPUs' compute capability: 9.0 sm_90 and
#                 jit_sm_90, 8.x sm_80 and jit_sm_80, 7.x jit_sm_70 (the
#                 jit ones: LLVM IR that libomptarget 16 compiles for the
#                 GPU it finds)
#   --cpu-only    the same programs (sm_80 and sm_90 variants) on the
#                 node's host plugin devices instead of GPUs
#                 (OMPTARGET_MPI_REMOTE_PLUGINS=host): checks the bundle on
#                 any machine, no GPU nor driver needed
#   --mpi F       use that MPI (mpich or openmpi; default: the one whose
#                 mpiexec and library the machine has, mpiexec's own first)
#   --variant V   run only that variant (sm_80, sm_90, jit_sm_70,
#                 jit_sm_80, jit_sm_90)
#   --n N         gpu_matmul's matrix size (default 1536; --cpu-only 192)
#   --m M         gpu_nowait's elements a buffer (default 4194304; --cpu-only 65536)
#   --timeout S   a job that runs longer is ended and fails (default 600)
#   --logs DIR    keep each job's output there (default: a new directory
#                 in TMPDIR, named at the end)
#
# It prints what it found (the MPI, the libraries taken from the bundle,
# the driver, each GPU by CUDA's number and name), then per job the
# devices (DEVICE: which rank and plugin device, what its region reported
# from where it ran), the times (TIME: a GPU's matrix product against its
# rank's CPU device's), which device computed which rows (BAND), the
# exchanges' checks and every check that failed or was skipped (CHECK),
# the job's verdict, and at the end a summary.
#
# Exit status: 0 every check passed; 1 a check or a job failed; 2 it
# cannot run here, one line saying what is missing (no MPI launcher or
# library, no libcuda.so.1, no GPU, a library the bundle lacks); 3 a
# jit variant passed but the driver refused the cubins (a driver older
# than the toolkit that built them: see the README).
set -eu
me=gpu-check
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd -P)

cpu_only=0
mpi=
only=
n=
m=
timeout_s=600
logs=
while [ $# -gt 0 ]; do
    case $1 in
    --cpu-only) cpu_only=1; shift ;;
    --mpi) [ $# -ge 2 ] || { echo "$me: --mpi needs mpich or openmpi" >&2; exit 2; }
        mpi=$2; shift 2 ;;
    --variant) [ $# -ge 2 ] || { echo "$me: --variant needs a variant (try --help)" >&2; exit 2; }
        only=$2; shift 2 ;;
    --n) [ $# -ge 2 ] || { echo "$me: --n needs a number" >&2; exit 2; }
        n=$2; shift 2 ;;
    --m) [ $# -ge 2 ] || { echo "$me: --m needs a number" >&2; exit 2; }
        m=$2; shift 2 ;;
    --timeout) [ $# -ge 2 ] || { echo "$me: --timeout needs seconds" >&2; exit 2; }
        timeout_s=$2; shift 2 ;;
    --logs) [ $# -ge 2 ] || { echo "$me: --logs needs a directory" >&2; exit 2; }
        logs=$2; shift 2 ;;
    -h | --help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "$me: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done
for v in "$n" "$m" "$timeout_s"; do
    case $v in *[!0-9]* | 0*) echo "$me: '$v' is not a positive number" >&2; exit 2 ;; esac
done
case $only in
'' | sm_80 | sm_90 | jit_sm_70 | jit_sm_80 | jit_sm_90) ;;
*) echo "$me: --variant $only: expected sm_80, sm_90, jit_sm_70, jit_sm_80 or jit_sm_90" >&2; exit 2 ;;
esac
case $mpi in '' | mpich | openmpi) ;; *) echo "$me: --mpi $mpi: expected mpich or openmpi" >&2; exit 2 ;; esac
case $cpu_only:$only in
1:jit*)
    echo "$me: --cpu-only runs the sm_80 and sm_90 variants: the jit ones hold no x86_64 image" >&2
    exit 2 ;;
esac

# cannot WHAT: the one line, status 2.
cannot() {
    echo "$me: cannot run here: $*"
    exit 2
}
if [ ! -x "$here/programs/gpu_probe" ] || [ ! -d "$here/llvm-16/lib" ]; then
    echo "$me: $here is not an unpacked GPU check bundle (ci/gpu-bundle.sh)" >&2
    exit 2
fi

if [ -z "$logs" ]; then
    logs=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
else
    mkdir -p "$logs"
    logs=$(cd "$logs" && pwd)
fi

# ---- the libraries: the bundle's where the machine lacks them ----
# llvm-16/deps/ holds what libomptarget 16, its plugins and omptarget-mpi
# need beyond the C library and the MPI. The machine's own copy comes
# first; the bundle's are linked into $logs/libs/, which goes into
# LD_LIBRARY_PATH, for the names the machine does not have, and for those
# whose copy on the machine is too old (lacks a symbol version that is
# needed, as an older libstdc++ lacks libLLVM-16's GLIBCXX_3.4.30).
#
# needs FILE...: what ldd cannot resolve for the files, one a line:
# NAME (not found) or NAME (VERSION) (found without that symbol version).
needs() {
    for f in "$@"; do
        [ -e "$f" ] || continue
        ldd "$f" 2>&1 || true
    done | sed -n -e 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p' \
                  -e 's/.*: \([^ ]*\): version .\([^ ]*\). not found.*/\1 (\2)/p' |
        sed 's|^[^ ]*/||' | sort -u
}
libs=$logs/libs
rm -rf "$libs"
mkdir -p "$libs"
ldconfig_bin=$(command -v ldconfig || echo /sbin/ldconfig)
system_libs=$("$ldconfig_bin" -p 2>/dev/null | awk 'NR > 1 && /x86-64/ { print $1 }' || true)
from_bundle=
for f in "$here"/llvm-16/deps/*; do
    [ -e "$f" ] || continue
    name=${f##*/}
    if ! printf '%s\n' "$system_libs" | grep -qxF "$name"; then
        ln -s "$f" "$libs/$name"
        from_bundle="$from_bundle $name"
    fi
done
LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
# Every ELF file of the bundle that a job loads, but the MPI plugins (the
# MPI's own, below).
runtime() {
    needs "$here"/llvm-16/lib/libomptarget.so.16 "$here"/llvm-16/lib/libomptarget.rtl.*.so.16 \
        "$here"/llvm-16/lib/libomp.so.5 "$here"/programs/*/gpu_*
}
while :; do
    more=
    for name in $(runtime | awk '$2 ~ /^\(/ { print $1 }' | sort -u); do
        if [ -e "$here/llvm-16/deps/$name" ] && [ ! -e "$libs/$name" ]; then
            ln -s "$here/llvm-16/deps/$name" "$libs/$name"
            from_bundle="$from_bundle $name"
            more=1
        fi
    done
    [ -n "$more" ] || break
done

# ---- the MPI ----
# A flavour fits when the bundle holds it, its mpiexec is here and its
# plugin's libraries resolve.
launcher_of() { printf '%s\n' "$here/$1/bin/omptarget-mpirun"; }
mpiexec_of() {
    case $1 in
    mpich) names=mpiexec.mpich want='HYDRA|MPICH' ;;
    *) names=mpiexec.openmpi want='Open MPI|OpenRTE' ;;
    esac
    for x in $names mpiexec mpirun; do
        p=$(command -v "$x" 2>/dev/null) || continue
        [ "$x" = "$names" ] && { printf '%s\n' "$p"; return 0; }
        "$p" --version 2>&1 | grep -qE "$want" && { printf '%s\n' "$p"; return 0; }
    done
    return 1
}
unresolved() {
    needs "$here/$1/lib/libomptarget.rtl.mpi.so" | tr '\n' ' '
}
why_not=
fits() {
    [ -f "$(launcher_of "$1")" ] || { why_not="$why_not; the bundle has no $1/"; return 1; }
    mpiexec_of "$1" >/dev/null || { why_not="$why_not; no $1 launcher (mpiexec.$1, or an mpiexec of $1)"; return 1; }
    u=$(unresolved "$1")
    [ -z "$u" ] || { why_not="$why_not; $1's plugin lacks ${u% }"; return 1; }
    return 0
}
if [ -n "$mpi" ]; then
    fits "$mpi" || cannot "MPI $mpi: ${why_not#; }"
else
    # The flavour of plain 'mpiexec' first (the machine's default).
    first=openmpi second=mpich
    if mpiexec --version 2>&1 | grep -qE 'HYDRA|MPICH'; then first=mpich second=openmpi; fi
    if fits "$first"; then mpi=$first
    elif fits "$second"; then mpi=$second
    else
        cannot "no MPI the bundle can use: ${why_not#; } (Ubuntu: apt-get install openmpi-bin or mpich)"
    fi
fi
mpiexec=$(mpiexec_of "$mpi")
launcher=$(launcher_of "$mpi")
# Open MPI: root allowed, cores oversubscribed (3 ranks on fewer cores).
export OMPI_ALLOW_RUN_AS_ROOT="${OMPI_ALLOW_RUN_AS_ROOT:-1}"
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}"
export OMPI_MCA_rmaps_base_oversubscribe="${OMPI_MCA_rmaps_base_oversubscribe:-1}"

# libomptarget 16, its plugins and the programs load with the libraries
# above (a C library older than the one they were built against: here).
u=$(runtime | tr '\n' ' ')
[ -z "$u" ] || cannot "the programs and libomptarget 16 need ${u% } (neither the machine nor the bundle's llvm-16/deps has it)"
command -v timeout >/dev/null 2>&1 || cannot "no timeout command (coreutils), which bounds each job"

# ---- the driver and the GPUs ----
variants=
gpu_lines=
if [ "$cpu_only" -eq 1 ]; then
    plugins=host
    variants="sm_80 sm_90"
    n=${n:-192} m=${m:-65536}
    gpu_lines="$me: --cpu-only: the host plugin's devices stand for the GPUs (OMPTARGET_MPI_REMOTE_PLUGINS=host)"
else
    plugins=cuda
    n=${n:-1536} m=${m:-4194304}
    if ! probe=$("$here/programs/gpu_probe" driver 2>&1); then
        cannot "$(printf '%s\n' "$probe" | sed -n '1s/^missing: //p')"
    fi
    ver=$(printf '%s\n' "$probe" | awk '$1 == "driver" { print $2 }')
    cudalib=$(printf '%s\n' "$probe" | awk '$1 == "driver" { print $3 }')
    gpu_lines="$me: NVIDIA driver $((ver / 1000)).$((ver % 1000 / 10)) ($cudalib)"
    # libomptarget 16's CUDA plugins open libcuda.so, not libcuda.so.1:
    # where the driver installed only the latter, the jobs get a link.
    if printf '%s\n' "$probe" | grep -qx 'libcuda.so missing'; then
        case $cudalib in
        /*) ln -s "$cudalib" "$libs/libcuda.so"
            gpu_lines="$gpu_lines
$me: no libcuda.so (the name libomptarget 16's CUDA plugin opens): linked to $cudalib for the jobs" ;;
        *) cannot "libcuda.so, the name libomptarget 16's CUDA plugin opens (the driver's libcuda.so.1 loads, from no path a link could name)" ;;
        esac
    fi
    gpu_lines="$gpu_lines
$(printf '%s\n' "$probe" | awk '$1 == "gpu" { name = $0; sub(/.* name /, "", name)
        printf "  GPU %s (cuda device %s of every device rank of this node): %s, compute capability %s.%s, %s MiB, PCI %s\n",
               $2, $2, name, substr($4, 1, length($4) - 1), substr($4, length($4)), $6, $8 }')"
    # libomptarget 16 gives a GPU a program's image (cubin or IR) only when
    # it was built for the GPU's major compute capability, at or below its
    # minor one: the variants by the GPUs' major (one for all of them).
    majors=$(printf '%s\n' "$probe" | awk '$1 == "gpu" { print substr($4, 1, length($4) - 1) }' | sort -u)
    ccs=$(printf '%s\n' "$probe" | awk '$1 == "gpu" && !seen[$4]++ { printf "%s%s.%s", n++ ? ", " : "", substr($4, 1, length($4) - 1), substr($4, length($4)) }')
    case $(printf '%s\n' "$majors" | tr '\n' ' ') in
    "7 ") variants="jit_sm_70" ;;
    "8 ") variants="sm_80 jit_sm_80" ;;
    "9 ") variants="sm_90 jit_sm_90" ;;
    *\ *\ *) cannot "GPUs of several compute capabilities ($ccs): one program holds images for one; choose GPUs of one with CUDA_VISIBLE_DEVICES" ;;
    *) cannot "a GPU the bundle's programs fit: compute capability $ccs (they hold code for 7.x, 8.x and 9.0: LLVM 16 knows no later GPU)" ;;
    esac
    gpu_lines="$gpu_lines
$me: variants for compute capability $ccs: $variants (jit: libomptarget 16's CUDA plugin compiles the IR with the bundle's LLVM 16 to PTX, which the driver compiles: no ptxas needed)"
fi
[ -z "$only" ] || variants=$only

# Everything it needs is here: what it found, before the jobs.
case $mpi in
mpich) mpi_version=$("$mpiexec" --version 2>&1 | sed -n 's/^[[:space:]]*Version:[[:space:]]*/MPICH /p' | head -n 1) ;;
*) mpi_version=$("$mpiexec" --version 2>&1 | sed -n 's/^[^ ]* (\(Open MPI\|OpenRTE\)) /Open MPI /p' | head -n 1) ;;
esac
echo "$me: bundle $here ($(sed -n 's/^built: //p' "$here/MANIFEST" 2>/dev/null))"
echo "$me: MPI: ${mpi_version:-$mpi} ($mpiexec), the bundle's $mpi/ plugin and launcher"
echo "$me: libraries from the bundle (the machine lacks them or has older ones):${from_bundle:- none}"
[ -z "$gpu_lines" ] || printf '%s\n' "$gpu_lines"

# Only the settings given here apply.
for v in $(env | sed -n 's/^\(OMPTARGET_MPI_[A-Za-z0-9_]*\|OMPCLUSTER_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done
unset OMP_TARGET_OFFLOAD LIBOMPTARGET_INFO LIBOMPTARGET_DEBUG 2>/dev/null || true

# ---- the jobs ----
passed=0 failed=0 refused=0
last_devices=
summary=$logs/summary
: >"$summary"
# job VARIANT PROGRAM ARGS...: one job on 3 ranks; its output in
# $logs/VARIANT-PROGRAM.log; what it says, condensed, here.
job() {
    v=$1 prog=$2
    shift 2
    log=$logs/$v-$prog.log
    echo
    echo "== $v/$prog $* (3 ranks: the program, 2 device ranks; OMPTARGET_MPI_REMOTE_PLUGINS=$plugins)"
    t0=$(date +%s)
    status=0
    # The command, to run it again by hand.
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH OMPTARGET_MPI_REMOTE_PLUGINS=$plugins" \
         "OMPTARGET_MPI_INFO=1 OMPTARGET_MPI_LOG_LEVEL=info MPIEXEC=$mpiexec" \
         "$launcher -n 3 $here/programs/$v/$prog $*" >"$log.command"
    env OMPTARGET_MPI_REMOTE_PLUGINS=$plugins OMPTARGET_MPI_INFO=1 OMPTARGET_MPI_LOG_LEVEL=info \
        MPIEXEC="$mpiexec" timeout -k 10 "$timeout_s" \
        "$launcher" -n 3 "$here/programs/$v/$prog" "$@" >"$log" 2>&1 || status=$?
    took=$(( $(date +%s) - t0 ))
    # What the proxied plugins said; the job's device map (OMPTARGET_MPI_INFO)
    # and where each device's regions ran, when they differ from the last
    # job's; the rows each device computed, the times, the exchanges, and
    # the checks that failed or were skipped.
    grep -E '^omptarget-mpi: .*plugin [a-z0-9_]+ (skipped|:)' "$log" | sort -u | sed 's/^/  /' || true
    grep -E '^omptarget-mpi: device [0-9]+:' "$log" >"$logs/map.now" || true
    devices=$(grep -E '^DEVICE ' "$log" | sed 's/pid [0-9]*/pid -/' || true)
    if ! sed 's/pid [0-9]*/pid -/' "$logs/map.now" | cmp -s - "$logs/map.last" 2>/dev/null ||
        [ "$devices" != "$last_devices" ]; then
        sed 's/^/  /' "$logs/map.now"
        grep -E '^DEVICE ' "$log" | sed 's/^/  /' || true
    else
        echo "  (the devices as in the job before)"
    fi
    sed 's/pid [0-9]*/pid -/' "$logs/map.now" >"$logs/map.last"
    last_devices=$devices
    grep -E '^(BAND|TIME) |^CHECK (exchange_|nowait_ring)|^CHECK [^ ]+ (FAIL|SKIP) ' "$log" |
        sed 's/^/  /' || true
    verdict=$(grep -E "^(PASS|FAIL) $prog:" "$log" | tail -n 1 || true)
    if [ "$status" -eq 0 ] && [ "${verdict%% *}" = PASS ]; then
        echo "  $verdict ($took s)"
        echo "PASS $v/$prog: ${verdict#PASS "$prog": }" >>"$summary"
        passed=$((passed + 1))
        return 0
    fi
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        what="hung: ended after $timeout_s s (--timeout)"
    elif [ "${v#jit}" = "$v" ] && grep -q 'cuModuleLoadDataEx' "$log"; then
        what="the driver refused the $v cubin: $(grep -m 1 'cuModuleLoadDataEx' "$log" | sed 's/^[[:space:]]*//')"
        refused=$((refused + 1))
        echo "  REFUSED $what"
        echo "REFUSED $v/$prog: $what" >>"$summary"
        return 0
    elif [ -n "$verdict" ]; then
        what="$verdict, exit status $status"
    else
        what="exit status $status, no verdict line: $(grep -E -m 1 'omptarget-mpi.*(failed|error|skipped)|FAIL|rror' "$log" || tail -n 1 "$log")"
    fi
    echo "  FAILED: $what (output: $log)"
    # What the ranks and libomptarget said of it.
    grep -E '^(omptarget-mpi: (rank [0-9]+: )?[^ ].*(failed|refused|cannot|not |no )|Libomptarget (error|fatal))' "$log" |
        grep -v 'exited cleanly' | head -n 8 | sed 's/^/    /' || true
    echo "FAIL $v/$prog: $what" >>"$summary"
    failed=$((failed + 1))
}

for v in $variants; do
    job "$v" gpu_matmul --n "$n"
    job "$v" gpu_nowait --m "$m"
done

echo
echo "== summary ($mpi, OMPTARGET_MPI_REMOTE_PLUGINS=$plugins)"
sed 's/^/  /' "$summary"
echo "$me: logs in $logs"
if [ "$failed" -ne 0 ]; then
    echo "$me: FAILED: $failed of $((passed + failed + refused)) jobs"
    exit 1
fi
if [ "$refused" -ne 0 ]; then
    if grep -q '^PASS jit_' "$summary"; then
        echo "$me: the GPUs passed through their jit variant; the driver refused the cubins" \
             "(the bundle's toolkit is newer than this driver: see the README)"
        exit 3
    fi
    echo "$me: FAILED: the driver refused the cubins, and no jit variant ran (--variant) to show that the GPUs work"
    exit 1
fi
echo "$me: PASSED: $passed jobs, every check"
