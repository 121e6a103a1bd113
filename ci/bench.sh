#!/bin/sh
# ci/bench.sh - measures the plugin against raw MPI in one run and writes
# the figures as a table (Markdown), a JSON file and a bandwidth plot (PNG).
#
# usage: ci/bench.sh [--quick] [--update-docs] [--build-dir DIR] [--out DIR]
#
#   (default)      every figure is the median of 5 runs (BENCH_RUNS=N for
#                  more), sizes 64 KiB .. 256 MiB, 10,000 nowait regions;
#                  the raw MPI baseline and the two main jobs, whose
#                  figures are divided by it, run in 3 alternating rounds
#                  (1 with --quick; BENCH_ROUNDS=N), their figures the
#                  median of the rounds' medians; so do the application
#                  kernels on the stock plugin and on this one;
#                  results in bench/results/<host>-<date>.{md,json,png}
#   --quick        every measurement once with small sizes (1,000 nowait
#                  regions): checks that everything builds and runs; results
#                  in <build dir>/bench/quick
#   --update-docs  also copies the tables, JSON and plot to docs/bench/
#   --build-dir D  use the build tree D as it is (no setup, no build);
#                  without it: ci/setup.sh, then configure and build build/
#   --out DIR      write the results there instead
#
# All jobs run under the mpiexec of the plugin's MPI (mpiexec.mpich, or
# mpiexec.openmpi in an Open MPI tree; 2 ranks, 3 for the nowait runs): the
# raw MPI baseline (bench_raw), the plugin through its ABI (bench_abi,
# OMPTARGET_MPI_LAUNCHER=1) and an OpenMP program built by clang-14 through
# omptarget-mpirun (bench_omp); application-like kernels (bench_apps)
# through omptarget-mpirun and on the stock in-process plugin, the
# fine-grained ones also beside one competing busy process; the scale-out
# jobs of ci/bench_scale.sh (up to 65 ranks), whose table goes to
# <name>-scale.md (docs/bench/scale.md).
# The plugin runs with its
# default settings, but for OMPTARGET_MPI_POOL_MAX=64M in the main jobs (the
# map cycle's buffer stays in the pool) and OMPTARGET_MPI_POOL=off and
# OMPTARGET_MPI_IDLE=spin in the runs named so. Nothing is asserted about time: the exit status is
# non-zero only when a job fails or the nowait regions' results are wrong.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)

mode=full
update_docs=0
build_dir=
out=
while [ $# -gt 0 ]; do
    case $1 in
    --quick) mode=quick; shift ;;
    --update-docs) update_docs=1; shift ;;
    --build-dir) [ $# -ge 2 ] || { echo "bench.sh: --build-dir needs a directory" >&2; exit 2; }
        build_dir=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || { echo "bench.sh: --out needs a directory" >&2; exit 2; }
        out=$2; shift 2 ;;
    -h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
done

if [ -z "$build_dir" ]; then
    build_dir=build
    sh ci/setup.sh
    cmake -S . -B "$build_dir" >/dev/null
    cmake --build "$build_dir" -j "$(nproc)" --target bench_raw bench_abi \
        bench_omp_program bench_apps_program bench_scale_program bench_usm_program \
        bench_host_code_program bench_remote_program sim_model \
        omptarget_rtl_mpi omptarget_mpi_pmpi omptarget_mpi_none omptarget-mpi-witness
    for v in 16 19; do      # where that clang is: bench_scale16, bench_scale19
        cmake --build "$build_dir" --target "bench_scale${v}_program" >/dev/null 2>&1 || true
    done
fi
build_dir=$(cd "$build_dir" && pwd)
for f in bench/bench_raw bench/bench_abi bench/bench_omp bench/bench_apps bench/bench_scale \
         bench/bench_usm bench/bench_host_code bench/bench_remote bench/sim_model \
         bin/omptarget-mpirun; do
    [ -x "$build_dir/$f" ] || { echo "bench.sh: $build_dir/$f is missing: build first" >&2; exit 1; }
done
# The mpiexec of the MPI the build's plugin links (the launcher says which).
flavour=$(sed -n 's/^mpi_flavour=//p' "$build_dir/bin/omptarget-mpirun")
case $flavour in openmpi) mpiexec_name=mpiexec.openmpi pkg=openmpi-bin ;;
                 *) mpiexec_name=mpiexec.mpich pkg=mpich ;; esac
mpiexec=$(command -v "$mpiexec_name" || true)
[ -n "$mpiexec" ] || { echo "bench.sh: $mpiexec_name not found (Debian package $pkg)" >&2; exit 1; }
# Open MPI: root allowed, cores oversubscribed (many ranks on a few cores).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

stamp=$(date -u +%Y%m%dT%H%M%SZ)
# Other work on the machine skews every figure: the load is part of the record.
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
if [ -z "$out" ]; then
    if [ "$mode" = quick ]; then out=$build_dir/bench/quick; else out=bench/results; fi
fi
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
name=$(hostname -s 2>/dev/null || echo host)-$stamp
[ "$mode" = quick ] && name=quick
figures=$out/$name.figures
: >"$figures"

# Only the settings given per job apply.
for v in $(env | sed -n 's/^\(OMPTARGET_MPI_[A-Za-z0-9_]*\|OMPCLUSTER_[A-Za-z0-9_]*\)=.*/\1/p'); do
    unset "$v"
done

failed=0
# job NAME [NAME=VALUE...] -- COMMAND...: runs one job, keeps its output in
# logs/NAME.log and its BENCH and CHECK lines in the figures file.
job() {
    jname=$1
    shift
    envs=
    while [ "$1" != -- ]; do envs="$envs $1"; shift; done
    shift
    log=$out/logs/$jname.log
    echo "bench: $jname:${envs:+$envs} $*" | sed "s|$build_dir/||g"
    # shellcheck disable=SC2086
    if env $envs timeout -k 10 900 "$@" >"$log" 2>&1; then
        status=0
    else
        status=$?
    fi
    grep -E '^(BENCH|CHECK) ' "$log" >>"$figures" || true
    if [ "$status" -ne 0 ]; then
        echo "bench: $jname FAILED (exit status $status); its output:"
        sed 's/^/    /' "$log"
        failed=$((failed + 1))
    fi
}

b=$build_dir/bench
run=$build_dir/bin/omptarget-mpirun
# The main jobs let the pool keep the map cycle's buffer (64 MiB; the
# default OMPTARGET_MPI_POOL_MAX is 16 MiB): the cycle runs with the pool warm.
pool_max=OMPTARGET_MPI_POOL_MAX=64M
# The baseline and the jobs divided by it alternate, round after round: on
# a shared machine the raw round trip and bandwidth move by up to 4x from
# one minute to the next (docs/testing.md), and a baseline measured once,
# before, would skew every ratio by wherever the machine was then.
rounds=3
[ "$mode" = quick ] && rounds=1
rounds=${BENCH_ROUNDS:-$rounds}
case $rounds in '' | *[!0-9]* | 0) echo "bench.sh: BENCH_ROUNDS must be a positive integer" >&2; exit 2 ;; esac
r=1
while [ "$r" -le "$rounds" ]; do
    job "raw-$r" -- "$mpiexec" -n 2 "$b/bench_raw" "$mode"
    job "abi-main-$r" OMPTARGET_MPI_LAUNCHER=1 $pool_max -- \
        "$mpiexec" -n 2 "$b/bench_abi" main "$mode"
    job "omp-main-$r" MPIEXEC="$mpiexec" $pool_max -- "$run" -n 2 "$b/bench_omp" main "$mode"
    r=$((r + 1))
done
job abi-pool-off OMPTARGET_MPI_LAUNCHER=1 OMPTARGET_MPI_POOL=off -- \
    "$mpiexec" -n 2 "$b/bench_abi" alloc "$mode" pool_off
job abi-idle-spin OMPTARGET_MPI_LAUNCHER=1 OMPTARGET_MPI_IDLE=spin -- \
    "$mpiexec" -n 2 "$b/bench_abi" idle "$mode" spin
job abi-nowait OMPTARGET_MPI_LAUNCHER=1 -- "$mpiexec" -n 3 "$b/bench_abi" nowait "$mode"
job omp-pool-off MPIEXEC="$mpiexec" OMPTARGET_MPI_POOL=off -- \
    "$run" -n 2 "$b/bench_omp" alloc "$mode" pool_off
job omp-idle-spin MPIEXEC="$mpiexec" OMPTARGET_MPI_IDLE=spin -- \
    "$run" -n 2 "$b/bench_omp" idle "$mode" spin
job omp-nowait MPIEXEC="$mpiexec" -- "$run" -n 3 "$b/bench_omp" nowait "$mode"
# The same regions on libomptarget 14's own in-process plugin: the rate
# libomptarget's nowait path allows without any transport.
job omp-nowait-stock -- env -u LD_LIBRARY_PATH -u LD_PRELOAD "$b/bench_omp" nowait "$mode" stock 2
# The cost of forwarding the regions' output: the same regions with it on
# (the default) and off, one job each.
job omp-regions-on MPIEXEC="$mpiexec" -- "$run" -n 2 "$b/bench_omp" regions "$mode" on
job omp-regions-off MPIEXEC="$mpiexec" OMPTARGET_MPI_FORWARD_OUTPUT=off -- \
    "$run" -n 2 "$b/bench_omp" regions "$mode" off
# The same with every polling thread spinning (OMPTARGET_MPI_IDLE=spin):
# the latency the plugin adds when cores are there to burn.
job omp-regions-spin MPIEXEC="$mpiexec" OMPTARGET_MPI_IDLE=spin -- \
    "$run" -n 2 "$b/bench_omp" regions "$mode" spin
# The same regions on libomptarget 14's own in-process plugin: what
# libomptarget itself spends per region, which every plugin's figure holds.
job omp-regions-stock -- env -u LD_LIBRARY_PATH -u LD_PRELOAD "$b/bench_omp" regions "$mode" stock

# What users offload, against the stock in-process plugin: the same
# program on libomptarget 14's own x86_64 plugin (no launcher; 1 of its
# devices) and on this plugin with 1 and 2 devices. The fine-grained parts
# once (they take most of the run); the kernels, divided by the stock
# plugin's, in alternating rounds as the main jobs are.
apps_stock() { job "$1" -- env -u LD_LIBRARY_PATH -u LD_PRELOAD "$b/bench_apps" "$2" "$mode" stock 1; }
apps_ours() { job "$1" MPIEXEC="$mpiexec" -- "$run" -n $(($3 + 1)) "$b/bench_apps" "$2" "$mode" "ours$3" "$3"; }
apps_stock apps-stock-fine fine,sync4k
apps_ours apps-ours1-fine fine,sync4k 1
apps_ours apps-ours2-fine fine,sync4k 2
r=1
while [ "$r" -le "$rounds" ]; do
    apps_stock "apps-stock-$r" xs,stencil,dense,threads
    apps_ours "apps-ours1-$r" xs,stencil,dense,threads 1
    apps_ours "apps-ours2-$r" xs,stencil,dense,threads 2
    r=$((r + 1))
done
# The fine-grained parts again beside one competing busy process (a shell
# loop), on the stock plugin and on ours with 2 devices.
busy_job() {
    sh -c 'while :; do :; done' &
    busy=$!
    job "$@"
    kill "$busy" 2>/dev/null || true
    wait "$busy" 2>/dev/null || true
}
for part in fine sync4k; do
    busy_job "apps-stock-busy-$part" -- env -u LD_LIBRARY_PATH -u LD_PRELOAD \
        "$b/bench_apps" "$part" "$mode" stockbusy 1
    busy_job "apps-ours2-busy-$part" MPIEXEC="$mpiexec" -- \
        "$run" -n 3 "$b/bench_apps" "$part" "$mode" ours2busy 2
done

# Unified shared memory: host pages on demand against the same mapped, and
# an empty region with the setting on and off.
job usm-on MPIEXEC="$mpiexec" OMPTARGET_MPI_USM=on -- "$run" -n 2 "$b/bench_usm" "$mode" on
job usm-off MPIEXEC="$mpiexec" OMPTARGET_MPI_USM=off -- "$run" -n 2 "$b/bench_usm" "$mode" off

# Calls through rank 0's addresses: a host function pointer, a constant
# table, against a device function pointer.
job host-code MPIEXEC="$mpiexec" -- "$run" -n 2 "$b/bench_host_code" "$mode"

# A device of the node's host plugin, proxied by rank 1, against rank 1's
# own CPU device: an empty region, a 1 MiB round trip.
job remote MPIEXEC="$mpiexec" OMPTARGET_MPI_REMOTE_PLUGINS=host -- \
    "$run" -n 2 "$b/bench_remote" "$mode"

# Scale-out: regions in flight, strong scaling, many devices (bench_scale.sh).
. ci/bench_scale.sh
scale_jobs

# ---- the table, the JSON file, the plot ----
mpich=$(mpichversion 2>/dev/null | sed -n 's/^MPICH Version:[[:space:]]*//p')
cpus=$(nproc)
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
runs=$(awk '$1 == "BENCH" { print $7; exit }' "$figures")
machine="$cpus CPU(s), ${model:-unknown CPU}, MPICH ${mpich:-unknown}, $(date -u +%Y-%m-%d), load average $load at the start"

# A figure the rounds measured several times becomes one: the median of
# the rounds' medians, the least of their minima, the most of their
# maxima, all their runs; a check, its first result or a failure. The
# rest reads the folded file.
all_rounds=$figures.rounds
mv "$figures" "$all_rounds"
awk -f ci/bench_fold.awk "$all_rounds" >"$figures"

awk -f ci/bench_report.awk -v md="$out/$name.md" -v json="$out/$name.json" \
    -v dat="$out/$name.dat" -v machine="$machine" -v mode="$mode" -v runs="${runs:-0}" \
    -v rounds="$rounds" "$figures"

png=$out/$name.png
# Tick labels at the measured sizes: 64 KiB, 1 MiB, ...
xtics=$(awk '!/^#/ { b = $1; l = b >= 1048576 ? b / 1048576 " MiB" : b / 1024 " KiB"
                    printf "%s\"%s\" %s", n++ ? ", " : "", l, b }' "$out/$name.dat")
if command -v gnuplot >/dev/null 2>&1; then
    gnuplot <<EOF
set terminal pngcairo size 900,600 noenhanced
set output '$png'
set title "omptarget-mpi: bandwidth against transfer size (2 ranks, medians)\n$machine" font ',10'
set logscale x 2
set xtics ($xtics)
set offsets graph 0.04, graph 0.04, 0, 0
set xlabel 'transfer size'
set ylabel 'MiB/s'
set key outside below
set grid
set yrange [0:*]
plot '$out/$name.dat' using 1:2 with linespoints lw 2 title 'raw MPI one-way, rank 0 to 1', \
     '' using 1:3 with linespoints lw 2 title 'raw MPI one-way, rank 1 to 0', \
     '' using 1:4 with linespoints title 'plugin submit (ABI)', \
     '' using 1:5 with linespoints title 'plugin retrieve (ABI)', \
     '' using 1:6 with linespoints dt 2 title 'plugin submit (OpenMP update to)', \
     '' using 1:7 with linespoints dt 2 title 'plugin retrieve (OpenMP update from)'
EOF
elif [ "$mode" = full ]; then
    echo "bench.sh: gnuplot not found (Debian package gnuplot-nox, ci/setup.sh)" >&2
    failed=$((failed + 1))
else
    echo "bench: gnuplot not found: no plot (quick mode)"
    png=
fi

# ---- the scaling model (bench/sim_model.c) ----
# The simulator with this run's figures: the wire's latency is half the raw
# round trip, its bandwidth the raw one at 1 MiB, the software's overhead per
# message half of what an empty region costs beyond the raw round trip, a
# stencil cell what the stock plugin's stencil took per cell and step. The
# same overhead on two links this machine cannot offer.
model=$out/$name-model.md
# The stencil's cells and steps are bench_apps'; the model simulates fewer
# steps and regions (its figures are per step and per second: the same
# after the first few) to keep to a few minutes.
if [ "$mode" = quick ]; then
    mcells=262144 asteps=20 msteps=5 mregions=200
else
    mcells=4194304 asteps=100 msteps=20 mregions=2000
fi
# shellcheck disable=SC2046
set -- $(awk -v cells="$mcells" -v steps="$asteps" '$1 == "BENCH" { med[$2] = $4 }
    END { rtt = med["raw_rtt_8B"]; empty = med["abi_empty_region"]
          bw = med["raw_bw_1M"]; st = med["app_stencil_stock"]
          if (!rtt || !empty || !bw || !st) exit
          ovh = (empty - rtt) * 500; if (ovh < 0) ovh = 0
          printf "%d %d %.0f %.6g\n", rtt * 500, ovh, bw * 1048576, st * 1e9 / (cells * steps) }' \
    "$figures")
if [ $# -eq 4 ] && [ -x "$build_dir/bench/sim_model" ]; then
    echo "bench: model: latency $1 ns, overhead $2 ns per message, $3 B/s, $4 ns per stencil cell"
    {
        echo "Predicted by \`bench/sim_model\` from the figures of this run" \
             "($machine): wire latency $1 ns (half the raw round trip), software overhead" \
             "$2 ns per message (half of an empty region beyond the raw round trip)," \
             "bandwidth $3 B/s (raw, 1 MiB), $4 ns per stencil cell and step (the stock" \
             "plugin's stencil); the two other links keep that overhead."
        echo
        if "$build_dir/bench/sim_model" --cells "$mcells" --steps "$msteps" --regions "$mregions" \
            --cell-ns "$4" --link "this machine:$1:$2:$3" --link "1.5us/10GB/s:1500:$2:10000000000" \
            --link "5us/1GB/s:5000:$2:1000000000" >"$model.table" 2>"$out/logs/model.log"; then
            cat "$model.table"
        else
            echo "bench: sim_model FAILED: see logs/model.log" >&2
            failed=$((failed + 1))
        fi
        echo
        awk -v steps="$asteps" '$1 == "BENCH" { med[$2] = $4 }
             END { printf "Measured in the same run (medians): the stencil %.4g ms per step on 2 " \
                          "devices and %.4g on 1 (bench_apps ours2, ours1), %.4g with the stock " \
                          "plugin; nowait on 2 devices %s regions/s through the ABI and %s " \
                          "through OpenMP (bench_abi, bench_omp).\n",
                          med["app_stencil_ours2"] * 1e3 / steps, med["app_stencil_ours1"] * 1e3 / steps,
                          med["app_stencil_stock"] * 1e3 / steps, med["abi_nowait_rate"],
                          med["omp_nowait_rate"] }' "$figures"
    } >"$model"
    rm -f "$model.table"
else
    echo "bench: no model: the run lacks a figure it needs, or sim_model is not built" >&2
    failed=$((failed + 1))
fi

echo
echo "omptarget-mpi benchmarks ($mode): $machine"
echo "every figure: median of ${runs:-0} run(s), min and max beside it; ratios from the medians;" \
     "the baseline and main jobs: median of $rounds round(s)"
echo
cat "$out/$name.md"
echo
echo
[ -f "$model" ] && cat "$model"
echo
scale_report
cat "$out/$name-scale.md"
echo
echo "bench: table $out/$name.md, figures $out/$name.json${png:+, plot $png}, model $model," \
     "scale-out $out/$name-scale.md, logs $out/logs/"

if [ "$update_docs" -eq 1 ]; then
    if [ "$failed" -ne 0 ] || [ "$mode" = quick ]; then
        echo "bench.sh: --update-docs needs a full run without failures: docs left as they are" >&2
        failed=$((failed + 1))
    else
        mkdir -p docs/bench
        cp "$out/$name.md" docs/bench/results.md
        cp "$out/$name.json" docs/bench/results.json
        cp "$png" docs/bench/bandwidth.png
        cp "$model" docs/bench/model.md
        cp "$out/$name-scale.md" docs/bench/scale.md
        echo "bench: docs/bench/ updated"
    fi
fi

if [ "$failed" -ne 0 ]; then
    echo "bench: $failed job(s) or check(s) FAILED"
    exit 1
fi
if grep -q '^CHECK [^ ]* FAIL' "$figures"; then
    echo "bench: a check FAILED:"
    grep '^CHECK [^ ]* FAIL' "$figures"
    exit 1
fi
nchecks=$(grep -c '^CHECK ' "$figures" || true)
if [ "$nchecks" -lt 2 ]; then
    echo "bench: expected the nowait checks of the ABI and OpenMP runs, found $nchecks"
    exit 1
fi
echo "bench: all jobs ran, $nchecks checks passed"
