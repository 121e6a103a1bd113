/*
 * gpu_common.h - what the GPU check's programs (gpu_matmul, gpu_nowait)
 * share: the job's devices as the plugin's map names them, a region that
 * says where it ran, and checks that are all counted and reported
 * (a check that fails does not stop the program: the summary names each).
 *
 * Output, one line each, read by ci/gpu-check.sh:
 *   DEVICE d <what the map says> | <what the region reported>
 *   CHECK <name> PASS|FAIL|SKIP <detail>
 *   TIME <name> <detail>
 *   PASS <program>: <what> | FAIL <program>: <n> of <m> checks failed
 *
 * A device is the CPU of a rank (its own device, the plugin's) or a device
 * that rank proxies for another libomptarget plugin (`cuda`, or `x86_64`
 * for OMPTARGET_MPI_REMOTE_PLUGINS=host): an "accelerator" here. The
 * numbering is the plugin's: a rank's CPU, then its proxied devices.
 */
#ifndef GPU_COMMON_H
#define GPU_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <omp.h>

#ifndef GPU_PROGRAM
#define GPU_PROGRAM "gpu program"
#endif

/* The variant this program was built as (sm_80, sm_90, jit_sm_NN): a jit
 * variant holds LLVM IR for nvptx64 only, so a CPU device has no image
 * and runs no region (GPU_NO_CPU_IMAGE). */
#ifndef GPU_VARIANT
#define GPU_VARIANT "unknown"
#endif
#ifdef GPU_NO_CPU_IMAGE
#define GPU_IMAGES "nvptx64 LLVM IR only"
#else
#define GPU_IMAGES "x86_64 and an nvptx64 cubin"
#endif

#define GPU_MAX_DEVICES 256

/* ---- checks ---------------------------------------------------------- */

static int gpu_checks, gpu_failed, gpu_skipped;

static void gpu_check(int ok, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void gpu_check(int ok, const char *name, const char *fmt, ...)
{
    va_list ap;
    gpu_checks++;
    gpu_failed += !ok;
    printf("CHECK %s %s ", name, ok ? "PASS" : "FAIL");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* A check that cannot run in this job (gpu_nowait's exchanges). */
static void gpu_skip(const char *name, const char *why) __attribute__((unused));
static void gpu_skip(const char *name, const char *why)
{
    gpu_skipped++;
    printf("CHECK %s SKIP %s\n", name, why);
    fflush(stdout);
}

/* The program's last line and exit status. */
static int gpu_finish(const char *what)
{
    if (gpu_failed) {
        printf("FAIL %s: %d of %d checks failed (%s)\n", GPU_PROGRAM, gpu_failed, gpu_checks,
               what);
        return 1;
    }
    if (!gpu_checks) {
        printf("FAIL %s: no check ran (%s)\n", GPU_PROGRAM, what);
        return 1;
    }
    printf("PASS %s: %d checks passed, %d skipped (%s)\n", GPU_PROGRAM, gpu_checks, gpu_skipped,
           what);
    return 0;
}

/* ---- the job's devices ------------------------------------------------ */

typedef struct gpu_dev {
    int rank;               /* the rank serving it, -1 if the map does not say */
    int proxied;            /* 1: a device of another plugin on that rank */
    char plugin[32];        /* "cuda", "x86_64"... ("cpu" for the rank's own) */
    int local;              /* the plugin's number of the device */
    char host[64];
    long long pid;          /* the rank's process (from the map) */
} gpu_dev;

typedef struct gpu_job {
    int n;                  /* omp_get_num_devices() */
    gpu_dev dev[GPU_MAX_DEVICES];
    int mapped;             /* the map was read */
} gpu_job;

/* Reads the map the plugin writes at start-up (OMPTARGET_MPI_MAP, which
 * omptarget-mpirun sets): `rank R device D pid P host H` a rank (D its
 * CPU), `device D rank R unit U plugin P local L host H` a proxied device. */
static void gpu_job_read(gpu_job *job)
{
    memset(job, 0, sizeof *job);
    job->n = omp_get_num_devices();
    if (job->n > GPU_MAX_DEVICES)
        job->n = GPU_MAX_DEVICES;
    for (int d = 0; d < job->n; d++) {
        job->dev[d].rank = -1;
        job->dev[d].local = -1;
        snprintf(job->dev[d].plugin, sizeof job->dev[d].plugin, "?");
    }
    const char *path = getenv("OMPTARGET_MPI_MAP");
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        int r, d, l;
        unsigned u;
        long long pid;
        char host[64], plugin[32];
        if (sscanf(line, "rank %d device %d pid %lld host %63s", &r, &d, &pid, host) == 4) {
            if (d >= 0 && d < job->n) {
                gpu_dev *g = &job->dev[d];
                g->rank = r, g->proxied = 0, g->local = 0, g->pid = pid;
                snprintf(g->plugin, sizeof g->plugin, "cpu");
                snprintf(g->host, sizeof g->host, "%s", host);
                job->mapped = 1;
            }
            /* The rank's pid, for its proxied devices. */
            for (int i = 0; i < job->n; i++)
                if (job->dev[i].rank == r)
                    job->dev[i].pid = pid;
        } else if (sscanf(line, "device %d rank %d unit %u plugin %31s local %d host %63s", &d,
                          &r, &u, plugin, &l, host) == 6) {
            if (d >= 0 && d < job->n) {
                gpu_dev *g = &job->dev[d];
                g->rank = r, g->proxied = 1, g->local = l;
                snprintf(g->plugin, sizeof g->plugin, "%s", plugin);
                snprintf(g->host, sizeof g->host, "%s", host);
                for (int i = 0; i < job->n; i++)
                    if (!job->dev[i].proxied && job->dev[i].rank == r)
                        g->pid = job->dev[i].pid;
            }
        }
    }
    fclose(f);
}

/* "cuda device 0 of rank 1 on node1", "the CPU of rank 1 on node1". */
static const char *gpu_dev_name(const gpu_job *job, int d, char *buf, size_t len)
{
    const gpu_dev *g = &job->dev[d];
    if (g->rank < 0)
        snprintf(buf, len, "device %d (not in the map)", d);
    else if (g->proxied)
        snprintf(buf, len, "%s device %d of rank %d on %s", g->plugin, g->local, g->rank,
                 g->host);
    else
        snprintf(buf, len, "the CPU of rank %d on %s", g->rank, g->host);
    return buf;
}

/* The CPU device of rank r, or -1. */
static int gpu_cpu_of(const gpu_job *job, int r)
{
    for (int d = 0; d < job->n; d++)
        if (!job->dev[d].proxied && job->dev[d].rank == r)
            return d;
    return -1;
}

/* ---- where a region ran ----------------------------------------------- */

enum { WHERE_HOST = 0, WHERE_CPU = 1, WHERE_NVPTX = 2 };

typedef struct gpu_where {
    int kind;               /* WHERE_* */
    int device_num;         /* omp_get_device_num() in the region */
    int teams, threads;     /* of the region's first team */
    int rank;               /* a CPU device's MPI rank (its environment) */
    int pid;                /* a CPU device's process */
    int smid;               /* a GPU's multiprocessor that ran team 0 */
} gpu_where;

#pragma omp declare target
/* Runs in a region: fills *w from where the region runs. */
static void gpu_where_here(gpu_where *w)
{
    w->device_num = omp_get_device_num();
    w->teams = omp_get_num_teams();
    w->threads = omp_get_num_threads();
#if defined(__NVPTX__)
    unsigned sm;
    __asm__ volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    w->kind = WHERE_NVPTX;
    w->smid = (int)sm;
    w->rank = -1;
    w->pid = 0;
#else
    w->kind = omp_is_initial_device() ? WHERE_HOST : WHERE_CPU;
    w->smid = -1;
    const char *r = getenv("PMI_RANK");
    if (!r)
        r = getenv("OMPI_COMM_WORLD_RANK");
    w->rank = r ? atoi(r) : -1;
    w->pid = (int)getpid();
#endif
}
#pragma omp end declare target

/* Asks device d where its regions run. */
static gpu_where gpu_where_on(int d)
{
    gpu_where w = {.kind = -1, .device_num = -1};
    int threads = 0;
#pragma omp target teams device(d) map(tofrom : w, threads)
    {
        if (omp_get_team_num() == 0) {
            gpu_where_here(&w);
#pragma omp parallel
            {
                if (omp_get_thread_num() == 0)
                    threads = omp_get_num_threads();
            }
        }
    }
    w.threads = threads;
    return w;
}

static const char *gpu_where_text(const gpu_where *w, char *buf, size_t len)
{
    switch (w->kind) {
    case WHERE_NVPTX:
        snprintf(buf, len, "ran on nvptx64: omp_get_device_num() %d, %d teams x %d threads, "
                 "team 0 on SM %d", w->device_num, w->teams, w->threads, w->smid);
        break;
    case WHERE_CPU:
        snprintf(buf, len, "ran on x86_64 in rank %d, pid %d: %d teams x %d threads",
                 w->rank, w->pid, w->teams, w->threads);
        break;
    case WHERE_HOST:
        snprintf(buf, len, "ran on the host (rank 0): the device took no image");
        break;
    default:
        snprintf(buf, len, "did not run");
    }
    return buf;
}

/* Whether what device d's region reported fits what the map says of d:
 * a CPU device runs x86_64 code in its rank; a cuda device runs nvptx64
 * code with omp_get_device_num() its local number (libomptarget 16's
 * plugins give their device environment their own numbering); an x86_64
 * plugin's device runs in the rank that proxies it. */
static int gpu_where_fits(const gpu_job *job, int d, const gpu_where *w)
{
    const gpu_dev *g = &job->dev[d];
    if (g->rank < 0)
        return w->kind == WHERE_CPU || w->kind == WHERE_NVPTX;
    if (!g->proxied || !strcmp(g->plugin, "x86_64"))
        return w->kind == WHERE_CPU && w->rank == g->rank && w->pid == (int)g->pid;
    if (!strcmp(g->plugin, "cuda"))
        return w->kind == WHERE_NVPTX && w->device_num == g->local;
    return w->kind != WHERE_HOST;
}

/* Whether device d can run this program's regions (a CPU device cannot
 * in a jit variant, which holds no x86_64 image). */
static int gpu_runs_regions(const gpu_job *job, int d)
{
#ifdef GPU_NO_CPU_IMAGE
    const gpu_dev *g = &job->dev[d];
    return g->proxied && strcmp(g->plugin, "x86_64") != 0;
#else
    (void)job, (void)d;
    return 1;
#endif
}

/* Prints a DEVICE line per device, checks that each of its regions ran
 * where the map says, and returns how many accelerators (proxied devices)
 * the job has. */
static int gpu_devices_report(const gpu_job *job, gpu_where *where)
{
    int accels = 0;
    char name[160], text[200], check[64];
    for (int d = 0; d < job->n; d++) {
        gpu_dev_name(job, d, name, sizeof name);
        accels += job->dev[d].proxied;
        snprintf(check, sizeof check, "where_device_%d", d);
        if (!gpu_runs_regions(job, d)) {
            where[d] = (gpu_where){.kind = -1, .device_num = -1};
            printf("DEVICE %d %s | no region: the %s variant holds no x86_64 image\n", d, name,
                   GPU_VARIANT);
            continue;
        }
        where[d] = gpu_where_on(d);
        gpu_where_text(&where[d], text, sizeof text);
        printf("DEVICE %d %s | %s\n", d, name, text);
        gpu_check(gpu_where_fits(job, d, &where[d]), check, "device %d (%s) %s", d, name, text);
    }
    return accels;
}

/* ---- arguments ------------------------------------------------------- */

/* `--NAME VALUE` among argv, as a positive number, else def. */
static long gpu_arg(int argc, char **argv, const char *name, long def)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name)) {
            long v = strtol(argv[i + 1], NULL, 10);
            return v > 0 ? v : def;
        }
    return def;
}

#endif
