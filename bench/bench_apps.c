/*
 * bench_apps.c - what users offload, against the stock in-process plugin.
 *
 * The same program (built by clang-14) runs on this plugin through
 * omptarget-mpirun and on libomptarget 14's own x86_64 plugin, which runs
 * regions in the program's process, started without the launcher. Each
 * part checks its result against the host and prints its time; the last
 * argument, the run's label (ours1, ours2, stock), names the figures, and
 * ci/bench.sh divides ours by stock.
 *
 *   fine     8 host threads, each a chain of `target nowait depend(inout)`
 *            regions over the first 2 devices (2,000 per thread, 200
 *            quick): the fine-grained task program        (app_fine_<label>, s)
 *   sync4k   a loop of synchronous `target map(tofrom:)` regions of 4 KiB
 *                                                          (app_sync4k_<label>, regions/s)
 *   xs       Monte-Carlo cross-section lookups (XSBench-like): a 32 MiB
 *            read-only table mapped once, 4 M random lookups per region
 *            (teams distribute parallel for), a checksum   (app_xs_<label>, s)
 *   stencil  a 1-D heat stencil cut in two halves over the first 2 devices
 *            (a host thread each), the halo cells moved device to device
 *            each step (omp_target_memcpy); 1 device: the whole line on
 *            device 0
 *                                                          (app_stencil_<label>, s)
 *   dense    C = A x B, 768 x 768 doubles, teams distribute parallel for
 *                                                          (app_dense_<label>, s)
 *   threads  the OpenMP threads a region's parallel loop gets on its device
 *                                                          (app_threads_<label>, threads)
 *
 * usage: bench_apps PART[,PART...]|all quick|full LABEL [DEVICES]
 *   DEVICES: how many devices the parts spread over (default: all, at most
 *   2); the stock plugin reports 4 host "devices", so its runs say 1.
 * A wrong result prints CHECK app_<part>_<label> FAIL and the exit status
 * is 1.
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

static bench_opts o;
static const char *label;
static int ndev;
static long wrong;

static void die(const char *what)
{
    fprintf(stderr, "bench_apps: %s\n", what);
    exit(2);
}

static void check(const char *part, int ok, const char *what)
{
    printf("CHECK app_%s_%s %s %s\n", part, label, ok ? "PASS" : "FAIL", what);
    wrong += !ok;
}

static void report(const char *part, const char *unit, double *v)
{
    char key[64];
    snprintf(key, sizeof key, "app_%s_%s", part, label);
    bench_report(key, unit, v, o.runs);
}

/* ---- fine: 8 threads of nowait chains ---- */

#define FINE_THREADS 8

static void fine(void)
{
    double v[BENCH_MAX_RUNS];
    int per = o.quick ? 200 : 2000;
    long bad = 0;
    static long chain[FINE_THREADS][8];     /* one cache line per chain */
    for (int r = 0; r < o.runs; r++) {
        memset(chain, 0, sizeof chain);
        double t0 = bench_now();
#pragma omp parallel num_threads(FINE_THREADS)
        {
            int t = omp_get_thread_num(), dev = t % ndev;
            long *c = chain[t];
            for (int i = 0; i < per; i++) {
#pragma omp target nowait depend(inout: c[0]) device(dev) map(tofrom: c[0:1]) firstprivate(i)
                c[0] = c[0] * 3 % 1000003 + i + (omp_is_initial_device() ? 1 : 0);
            }
#pragma omp taskwait
        }
        v[r] = bench_now() - t0;
        for (int t = 0; t < FINE_THREADS; t++) {
            long want = 0;
            for (int i = 0; i < per; i++)
                want = want * 3 % 1000003 + i;
            bad += chain[t][0] != want;
        }
    }
    report("fine", "s", v);
    char what[160];
    snprintf(what, sizeof what, "%d threads x %d chained nowait regions over %d device(s), "
             "%ld wrong chain(s)", FINE_THREADS, per, ndev, bad);
    check("fine", bad == 0, what);
}

/* ---- sync4k: synchronous 4 KiB round trips ---- */

static void sync4k(void)
{
    double v[BENCH_MAX_RUNS];
    int n = o.quick ? 200 : 2000;
    static int buf[1024];
    long bad = 0;
    for (int r = 0; r < o.runs; r++) {
        for (int k = 0; k < 1024; k++)
            buf[k] = k;
        double t0 = bench_now();
        for (int i = 0; i < n; i++) {
#pragma omp target map(tofrom: buf[0:1024]) device(0)
            for (int k = 0; k < 1024; k++)
                buf[k] += 1 + (omp_is_initial_device() ? 1 : 0);
        }
        v[r] = n / (bench_now() - t0);
        for (int k = 0; k < 1024; k++)
            bad += buf[k] != k + n;
    }
    report("sync4k", "regions/s", v);
    check("sync4k", bad == 0, "a loop of synchronous 4 KiB map(tofrom:) regions");
}

/* ---- xs: cross-section lookups ---- */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}
#pragma omp declare target(mix)

static void xs(void)
{
    double v[BENCH_MAX_RUNS];
    const long nt = 4L << 20;               /* 4 M doubles: 32 MiB */
    const long lookups = o.quick ? 1L << 20 : 4L << 20;
    double *table = malloc(sizeof *table * (size_t)nt);
    if (!table)
        die("xs: no memory");
    for (long i = 0; i < nt; i++)
        table[i] = (double)(mix((uint64_t)i) % 1000) / 1000.0;
    double want = 0;
    for (long l = 0; l < lookups; l++) {
        uint64_t h = mix((uint64_t)l + 1);
        long a = (long)(h % (uint64_t)nt), b = (long)((h >> 20) % (uint64_t)nt);
        want += table[a] * 0.5 + table[b] * 0.25;
    }
    double got = 0;
#pragma omp target data map(to: table[0:nt]) device(0)
    for (int r = 0; r < o.runs; r++) {
        double t0 = bench_now();
        got = 0;
#pragma omp target teams distribute parallel for reduction(+: got) device(0)
        for (long l = 0; l < lookups; l++) {
            uint64_t h = mix((uint64_t)l + 1);
            long a = (long)(h % (uint64_t)nt), b = (long)((h >> 20) % (uint64_t)nt);
            got += table[a] * 0.5 + table[b] * 0.25;
        }
        v[r] = bench_now() - t0;
    }
    report("xs", "s", v);
    double rel = (got - want) / (want ? want : 1);
    check("xs", rel < 1e-9 && rel > -1e-9, "the checksum of the lookups against the host's");
    free(table);
}

/* ---- stencil: a heat line over two devices, halos device to device ---- */

static void stencil_host(double *u, double *w, long n, int steps)
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

static void stencil(void)
{
    double v[BENCH_MAX_RUNS];
    const long n = o.quick ? 1L << 18 : 1L << 22;   /* cells */
    const int steps = o.quick ? 20 : 100;
    int parts = ndev >= 2 ? 2 : 1;
    double *init = malloc(sizeof(double) * (size_t)n), *want = malloc(sizeof(double) * (size_t)n);
    double *tmp = malloc(sizeof(double) * (size_t)n), *got = malloc(sizeof(double) * (size_t)n);
    if (!init || !want || !tmp || !got)
        die("stencil: no memory");
    for (long i = 0; i < n; i++)
        init[i] = (double)(mix((uint64_t)i) % 100);
    memcpy(want, init, sizeof(double) * (size_t)n);
    stencil_host(want, tmp, n, steps);

    long half = n / parts;
    long len[2] = {half, n - half * (parts - 1)};   /* cells of each part */
    int host = omp_get_initial_device();
    for (int r = 0; r < o.runs; r++) {
        /* Each part with one halo cell on each side: len + 2, two buffers. */
        double *u[2], *w[2];
        for (int p = 0; p < parts; p++) {
            size_t bytes = sizeof(double) * (size_t)(len[p] + 2);
            u[p] = omp_target_alloc(bytes, p);
            w[p] = omp_target_alloc(bytes, p);
            if (!u[p] || !w[p])
                die("stencil: omp_target_alloc failed");
            /* cells [p*half - 1, p*half + len + 1) clipped to the line */
            long from = p * half - 1, first = from < 0 ? 0 : from;
            long last = p * half + len[p] + 1 > n ? n : p * half + len[p] + 1;
            omp_target_memcpy(u[p], init + first, sizeof(double) * (size_t)(last - first),
                              sizeof(double) * (size_t)(first - from), 0, p, host);
        }
        double t0 = bench_now();
        for (int s = 0; s < steps; s++) {
            /* One host thread per part, each region synchronous: clang 14
             * computes only part of a `teams distribute parallel for` that
             * is `nowait` (seen on its own host plugin). */
#pragma omp parallel num_threads(parts) if(parts > 1)
            {
                int p = omp_get_thread_num();
                double *U = u[p], *W = w[p];
                long m = len[p];
                int lo_edge = p == 0, hi_edge = p == parts - 1;
#pragma omp target teams distribute parallel for device(p) is_device_ptr(U, W)
                for (long i = 1; i <= m; i++) {
                    int edge = (lo_edge && i == 1) || (hi_edge && i == m);
                    W[i] = edge ? U[i] : U[i] + 0.25 * (U[i - 1] - 2 * U[i] + U[i + 1]);
                }
            }
            for (int p = 0; p < parts; p++) {
                double *t = u[p]; u[p] = w[p]; w[p] = t;
            }
            if (parts == 2) {   /* the halos: last cell of 0 -> 1, first of 1 -> 0 */
                omp_target_memcpy(u[1], u[0], sizeof(double), 0,
                                  sizeof(double) * (size_t)len[0], 1, 0);
                omp_target_memcpy(u[0], u[1], sizeof(double),
                                  sizeof(double) * (size_t)(len[0] + 1), sizeof(double), 0, 1);
            }
        }
        v[r] = bench_now() - t0;
        for (int p = 0; p < parts; p++) {
            omp_target_memcpy(got + p * half, u[p], sizeof(double) * (size_t)len[p], 0,
                              sizeof(double), host, p);
            omp_target_free(u[p], p);
            omp_target_free(w[p], p);
        }
    }
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += got[i] != want[i];
    report("stencil", "s", v);
    char what[160];
    snprintf(what, sizeof what, "%ld cells, %d steps over %d device(s), %ld cell(s) differ "
             "from the host's", n, steps, parts, bad);
    check("stencil", bad == 0, what);
    free(init); free(want); free(tmp); free(got);
}

/* ---- dense: a matrix product ---- */

static void dense(void)
{
    double v[BENCH_MAX_RUNS];
    const int n = o.quick ? 256 : 768;
    size_t nn = (size_t)n * (size_t)n;
    double *a = malloc(sizeof *a * nn), *b = malloc(sizeof *b * nn);
    double *c = malloc(sizeof *c * nn);
    if (!a || !b || !c)
        die("dense: no memory");
    for (size_t i = 0; i < nn; i++) {
        a[i] = (double)(mix(i) % 7);
        b[i] = (double)(mix(i + nn) % 5);
    }
    for (int r = 0; r < o.runs; r++) {
        double t0 = bench_now();
#pragma omp target teams distribute parallel for device(0) \
        map(to: a[0:nn], b[0:nn]) map(from: c[0:nn])
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++)
                c[(size_t)i * n + j] = 0;
            for (int k = 0; k < n; k++) {
                double aik = a[(size_t)i * n + k];
                for (int j = 0; j < n; j++)
                    c[(size_t)i * n + j] += aik * b[(size_t)k * n + j];
            }
        }
        v[r] = bench_now() - t0;
    }
    long bad = 0;
    for (int i = 0; i < n; i += 97)         /* rows sampled, every column */
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += a[(size_t)i * n + k] * b[(size_t)k * n + j];
            bad += s != c[(size_t)i * n + j];
        }
    report("dense", "s", v);
    check("dense", bad == 0, "sampled rows of C against the host's product");
    free(a); free(b); free(c);
}

/* ---- threads: what a region's parallel loop gets ---- */

static void threads(void)
{
    double v[BENCH_MAX_RUNS];
    int nt = 0;
    for (int r = 0; r < o.runs; r++) {
#pragma omp target teams distribute parallel for device(0) map(tofrom: nt)
        for (int i = 0; i < 1; i++)
            nt = omp_get_num_threads();
        v[r] = nt;
    }
    report("threads", "threads", v);
}

/* How many of the comma-separated names in `list` are `name`, or, with
 * `name` NULL, how many names `list` has. */
static int listed(const char *list, const char *name)
{
    int hits = 0;
    for (const char *p = list;; p++) {
        size_t len = strcspn(p, ",");
        hits += !name || (len == strlen(name) && !strncmp(p, name, len));
        p += len;
        if (!*p)
            return hits;
    }
}

int main(int argc, char **argv)
{
    static const char *parts[] = {"fine", "sync4k", "xs", "stencil", "dense", "threads"};
    static void (*const run[])(void) = {fine, sync4k, xs, stencil, dense, threads};
    if (argc < 4 || (strcmp(argv[2], "quick") && strcmp(argv[2], "full"))) {
        fprintf(stderr, "usage: bench_apps PART[,PART...]|all quick|full LABEL [DEVICES]\n"
                        "  PART: fine, sync4k, xs, stencil, dense or threads\n");
        return 2;
    }
    o = bench_options(argv[2]);
    label = argv[3];
    int have = omp_get_num_devices();
    ndev = argc > 4 ? atoi(argv[4]) : (have < 2 ? have : 2);
    if (ndev < 1 || ndev > have)
        die("not that many devices: run it through omptarget-mpirun -n 2 or 3, or without "
            "it on the stock plugin with DEVICES 1");
    int found = 0, known = 0;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        known += listed(argv[1], parts[i]);
    if (strcmp(argv[1], "all") && known != listed(argv[1], NULL))
        die("unknown part");
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        if (!strcmp(argv[1], "all") || listed(argv[1], parts[i])) {
            /* libomp's threads spin for KMP_BLOCKTIME (200 ms) after a
             * parallel region: each part starts with them asleep, or the
             * part after `fine` shares the cores with 7 spinning threads. */
            if (found)
                bench_sleep(0.3);
            run[i]();
            found = 1;
        }
    }
    if (!found)
        die("unknown part");
    return wrong ? 1 : 0;
}
