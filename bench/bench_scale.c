/*
 * bench_scale.c - scale-out: every device busy, strong scaling, and what
 * many devices cost the host. Built by clang-14, run by ci/bench.sh through
 * omptarget-mpirun at several job sizes; the figures carry the number of
 * devices in their key (<N> below).
 *
 *   inflight  one thread issues PER `target nowait` regions per device, each
 *             sleeping SLEEP ms, then waits: the regions in flight on
 *             average, PER * devices * SLEEP / the wait. Sleeping regions
 *             need no core: they show concurrency on any machine
 *                                          (scale_inflight_<N>, regions;
 *                                           scale_inflight_s_<N>, s;
 *                                           with PER > 1, scale_inflight_many_...)
 *   stencil   a 1-D heat stencil cut in one part per device, each part
 *             stepped by a host thread of its own (synchronous regions),
 *             the halo cells moved device to device after every step; run
 *             with one OpenMP thread per device rank (OMP_NUM_THREADS=1),
 *             so that N devices are N cores' work (scale_stencil_<N>, s)
 *   region    rank 0's resident memory and threads once every device has
 *             run a region, then an empty region to device 0
 *                                          (scale_rss_<N>, KiB;
 *                                           scale_threads_<N>, threads;
 *                                           scale_empty_<N>, us)
 *   start     one empty region on device 0: the shortest program with a
 *             device, whose whole job ci/bench.sh times (no figure)
 *
 * Built by clang-16 or clang-19 (bench_scale16, bench_scale19), the keys end
 * in _llvm16 or _llvm19.
 *
 * usage: bench_scale inflight quick|full [SLEEP_MS [PER]]
 *        bench_scale stencil|region|start quick|full
 * Every part checks its results; a wrong one prints CHECK ... FAIL and the
 * exit status is 1.
 */
#include <omp.h>
#include <stdint.h>

#include "bench_util.h"

static bench_opts o;
static int ndev;
static long wrong;

static void die(const char *what)
{
    fprintf(stderr, "bench_scale: %s\n", what);
    exit(2);
}

/* The figures of a build by another clang than 14 (another libomptarget)
 * carry its version: scale_inflight_15_llvm19. */
#if __clang_major__ == 14
#define LLVM_SUFFIX ""
#else
#define STR_(x) #x
#define STR(x) STR_(x)
#define LLVM_SUFFIX "_llvm" STR(__clang_major__)
#endif

static void check(const char *key, int ok, const char *what)
{
    printf("CHECK %s_%d" LLVM_SUFFIX " %s %s\n", key, ndev, ok ? "PASS" : "FAIL", what);
    wrong += !ok;
}

static void report(const char *key, const char *unit, double *v, int n)
{
    char k[64];
    snprintf(k, sizeof k, "%s_%d" LLVM_SUFFIX, key, ndev);
    bench_report(k, unit, v, n);
}

/* Every device runs a region (started, its image loaded) before anything
 * is timed; returns how many ran on the host instead. `nowait` regions
 * also start libomp's hidden helper threads, which otherwise delay the
 * first nowait region (by 0.1 s with 16 of them on 2 cores); synchronous
 * ones leave none: libomp's idle threads spin for KMP_BLOCKTIME (200 ms)
 * and would take the cores from the regions timed next. */
static long warm_up(int nowait)
{
    int *on = malloc(sizeof *on * (size_t)ndev);
    if (!on)
        die("no memory");
    for (int d = 0; d < ndev; d++) {
        int *o_ = &on[d];
        *o_ = -1;
        if (nowait) {
#pragma omp target nowait device(d) map(from: o_[0:1])
            *o_ = omp_is_initial_device();
#pragma omp taskwait
        } else {
#pragma omp target device(d) map(from: o_[0:1])
            *o_ = omp_is_initial_device();
        }
    }
    long bad = 0;
    for (int d = 0; d < ndev; d++)
        bad += on[d] != 0;
    free(on);
    return bad;
}

/* ---- inflight: sleeping nowait regions over every device ---- */

static void inflight(int sleep_ms, int per)
{
    double v[BENCH_MAX_RUNS], w[BENCH_MAX_RUNS];
    int n = ndev * per;
    int *done = calloc((size_t)n, sizeof *done);
    if (!done)
        die("inflight: no memory");
    long bad = warm_up(1);
    for (int r = 0; r < o.runs; r++) {
        memset(done, 0, sizeof *done * (size_t)n);
        double t0 = bench_now();
        for (int i = 0; i < n; i++) {
            int *d = &done[i];
#pragma omp target nowait device(i % ndev) map(from: d[0:1]) firstprivate(i, sleep_ms)
            {
                usleep((useconds_t)sleep_ms * 1000u);
                *d = omp_is_initial_device() ? -1 : i + 1;
            }
        }
#pragma omp taskwait
        w[r] = bench_now() - t0;
        v[r] = (double)n * sleep_ms * 1e-3 / w[r];
        for (int i = 0; i < n; i++)
            bad += done[i] != i + 1;
    }
    char key[64], what[160];
    snprintf(key, sizeof key, "scale_inflight%s", per > 1 ? "_many" : "");
    report(key, "regions", v, o.runs);
    snprintf(key, sizeof key, "scale_inflight%s_s", per > 1 ? "_many" : "");
    report(key, "s", w, o.runs);
    snprintf(what, sizeof what, "%d sleeping nowait regions of %d ms over %d devices, "
             "%ld wrong or on the host", n, sleep_ms, ndev, bad);
    check(per > 1 ? "scale_inflight_many" : "scale_inflight", bad == 0, what);
    free(done);
}

/* ---- stencil: strong scaling over every device ---- */

static void step_host(double *u, double *w, long n, int steps)
{
    for (int s = 0; s < steps; s++) {
        for (long i = 1; i < n - 1; i++)
            w[i] = u[i] + 0.25 * (u[i - 1] - 2 * u[i] + u[i + 1]);
        w[0] = u[0];
        w[n - 1] = u[n - 1];
        double *t = u; u = w; w = t;
    }
    if (steps % 2)
        memcpy(w, u, sizeof *u * (size_t)n);    /* the result in the first */
}

/* One device's part: cells [lo, lo + len) of the line, with a halo cell on
 * each side (index 0 and len + 1) in two device buffers. */
typedef struct part {
    long lo, len;
    double *u, *w;
} part;

/* Moves the halos between neighbours p and p + 1: the last cell of p to
 * p + 1's low halo, the first of p + 1 to p's high halo. */
static void halos(part *pt, int p)
{
    omp_target_memcpy(pt[p + 1].u, pt[p].u, sizeof(double), 0,
                      sizeof(double) * (size_t)pt[p].len, p + 1, p);
    omp_target_memcpy(pt[p].u, pt[p + 1].u, sizeof(double),
                      sizeof(double) * (size_t)(pt[p].len + 1), sizeof(double), p, p + 1);
}

static void run_steps(part *pt, long n, int steps)
{
    for (int s = 0; s < steps; s++) {
#pragma omp parallel num_threads(ndev) if(ndev > 1)
        {
            int p = omp_get_thread_num();
            double *U = pt[p].u, *W = pt[p].w;
            long m = pt[p].len;
            int lo_edge = pt[p].lo == 0, hi_edge = pt[p].lo + m == n;
#pragma omp target device(p) is_device_ptr(U, W) firstprivate(m, lo_edge, hi_edge)
#pragma omp parallel for
            for (long i = 1; i <= m; i++) {
                int edge = (lo_edge && i == 1) || (hi_edge && i == m);
                W[i] = edge ? U[i] : U[i] + 0.25 * (U[i - 1] - 2 * U[i] + U[i + 1]);
            }
        }
        for (int p = 0; p < ndev; p++) {
            double *t = pt[p].u; pt[p].u = pt[p].w; pt[p].w = t;
        }
        for (int p = 0; p + 1 < ndev; p++)
            halos(pt, p);
    }
}

static void stencil(void)
{
    double v[BENCH_MAX_RUNS];
    const long n = o.quick ? 1L << 18 : 1L << 23;
    const int steps = o.quick ? 10 : 40;
    int host = omp_get_initial_device();
    double *init = malloc(sizeof(double) * (size_t)n), *want = malloc(sizeof(double) * (size_t)n);
    double *tmp = malloc(sizeof(double) * (size_t)n), *got = malloc(sizeof(double) * (size_t)n);
    part *pt = calloc((size_t)ndev, sizeof *pt);
    if (!init || !want || !tmp || !got || !pt)
        die("stencil: no memory");
    long bad = warm_up(0);
    for (long i = 0; i < n; i++)
        init[i] = (double)((i * 2654435761u) % 100);
    memcpy(want, init, sizeof(double) * (size_t)n);
    step_host(want, tmp, n, steps);
    for (int p = 0; p < ndev; p++) {
        pt[p].lo = n * p / ndev;
        pt[p].len = n * (p + 1) / ndev - pt[p].lo;
    }
    for (int r = 0; r < o.runs; r++) {
        for (int p = 0; p < ndev; p++) {
            size_t bytes = sizeof(double) * (size_t)(pt[p].len + 2);
            pt[p].u = omp_target_alloc(bytes, p);
            pt[p].w = omp_target_alloc(bytes, p);
            if (!pt[p].u || !pt[p].w)
                die("stencil: omp_target_alloc failed");
            /* cells [lo - 1, lo + len + 1) clipped to the line */
            long first = pt[p].lo ? pt[p].lo - 1 : 0;
            long last = pt[p].lo + pt[p].len + 1 > n ? n : pt[p].lo + pt[p].len + 1;
            omp_target_memcpy(pt[p].u, init + first, sizeof(double) * (size_t)(last - first),
                              sizeof(double) * (size_t)(first - (pt[p].lo - 1)), 0, p, host);
        }
        double t0 = bench_now();
        run_steps(pt, n, steps);
        v[r] = bench_now() - t0;
        for (int p = 0; p < ndev; p++) {
            omp_target_memcpy(got + pt[p].lo, pt[p].u, sizeof(double) * (size_t)pt[p].len, 0,
                              sizeof(double), host, p);
            omp_target_free(pt[p].u, p);
            omp_target_free(pt[p].w, p);
        }
    }
    for (long i = 0; i < n; i++)
        bad += got[i] != want[i];
    report("scale_stencil", "s", v, o.runs);
    char what[160];
    snprintf(what, sizeof what, "%ld cells, %d steps in %d parts, %ld cell(s) differ from the "
             "host's or ran on the host", n, steps, ndev, bad);
    check("scale_stencil", bad == 0, what);
    free(init); free(want); free(tmp); free(got); free(pt);
}

/* ---- region: rank 0's memory and threads, an empty region ---- */

/* A field of /proc/self/status ("VmRSS:", "Threads:"), or -1. */
static long status_field(const char *name)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t len = strlen(name);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, name, len))
            v = strtol(line + len, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static void region(void)
{
    double v[BENCH_MAX_RUNS];
    int reps = o.quick ? 200 : 2000;
    long bad = warm_up(0);
    double rss = (double)status_field("VmRSS:"), th = (double)status_field("Threads:");
    report("scale_rss", "KiB", &rss, 1);
    report("scale_threads", "threads", &th, 1);
    for (int r = 0; r < o.runs; r++) {
        double t0 = bench_now();
        for (int i = 0; i < reps; i++) {
#pragma omp target device(0)
            { }
        }
        v[r] = (bench_now() - t0) / reps * 1e6;
    }
    report("scale_empty", "us", v, o.runs);
    check("scale_region", bad == 0, "every device ran a region, none on the host");
}

int main(int argc, char **argv)
{
    const char *part_ = argc > 1 ? argv[1] : "";
    if (argc < 3 || (strcmp(part_, "inflight") && strcmp(part_, "stencil") &&
                     strcmp(part_, "region") && strcmp(part_, "start"))) {
        fprintf(stderr, "usage: bench_scale inflight quick|full [SLEEP_MS [PER]]\n"
                        "       bench_scale stencil|region|start quick|full\n");
        return 2;
    }
    o = bench_options(argv[2]);
    ndev = omp_get_num_devices();
    if (ndev < 1)
        die("no devices: run it with omptarget-mpirun -n N (N >= 2)");
    if (!strcmp(part_, "start")) {
        int on = -1;
#pragma omp target device(0) map(from: on)
        on = omp_is_initial_device();
        return on != 0;
    }
    if (!strcmp(part_, "inflight"))
        inflight(argc > 3 ? atoi(argv[3]) : (o.quick ? 200 : 1000), argc > 4 ? atoi(argv[4]) : 1);
    else if (!strcmp(part_, "stencil"))
        stencil();
    else
        region();
    return wrong ? 1 : 0;
}
