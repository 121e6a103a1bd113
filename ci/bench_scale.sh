# ci/bench_scale.sh - the scale-out part of ci/bench.sh, which sources it
# and calls scale_jobs, then scale_report. It uses bench.sh's job(), $run
# (omptarget-mpirun), $b (the benchmarks), $mode, $mpiexec, $figures,
# $out, $name and $machine.
#
#   regions in flight   one sleeping `target nowait` region per device (1 s,
#                       0.2 s quick) at 1, 2, 4, 8, 15 and 31 devices, and 7
#                       devices x four 0.5-s regions; built by clang-14, and
#                       at 15 and 31 devices by clang-16 and clang-19 too
#   strong scaling      bench_scale's stencil at 1, 2, 4, 8 devices and one
#                       device per core, one OpenMP thread per device rank,
#                       against 1 device, and bench/sim_model's prediction
#                       of the same (and of 63 devices) from the 1-device
#                       time and this run's message costs
#   many devices        at -n 2, 3, 9, 17, 33 and 65: the start-up of a
#                       one-region program against a raw MPI program that
#                       only initialises and finalises MPI (timed in turns,
#                       3 each), rank 0's memory and threads, an empty
#                       region to device 0
#
# The tables go to $out/$name-scale.md (docs/bench/scale.md with
# --update-docs); the figures are in the run's .figures file beside it.

# scale_startup RANKS REPS: the job's wall time, ours and raw in turns.
scale_startup() {
    ranks=$1 reps=$2 devices=$(($1 - 1)) i=0
    : >"$out/logs/startup-$devices.times"
    while [ "$i" -lt "$reps" ]; do
        for who in raw ours; do
            t0=$(date +%s%N)
            if [ "$who" = raw ]; then
                "$mpiexec" -n "$ranks" "$b/bench_raw" init >>"$out/logs/startup-$devices.log" 2>&1
            else
                MPIEXEC="$mpiexec" "$run" -n "$ranks" "$b/bench_scale" start "$mode" \
                    >>"$out/logs/startup-$devices.log" 2>&1
            fi
            rc=$?
            t1=$(date +%s%N)
            if [ "$rc" -ne 0 ]; then
                echo "bench: start-up at -n $ranks ($who) FAILED (exit status $rc)"
                failed=$((failed + 1))
            fi
            echo "$who $(( (t1 - t0) / 1000 ))" >>"$out/logs/startup-$devices.times"
        done
        i=$((i + 1))
    done
    # median, min and max of each, as BENCH lines (seconds)
    for who in raw ours; do
        key=scale_startup_$devices
        [ "$who" = raw ] && key=scale_startup_raw_$devices
        awk -v who="$who" -v key="$key" '$1 == who { v[n++] = $2 / 1e6 }
            END { if (!n) exit
                  for (a = 1; a < n; a++)
                      for (b = a; b > 0 && v[b - 1] > v[b]; b--) { t = v[b]; v[b] = v[b - 1]; v[b - 1] = t }
                  m = n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
                  printf "BENCH %s s %.6g %.6g %.6g %d\n", key, m, v[0], v[n - 1], n }' \
            "$out/logs/startup-$devices.times" >>"$figures"
    done
}

scale_jobs() {
    cores=$(nproc)
    if [ "$mode" = quick ]; then
        s_inflight="1 2" s_ms=200 s_stencil="1 2" s_sizes="2 3" s_reps=1 s_polled=2
    else
        s_inflight="1 2 4 8 15 31" s_ms=1000 s_stencil="1 2 4 8" s_sizes="2 3 9 17 33 65"
        s_reps=3 s_polled="15 31"
        case " $s_stencil " in *" $cores "*) ;; *) s_stencil="$s_stencil $cores" ;; esac
    fi
    for n in $s_inflight; do
        job "scale-inflight-$n" MPIEXEC="$mpiexec" -- \
            "$run" -n $((n + 1)) "$b/bench_scale" inflight "$mode" "$s_ms"
    done
    job scale-inflight-7x4 MPIEXEC="$mpiexec" -- \
        "$run" -n 8 "$b/bench_scale" inflight "$mode" $((s_ms / 2)) 4
    # libomptarget 16 and 19: a region holds no host thread while it runs.
    for v in 16 19; do
        [ -x "$b/bench_scale$v" ] || continue
        for n in $s_polled; do
            job "scale-inflight$v-$n" MPIEXEC="$mpiexec" -- \
                "$run" -n $((n + 1)) "$b/bench_scale$v" inflight "$mode" "$s_ms"
        done
    done
    for n in $s_stencil; do
        job "scale-stencil-$n" MPIEXEC="$mpiexec" OMP_NUM_THREADS=1 -- \
            "$run" -n $((n + 1)) "$b/bench_scale" stencil "$mode"
    done
    for ranks in $s_sizes; do
        job "scale-region-$((ranks - 1))" MPIEXEC="$mpiexec" -- \
            "$run" -n "$ranks" "$b/bench_scale" region "$mode"
        scale_startup "$ranks" "$s_reps"
    done
}

# scale_model: bench/sim_model's stencil, with bench_scale's cells and the
# time per cell of its 1-device run, on this run's link and on a 1.5-us
# cluster link; its table in $out/$name-scale.model (nothing without the
# figures it needs).
scale_model() {
    if [ "$mode" = quick ]; then cells=262144 steps=10; else cells=8388608 steps=40; fi
    devs=$(printf '%s\n' $s_stencil 63 | sort -n -u | paste -s -d, -)
    # shellcheck disable=SC2046
    set -- $(awk -v cells="$cells" -v steps="$steps" '$1 == "BENCH" { med[$2] = $4 }
        END { rtt = med["raw_rtt_8B"]; empty = med["abi_empty_region"]
              bw = med["raw_bw_1M"]; one = med["scale_stencil_1"]
              if (!rtt || !empty || !bw || !one) exit
              ovh = (empty - rtt) * 500; if (ovh < 0) ovh = 0
              printf "%d %d %.0f %.6g\n", rtt * 500, ovh, bw * 1048576, one * 1e9 / (cells * steps) }' \
        "$figures")
    [ $# -eq 4 ] || return 0
    # Fewer steps than the run: the figures are per step.
    "$b/sim_model" --cells "$cells" --steps 4 --cell-ns "$4" --devices "$devs" \
        --stencil-only 1 --link "this machine:$1:$2:$3" --link "1.5us/10GB/s:1500:$2:10000000000" \
        >"$out/$name-scale.model" 2>"$out/logs/scale-model.log" ||
        { echo "bench: the scale model FAILED: see logs/scale-model.log"; failed=$((failed + 1)); }
}

# scale_report: the three tables, from the figures (and the model's).
scale_report() {
    scale_model
    steps=40
    [ "$mode" = quick ] && steps=10
    touch "$out/$name-scale.model"
    awk -v machine="$machine" -v steps="$steps" -v quick="$([ "$mode" = quick ] && echo 1)" '
function fmt(x) { return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.3g", x) }
FNR == NR && $1 == "BENCH" { med[$2] = $4; lo[$2] = $5; hi[$2] = $6; next }
FNR == NR { next }
# the model: | link | devices | ms/step | speed-up | - |
/^\| this machine/ { split($0, c, "|"); model[c[3] + 0] = c[4] * steps / 1e3 }
/^\| 1.5us/ { split($0, c, "|"); cluster[c[3] + 0] = c[4] * steps / 1e3; cspeed[c[3] + 0] = c[5] + 0 }
END {
    print "Scale-out figures (ci/bench.sh, bench/bench_scale.c) of this run: " machine "."
    print ""
    print "**Regions in flight.** One thread issues `target nowait` regions that sleep on " \
          "their device (they need no core), then waits; in flight = the regions'\''" \
          " sleep added up / the wait. libomptarget 14 holds a hidden helper thread per " \
          "region (the launcher asks libomp for 16: 15 in flight at most); 16 and 19 hold " \
          "none while a region runs (docs/DESIGN.md, \"Threads\")."
    print ""
    print "| devices | regions | built by | wait (s) | in flight | target | met |"
    print "|---|---|---|---|---|---|---|"
    split("1 2 4 8 15 31", ds, " ")
    for (v = 14; v <= 19; v += (v == 14 ? 2 : 3)) {
        suf = v == 14 ? "" : "_llvm" v
        for (i = 1; i <= 6; i++) {
            d = ds[i]; k = "scale_inflight_" d suf; ks = "scale_inflight_s_" d suf
            if (!(k in med)) continue
            tgt = ""; met = ""
            lim = d == 15 ? 1.2 : d == 31 ? 1.5 : 0
            if (lim && !quick) { tgt = "≤ " lim " s"; met = med[ks] <= lim ? "yes" : "no" }
            printf "| %d | %d x one | clang-%d | %s | %s | %s | %s |\n", d, d, v, fmt(med[ks]),
                   fmt(med[k]), tgt == "" ? "—" : tgt, met == "" ? "—" : met
        }
    }
    if ("scale_inflight_many_7" in med) {
        w = med["scale_inflight_many_s_7"]
        printf "| 7 | 7 x four | clang-14 | %s | %s | %s | %s |\n", fmt(w),
               fmt(med["scale_inflight_many_7"]), quick ? "—" : "≤ 2.3 s",
               quick ? "—" : (w <= 2.3 ? "yes" : "no")
    }
    print ""
    print "**Strong scaling.** bench_scale'\''s stencil, one part per device, one OpenMP " \
          "thread per device rank, against 1 device; beyond the cores the devices share " \
          "them. The model: bench/sim_model with the 1-device time per cell and this " \
          "run'\''s message costs, one core per device."
    print ""
    print "| devices | time (s) | speed-up | parallel efficiency | model (s) | measured / model |"
    print "|---|---|---|---|---|---|"
    one = med["scale_stencil_1"]
    for (d = 1; d <= 64; d++) {
        k = "scale_stencil_" d
        if (!(k in med)) continue
        sp = one / med[k]
        printf "| %d | %s | %.2f | %.2f | %s | %s |\n", d, fmt(med[k]), sp, sp / d,
               (d in model) ? fmt(model[d]) : "—",
               ((d in model) && model[d] > 0) ? sprintf("%.2f", med[k] / model[d]) : "—"
    }
    if (63 in model)
        printf "| 63 (model) | — | — | — | %s (%.1fx) | on a 1.5-us link: %s s, %.1fx |\n",
               fmt(model[63]), model[1] / model[63], fmt(cluster[63]), cspeed[63]
    print ""
    print "**Many devices on one host.** The start-up of a program that runs one region " \
          "(the whole job, omptarget-mpirun) against a raw MPI program that only calls " \
          "MPI_Init_thread and MPI_Finalize (mpiexec), timed in turns; rank 0 once every " \
          "device ran a region; an empty region to device 0."
    print ""
    print "| ranks | start-up (s) | raw MPI (s) | ratio (≤ 1.5×) | rank 0 memory (MiB) | per device (KiB, ≤ 1024) | rank 0 threads | empty region (us) | against -n 3 (≤ 1.2×) |"
    print "|---|---|---|---|---|---|---|---|---|"
    base = med["scale_rss_1"]; e3 = med["scale_empty_2"]
    for (d = 1; d <= 64; d++) {
        if (!(("scale_rss_" d) in med)) continue
        st = med["scale_startup_" d]; raw = med["scale_startup_raw_" d]
        per = d > 1 ? (med["scale_rss_" d] - base) / (d - 1) : 0
        printf "| %d | %s | %s | %s | %.1f | %s | %d | %s | %s |\n", d + 1, fmt(st), fmt(raw),
               (raw > 0) ? sprintf("%.2f×", st / raw) : "—", med["scale_rss_" d] / 1024,
               (d > 1) ? fmt(per) : "—", med["scale_threads_" d], fmt(med["scale_empty_" d]),
               (e3 > 0) ? sprintf("%.2f×", med["scale_empty_" d] / e3) : "—"
    }
}' "$figures" "$out/$name-scale.model" >"$out/$name-scale.md"
}
