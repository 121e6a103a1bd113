/*
 * bench_util.h - what the benchmark programs share (header only, so that
 * the gcc-built MPI programs and the clang-built OpenMP program both use it).
 *
 * A program measures each figure in `runs` independent runs and prints one
 * line per figure on stdout, which ci/bench.sh collects:
 *
 *   BENCH <key> <unit> <median> <min> <max> <runs>
 *   CHECK <key> PASS|FAIL <what was checked>
 *
 * BENCH lines carry figures only (nothing is asserted about them); a CHECK
 * line with FAIL makes ci/bench.sh fail. The options every program takes:
 * its part (which measurements), then `quick` (every measurement once,
 * small sizes) or `full`.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_MAX_RUNS 64

/* The transfer sizes of the bandwidth figures, full and quick. */
static const size_t bench_sizes_full[] = {64u << 10, 1u << 20, 64u << 20, 256u << 20};
static const size_t bench_sizes_quick[] = {64u << 10, 1u << 20};

typedef struct bench_opts {
    int quick;              /* every measurement once, small sizes */
    int runs;               /* runs per figure: 1 quick, else BENCH_RUNS or 5 */
    const size_t *sizes;    /* bandwidth sizes */
    int nsizes;
    size_t map_size;        /* bytes of the map(tofrom:) cycle */
    int regions;            /* concurrent nowait regions per run */
    double idle_s;          /* length of the idle window */
} bench_opts;

/* Options from the program's mode word ("quick" or "full"). */
static inline bench_opts bench_options(const char *mode)
{
    bench_opts o;
    o.quick = mode && strcmp(mode, "quick") == 0;
    const char *r = getenv("BENCH_RUNS");
    o.runs = o.quick ? 1 : (r && atoi(r) >= 5 ? atoi(r) : 5);
    if (o.runs > BENCH_MAX_RUNS)
        o.runs = BENCH_MAX_RUNS;
    o.sizes = o.quick ? bench_sizes_quick : bench_sizes_full;
    o.nsizes = o.quick ? 2 : 4;
    o.map_size = o.quick ? (1u << 20) : (64u << 20);
    o.regions = o.quick ? 1000 : 10000;
    o.idle_s = o.quick ? 0.2 : 2.0;
    return o;
}

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void bench_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static inline int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Prints the BENCH line of n run values (sorts them). */
static inline void bench_report(const char *key, const char *unit, double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    printf("BENCH %s %s %.6g %.6g %.6g %d\n", key, unit, med, v[0], v[n - 1], n);
    fflush(stdout);
}

/* Repetitions of a transfer of `size` bytes in one run: about 64 MiB moved
 * per run, at least one. */
static inline int bench_reps(size_t size)
{
    size_t r = (64u << 20) / size;
    return r < 1 ? 1 : r > 2000 ? 2000 : (int)r;
}

/* Size as a key suffix: 64K, 1M, 256M. */
static inline const char *bench_size_name(size_t size, char *buf, size_t len)
{
    if (size >= (1u << 20) && size % (1u << 20) == 0)
        snprintf(buf, len, "%zuM", size >> 20);
    else if (size >= 1024 && size % 1024 == 0)
        snprintf(buf, len, "%zuK", size >> 10);
    else
        snprintf(buf, len, "%zu", size);
    return buf;
}

/* utime + stime of a process in seconds, from /proc/<pid>/stat; -1 when it
 * cannot be read. */
static inline double bench_cpu_seconds(long pid)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = 0;
    /* The command name may hold spaces: fields count from its ')'. */
    char *p = strrchr(line, ')');
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                     &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* CPU used by the host (this process) and a worker while the host sleeps
 * for `window` seconds with nothing pending, in % of one core, both ranks
 * together; measuring starts after 10 ms of idleness. -1 on failure. */
static inline double bench_idle_cpu(long worker_pid, double window)
{
    bench_sleep(0.010);
    double h0 = bench_cpu_seconds((long)getpid()), w0 = bench_cpu_seconds(worker_pid);
    double t0 = bench_now();
    bench_sleep(window);
    double h1 = bench_cpu_seconds((long)getpid()), w1 = bench_cpu_seconds(worker_pid);
    double t1 = bench_now();
    if (h0 < 0 || w0 < 0 || h1 < 0 || w1 < 0)
        return -1;
    return 100.0 * ((h1 - h0) + (w1 - w0)) / (t1 - t0);
}

#endif
