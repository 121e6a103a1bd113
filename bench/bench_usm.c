/*
 * bench_usm.c - unified shared memory: what a region pays to reach N host
 * pages on demand (each read, then one byte of it written, so each is
 * fetched and written back), against the same pages mapped explicitly
 * (map(tofrom:) of the array), in one run under OMPTARGET_MPI_USM=on.
 *
 *   usm_pages_<N>   a region that touches N pages through a pointer it
 *                   never mapped                          (ms per region)
 *   map_pages_<N>   the same region on the array mapped tofrom
 *                                                         (ms per region)
 *   usm_faults      pages served per second to one device, from the
 *                   4,096-page region                     (pages/s)
 *   usm_empty_<L>   a region that touches no host page (ms), run with
 *                   the setting on (L = on) and off (L = off, nothing
 *                   else measured): what the protocol adds to every
 *                   region (the host's ranges asked for and reserved)
 *
 * N = 1, 64 and 4,096 (1 and 64 in quick mode). A wrong byte prints CHECK
 * usm_pages FAIL and the exit status is 1.
 *
 * usage: bench_usm quick|full on|off
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define PAGE 4096u

static bench_opts o;
static long wrong;

/* One region touching n pages through an address it gets by value. */
static double touch_usm(unsigned char *a, unsigned n)
{
    uintptr_t at = (uintptr_t)a;
    double t0 = bench_now();
#pragma omp target firstprivate(at, n)
    {
        unsigned char *p = (unsigned char *)at;
        for (unsigned i = 0; i < n; i++)
            p[(size_t)i * PAGE + 1] = (unsigned char)(p[(size_t)i * PAGE] + 1);
    }
    return bench_now() - t0;
}

static double touch_mapped(unsigned char *a, unsigned n)
{
    size_t len = (size_t)n * PAGE;
    double t0 = bench_now();
#pragma omp target map(tofrom : a[0:len]) firstprivate(n)
    for (unsigned i = 0; i < n; i++)
        a[(size_t)i * PAGE + 1] = (unsigned char)(a[(size_t)i * PAGE] + 1);
    return bench_now() - t0;
}

static void check(const unsigned char *a, unsigned n, unsigned char base)
{
    for (unsigned i = 0; i < n; i++)
        if (a[(size_t)i * PAGE + 1] != (unsigned char)(base + i + 1))
            wrong++;
}

static void pages(unsigned n)
{
    double usm[BENCH_MAX_RUNS], map[BENCH_MAX_RUNS];
    unsigned char *a = aligned_alloc(PAGE, (size_t)n * PAGE);
    if (!a) {
        fprintf(stderr, "bench_usm: no memory for %u pages\n", n);
        exit(1);
    }
    for (int r = 0; r < o.runs; r++) {
        for (unsigned i = 0; i < n; i++)
            a[(size_t)i * PAGE] = (unsigned char)(r + i);
        usm[r] = 1e3 * touch_usm(a, n);
        check(a, n, (unsigned char)r);
        for (unsigned i = 0; i < n; i++)
            a[(size_t)i * PAGE] = (unsigned char)(r + i + 7);
        map[r] = 1e3 * touch_mapped(a, n);
        check(a, n, (unsigned char)(r + 7));
    }
    char key[64];
    snprintf(key, sizeof key, "usm_pages_%u", n);
    if (n == 4096) {
        double rate[BENCH_MAX_RUNS];
        for (int r = 0; r < o.runs; r++)
            rate[r] = n / (usm[r] / 1e3);
        bench_report("usm_faults", "pages/s", rate, o.runs);
    }
    bench_report(key, "ms", usm, o.runs);
    snprintf(key, sizeof key, "map_pages_%u", n);
    bench_report(key, "ms", map, o.runs);
    free(a);
}

int main(int argc, char **argv)
{
    double empty[BENCH_MAX_RUNS * 100];
    o = bench_options(argc > 1 ? argv[1] : "quick");
    if (omp_get_num_devices() < 1) {
        fprintf(stderr, "bench_usm: no device (run it under omptarget-mpirun)\n");
        return 1;
    }
    /* The first region loads the image: not a figure. */
#pragma omp target
    {
    }
    for (int r = 0; r < o.runs; r++) {
        double t0 = bench_now();
        for (int k = 0; k < 100; k++) {
#pragma omp target
            {
            }
        }
        empty[r] = 1e3 * (bench_now() - t0) / 100;
    }
    const char *label = argc > 2 ? argv[2] : "on";
    char key[64];
    snprintf(key, sizeof key, "usm_empty_%s", label);
    bench_report(key, "ms", empty, o.runs);
    if (strcmp(label, "on"))
        return 0;
    pages(1);
    pages(64);
    if (!o.quick)
        pages(4096);
    printf("CHECK usm_pages %s every page written back (%ld wrong)\n", wrong ? "FAIL" : "PASS",
           wrong);
    return wrong != 0;
}
