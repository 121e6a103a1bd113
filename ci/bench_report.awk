# bench_report.awk - the report of ci/bench.sh, from the folded figures:
# the table (markdown, to the file md), the same rows as JSON (json) and
# the bandwidth plot's data (dat). Each row names its figure, what it
# measures, through what, and its ratio to the baseline it is judged
# against, with the target and whether it is met.
#
# Variables (-v): md, json, dat (the output files), machine (one line that
# names the machine), mode (quick or full), runs, rounds.
# Input: the folded figures file (bench_fold.awk).
function fmt(x) { return x >= 100 ? sprintf("%.0f", x) : x >= 10 ? sprintf("%.1f", x) : sprintf("%.3g", x) }
function size_bytes(s,   n) {
    n = s + 0
    if (s ~ /K$/) return n * 1024
    if (s ~ /M$/) return n * 1048576
    return n
}
# One row of the table and one object of the JSON list.
function row(key, what, via, ratio_of, ratio_how, target, op, limit,   r, met, rtxt) {
    if (!(key in med)) return
    r = ""; met = ""; rtxt = "—"
    if (ratio_of != "" && (ratio_of in med) && med[ratio_of] > 0) {
        r = med[key] / med[ratio_of]
        rtxt = sprintf(r >= 0.1 ? "%.2f× %s" : "%.2g× %s", r, ratio_how)
    } else if (ratio_of == "self") {
        r = med[key]; rtxt = fmt(r) " " unit[key]
    } else if (ratio_of in check) {
        rtxt = "results checked: " check[ratio_of]
        met = check[ratio_of] == "PASS" ? "yes" : "no"
    }
    if (op != "" && r != "") met = (op == "<=" ? r <= limit : r >= limit) ? "yes" : "no"
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", what, via, fmt(med[key]),
           fmt(lo[key]), fmt(hi[key]), unit[key], rtxt, target == "" ? "—" : target,
           met == "" ? "—" : met >> md
    printf "%s    {\"key\": \"%s\", \"what\": \"%s\", \"via\": \"%s\", \"unit\": \"%s\", " \
           "\"median\": %s, \"min\": %s, \"max\": %s, \"runs\": %d, \"ratio\": %s, " \
           "\"target\": \"%s\", \"met\": %s}", nrows++ ? ",\n" : "", key, what, via, unit[key],
           med[key], lo[key], hi[key], n[key], r == "" ? "null" : sprintf("%.4g", r),
           target, met == "" ? "null" : (met == "yes" ? "true" : "false") >> json
}
$1 == "BENCH" { med[$2] = $4; lo[$2] = $5; hi[$2] = $6; n[$2] = $7; unit[$2] = $3
                if ($2 ~ /^raw_bw_[0-9]/) { s = $2; sub(/^raw_bw_/, "", s); sizes[ns++] = s }
                if ($2 ~ /^raw_both_ways_/) { m = $2; sub(/^raw_both_ways_/, "", m) } }
$1 == "CHECK" { k = $2; check[k] = $3; $1 = $2 = $3 = ""; sub(/^ +/, ""); checkwhat[k] = $0
                checks[nc++] = k }
END {
    print "| figure | via | median | min | max | unit | ratio | target | met |" > md
    print "|---|---|---|---|---|---|---|---|---|" >> md
    printf "{\n  \"machine\": \"%s\",\n  \"mode\": \"%s\",\n  \"runs\": %d,\n  \"rounds\": %d,\n" \
           "  \"figures\": [\n", machine, mode, runs, rounds > json
    row("raw_rtt_8B", "round trip, 8 B", "raw MPI")
    for (i = 0; i < ns; i++) {
        row("raw_bw_" sizes[i], "one-way bandwidth, " sizes[i] ", rank 0 to 1", "raw MPI")
        row("raw_bw_back_" sizes[i], "one-way bandwidth, " sizes[i] ", rank 1 to 0", "raw MPI")
    }
    row("raw_both_ways_" m, m " there and back", "raw MPI")
    for (p = 0; p < 2; p++) {
        pre = p ? "omp" : "abi"; via = p ? "OpenMP" : "ABI"
        # The targets of the second round: a region near one round trip,
        # every size from 64 KiB at 0.9x raw MPI.
        lim = p ? 1.6 : 1.3
        row(pre "_empty_region", "empty synchronous target region", via, "raw_rtt_8B",
            "raw RTT", "≤ " lim "×", "<=", lim)
        for (i = 0; i < ns; i++) {
            row(pre "_submit_bw_" sizes[i], "submit bandwidth, " sizes[i], via, "raw_bw_" sizes[i],
                "raw 0 to 1", "≥ 0.9×", ">=", 0.9)
            row(pre "_retrieve_bw_" sizes[i], "retrieve bandwidth, " sizes[i], via,
                "raw_bw_back_" sizes[i], "raw 1 to 0", "≥ 0.9×", ">=", 0.9)
        }
        row(pre "_map_cycle_" m, "map(tofrom:) cycle, " m, via, "raw_both_ways_" m,
            "raw both ways", "≤ 1.2×", "<=", 1.2)
        ck = ""
        for (i = 0; i < nc; i++) if (checks[i] ~ ("^" pre "_nowait_[0-9]+$")) ck = checks[i]
        nr = ck; sub(/^.*_/, "", nr)
        row(pre "_nowait_rate", nr " concurrent nowait regions (3 ranks)", via, ck,
            "", "all correct")
        row(pre "_alloc_free_pool_on", "alloc + free 4 KiB, pool on", via)
        row(pre "_alloc_free_pool_off", "alloc + free 4 KiB, pool off", via)
        row(pre "_idle_cpu_sleep", "idle CPU, both ranks (IDLE=sleep)", via, "self", "",
            "≤ 4% of a core", "<=", 4)
        row(pre "_idle_cpu_spin", "idle CPU, both ranks (IDLE=spin)", via, "self", "")
        row(pre "_event_bytes", "host heap per queued event", via, "self", "",
            "≤ 512 B", "<=", 512)
    }
    row("omp_nowait_rate", "nowait regions through OpenMP against the ABI", "OpenMP",
        "abi_nowait_rate", "ABI rate", "≥ 0.5×", ">=", 0.5)
    row("omp_nowait_rate_stock", "nowait regions, stock in-process plugin, 2 of its devices",
        "OpenMP, stock", "abi_nowait_rate", "our ABI rate")
    row("omp_nowait_rate", "nowait regions through OpenMP against the stock plugin", "OpenMP",
        "omp_nowait_rate_stock", "stock rate")
    row("omp_region_off", "empty region, output not forwarded (FORWARD_OUTPUT=off)", "OpenMP")
    row("omp_region_on", "empty region, output forwarded (default)", "OpenMP",
        "omp_region_off", "not forwarded")
    row("omp_region_spin", "empty region, every poller spinning (IDLE=spin)", "OpenMP",
        "raw_rtt_8B", "raw RTT", "≤ 3×", "<=", 3)
    row("omp_region_on", "empty region, default idle policy (IDLE=sleep)", "OpenMP",
        "raw_rtt_8B", "raw RTT")
    row("omp_from4_region_on", "region with map(from:) of 4 x 4 KiB", "OpenMP",
        "omp_region_on", "empty region")
    row("omp_region_stock", "empty region, stock in-process plugin (libomptarget alone)",
        "OpenMP, stock", "omp_empty_region", "ours")
    if (("omp_empty_region" in med) && ("omp_region_stock" in med)) {
        k = "omp_empty_region_beyond_stock"; unit[k] = "us"; n[k] = n["omp_empty_region"]
        med[k] = lo[k] = hi[k] = med["omp_empty_region"] - med["omp_region_stock"]
        row(k, "empty region less the stock plugin figure (medians)", "OpenMP",
            "raw_rtt_8B", "raw RTT")
    }
    # The applications (bench_apps.c): ours on 1 and 2 devices against the
    # stock in-process plugin on 1.
    split("fine sync4k xs stencil dense threads", apps, " ")
    split("8 threads x nowait depend chains|synchronous 4 KiB map(tofrom:) regions|" \
          "cross-section lookups (XSBench-like)|heat stencil, halos device to device|" \
          "dense matrix product|threads of a parallel loop in a region", appwhat, "|")
    for (i = 1; i <= 6; i++) {
        a = apps[i]
        row("app_" a "_stock", appwhat[i], "stock plugin, 1 device")
        for (d = 1; d <= 2; d++) {
            tgt = ""; op = ""; lim = 0
            if (a == "fine" && d == 2) { tgt = "≤ 2×"; op = "<="; lim = 2 }
            if ((a == "xs" || a == "dense") && d == 1) { tgt = "≤ 1.1×"; op = "<="; lim = 1.1 }
            if (a == "sync4k") { tgt = "≥ 0.3×"; op = ">="; lim = 0.3 }
            row("app_" a "_ours" d, appwhat[i], "OpenMP, " d " device(s)", "app_" a "_stock",
                "stock", tgt, op, lim)
        }
    }
    for (i = 1; i <= 2; i++) {
        a = apps[i]
        row("app_" a "_stockbusy", appwhat[i] ", one busy process beside",
            "stock plugin, 1 device")
        row("app_" a "_ours2busy", appwhat[i] ", one busy process beside", "OpenMP, 2 device(s)",
            "app_" a "_stockbusy", "stock", a == "fine" ? "≤ 2×" : "", a == "fine" ? "<=" : "", 2)
    }
    # Unified shared memory (bench_usm.c): a region reaching N host pages on
    # demand against the same pages mapped, and the empty region with the
    # setting on against off.
    row("usm_empty_off", "empty region", "OpenMP, OMPTARGET_MPI_USM=off")
    row("usm_empty_on", "empty region", "OpenMP, OMPTARGET_MPI_USM=on", "usm_empty_off", "off")
    split("1 64 4096", npages, " ")
    for (i = 1; i <= 3; i++) {
        k = npages[i]
        row("map_pages_" k, "region writing 1 byte in each of " k " pages", "OpenMP, mapped tofrom")
        row("usm_pages_" k, "region writing 1 byte in each of " k " pages",
            "OpenMP, pages on demand", "map_pages_" k, "mapped")
    }
    row("usm_faults", "host pages served to one device", "OpenMP, pages on demand", "self")
    # Calls through rank 0's addresses in a region (bench_host_code.c).
    row("call_device_ns", "a call through a pointer to a device function", "OpenMP, one region")
    row("call_host_table_ns", "a call through rank 0's constant table (a virtual call)",
        "OpenMP, one region", "call_device_ns", "device")
    row("call_host_ptr_ns", "a call through a host function pointer (one signal)",
        "OpenMP, one region", "call_device_ns", "device")
    # A proxied device against the rank's own CPU (bench_remote.c).
    row("remote_empty_cpu", "empty region", "OpenMP, rank 1's CPU device")
    row("remote_empty_proxied", "empty region", "OpenMP, a device of rank 1's host plugin",
        "remote_empty_cpu", "CPU device")
    row("remote_1m_cpu", "1 MiB map(tofrom:) round trip", "OpenMP, rank 1's CPU device")
    row("remote_1m_proxied", "1 MiB map(tofrom:) round trip",
        "OpenMP, a device of rank 1's host plugin", "remote_1m_cpu", "CPU device")
    printf "\n  ],\n  \"checks\": [" >> json
    print "" >> md
    for (i = 0; i < nc; i++) {
        k = checks[i]
        printf "- %s: **%s** (%s)\n", k, check[k], checkwhat[k] >> md
        printf "%s\n    {\"key\": \"%s\", \"result\": \"%s\", \"what\": \"%s\"}", i ? "," : "",
               k, check[k], checkwhat[k] >> json
    }
    printf "\n  ]\n}\n" >> json
    # The plot data: size in bytes, raw, then the plugin submit and retrieve
    # via the ABI and via OpenMP.
    print "# bytes raw raw_back abi_submit abi_retrieve omp_submit omp_retrieve" > dat
    for (i = 0; i < ns; i++) {
        s = sizes[i]; line = size_bytes(s)
        split("raw_bw_ raw_bw_back_ abi_submit_bw_ abi_retrieve_bw_ omp_submit_bw_ omp_retrieve_bw_",
              ks, " ")
        for (j = 1; j <= 6; j++) line = line " " ((ks[j] s) in med ? med[ks[j] s] : "NaN")
        print line >> dat
    }
}
