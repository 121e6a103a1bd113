/*
 * bench_host_code.c - what a call through rank 0's addresses costs in a
 * region: each device rank places rank 0's program at rank 0's addresses
 * (otm/host_code.h), a call into that code faults and is resumed in the
 * device's own copy, and a table of pointers read there (as a virtual
 * table is) names the device's own functions. Per call, in one run:
 *
 *   call_device_ns      a device function called through a pointer taken
 *                       in the region: the baseline       (ns per call)
 *   call_host_table_ns  a function named by a constant table of rank 0's
 *                       (a virtual call: no signal)       (ns per call)
 *   call_host_ptr_ns    a host function pointer handed to the region: one
 *                       signal per call                   (ns per call)
 *
 * Every call's result is summed and checked on the host (CHECK line).
 *
 * usage: bench_host_code quick|full
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"

#pragma omp declare target
__attribute__((noinline)) int bump(int x) { return x + 1; }
#pragma omp end declare target

typedef int (*fn_t)(int);
/* Pointers relocated at load: RELRO, placed at rank 0's address. */
static const fn_t table[2] = {bump, bump};

static bench_opts o;
static long wrong;

/* n calls of the function `how` says, in one region; seconds per call. */
static double calls(int how, long n)
{
    uintptr_t host_fn = (uintptr_t)bump, host_table = (uintptr_t)table;
    long sum = 0;
    double t0 = bench_now();
#pragma omp target map(tofrom : sum) firstprivate(how, n, host_fn, host_table)
    {
        volatile fn_t f = how == 0   ? bump
                          : how == 1 ? ((const fn_t *)host_table)[1]
                                     : (fn_t)host_fn;
        long s = 0;
        for (long i = 0; i < n; i++)
            s += f((int)(i & 1023));
        sum = s;
    }
    double t = bench_now() - t0;
    long want = 0;
    for (long i = 0; i < n; i++)
        want += (i & 1023) + 1;
    wrong += sum != want;
    return t / (double)n;
}

int main(int argc, char **argv)
{
    static const char *keys[] = {"call_device_ns", "call_host_table_ns", "call_host_ptr_ns"};
    o = bench_options(argc > 1 ? argv[1] : "quick");
    if (omp_get_num_devices() < 1) {
        fprintf(stderr, "bench_host_code: no device (run it under omptarget-mpirun)\n");
        return 1;
    }
    calls(0, 1);       /* the first region loads the image: not a figure */
    long n = o.quick ? 10000 : 100000;
    for (int how = 0; how < 3; how++) {
        double per[BENCH_MAX_RUNS];
        for (int r = 0; r < o.runs; r++)
            per[r] = 1e9 * calls(how, n);
        bench_report(keys[how], "ns", per, o.runs);
    }
    printf("CHECK host_code_calls %s every call's result summed right (%ld wrong)\n",
           wrong ? "FAIL" : "PASS", wrong);
    return wrong != 0;
}
