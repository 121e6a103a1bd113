/*
 * gpu_matmul: the matrix product C = A x B (N x N doubles) on every device
 * of the job, the ranks' CPUs and the GPUs they proxy (or, with
 * OMPTARGET_MPI_REMOTE_PLUGINS=host, the node's host plugin's devices),
 * each result checked against the host's.
 *
 *   gpu_matmul [--n N] [--reps R]
 *
 * 1. Each device computes the whole product once it holds A and B (target
 *    data), its region timed on the host: the first region (which loads
 *    the image, and on a jit variant compiles it), then the best of R
 *    more; the time with the transfers beside it. A GPU's time is set
 *    against the CPU device of the rank that serves it.
 * 2. The product in bands, one per accelerator, all at once (nowait):
 *    which device computed which rows, checked; a job without an
 *    accelerator fails here.
 * Every region also says where it ran (gpu_common.h): a region that the
 * host ran in the device's place (libomptarget's fallback when a device
 * took no image) is a failure, not a result.
 */
#define GPU_PROGRAM "gpu_matmul"
#include "gpu_common.h"

#include <math.h>

/* C = A x B on device d; A, B and C already there (target data). One
 * thread per element of C, k innermost: B's rows read across the threads
 * of a GPU warp. teams: 0 lets the runtime choose (what a program without
 * num_teams gets), else num_teams(teams). */
static void product_on(int d, const double *A, const double *B, double *C, int n, int teams,
                       gpu_where *w)
{
    size_t nn = (size_t)n * n;
    if (teams > 0) {
#pragma omp target teams distribute parallel for collapse(2) device(d) num_teams(teams) \
    map(to : A[0:nn], B[0:nn]) map(from : C[0:nn]) map(from : w[0:1])
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int k = 0; k < n; k++)
                    s += A[(size_t)i * n + k] * B[(size_t)k * n + j];
                C[(size_t)i * n + j] = s;
                if (i == 0 && j == 0)
                    gpu_where_here(w);
            }
        return;
    }
#pragma omp target teams distribute parallel for collapse(2) device(d) \
    map(to : A[0:nn], B[0:nn]) map(from : C[0:nn]) map(from : w[0:1])
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += A[(size_t)i * n + k] * B[(size_t)k * n + j];
            C[(size_t)i * n + j] = s;
            if (i == 0 && j == 0)
                gpu_where_here(w);
        }
}

/* Rows lo..hi-1 of C on device d, nowait; *w says where. */
static void band_on(int d, const double *A, const double *B, double *C, int n, int lo, int hi,
                    gpu_where *w)
{
    size_t nn = (size_t)n * n, rows = (size_t)(hi - lo);
    const double *a = A + (size_t)lo * n;
    double *c = C + (size_t)lo * n;
#pragma omp target teams distribute parallel for collapse(2) device(d) nowait \
    map(to : a[0:rows * n], B[0:nn]) map(from : c[0:rows * n]) map(from : w[0:1])
    for (int i = 0; i < hi - lo; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += a[(size_t)i * n + k] * B[(size_t)k * n + j];
            c[(size_t)i * n + j] = s;
            if (i == 0 && j == 0)
                gpu_where_here(w);
        }
}

/* The largest difference from the host's product (R = A x B). */
static double max_error(const double *R, const double *C, size_t lo, size_t hi)
{
    double e = 0;
    for (size_t i = lo; i < hi; i++) {
        double x = fabs(R[i] - C[i]);
        if (x > e || x != x)
            e = x;
    }
    return e;
}

int main(int argc, char **argv)
{
    int n = (int)gpu_arg(argc, argv, "--n", 1536);
    int reps = (int)gpu_arg(argc, argv, "--reps", 3);
    gpu_job job;
    gpu_job_read(&job);
    size_t nn = (size_t)n * n;
    double flop = 2.0 * n * (double)n * n;
    printf("gpu_matmul: C = A x B, N = %d (%.2f GFLOP a product), %d devices, variant %s\n", n,
           flop / 1e9, job.n, GPU_VARIANT);
    if (job.n < 1) {
        gpu_check(0, "devices", "omp_get_num_devices() = 0: no device took this program's "
                  "images (%s; under omptarget-mpirun?)", GPU_IMAGES);
        return gpu_finish("no device");
    }
    if (!job.mapped)
        printf("gpu_matmul: no map (OMPTARGET_MPI_MAP): the devices are not named\n");

    static gpu_where where[GPU_MAX_DEVICES];
    int accels = gpu_devices_report(&job, where);

    double *A = malloc(nn * sizeof *A), *B = malloc(nn * sizeof *B);
    double *Bt = malloc(nn * sizeof *Bt), *R = malloc(nn * sizeof *R);
    double *C = malloc(nn * sizeof *C);
    if (!A || !B || !Bt || !R || !C) {
        gpu_check(0, "memory", "no host memory for 5 matrices of N = %d", n);
        return gpu_finish("out of memory");
    }
    /* Small integers: every product is exact in double, on any device. */
    for (size_t i = 0; i < nn; i++) {
        A[i] = (double)((i * 7) % 13) - 6.0;
        B[i] = (double)((i * 5) % 11) / 4.0;
    }
    double t0 = omp_get_wtime();
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            Bt[(size_t)j * n + i] = B[(size_t)i * n + j];
#pragma omp parallel for
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++)
                s += A[(size_t)i * n + k] * Bt[(size_t)j * n + k];
            R[(size_t)i * n + j] = s;
        }
    double host_time = omp_get_wtime() - t0;
    printf("TIME host: the reference product on rank 0 took %.3f s (%d threads)\n", host_time,
           omp_get_max_threads());

    /* 1. The whole product on each device: with the teams the runtime
     * chooses, and on a GPU also with num_teams(one per 128 elements of C):
     * what the GPU can do when the program asks. */
    static double best[GPU_MAX_DEVICES], best_teams[GPU_MAX_DEVICES];
    int jit = !strncmp(GPU_VARIANT, "jit", 3);
    int gpu_teams = (int)(((size_t)n * n + 127) / 128 > 65535 ? 65535 : ((size_t)n * n + 127) / 128);
    char name[160], text[200], check[64];
    for (int d = 0; d < job.n; d++) {
        best[d] = best_teams[d] = -1;
        if (!gpu_runs_regions(&job, d))
            continue;
        int is_gpu = job.dev[d].proxied && strcmp(job.dev[d].plugin, "x86_64") != 0;
        gpu_dev_name(&job, d, name, sizeof name);
        memset(C, 0, nn * sizeof *C);
        gpu_where w = {.kind = -1}, wt = {.kind = -1};
        double ta = omp_get_wtime(), first = 0, all = 0, tb = 0, err_teams = 0;
#pragma omp target data device(d) map(to : A[0:nn], B[0:nn]) map(from : C[0:nn])
        {
            tb = omp_get_wtime();
            product_on(d, A, B, C, n, 0, &w);
            first = omp_get_wtime() - tb;
            for (int r = 0; r < reps; r++) {
                double t = omp_get_wtime();
                product_on(d, A, B, C, n, 0, &w);
                t = omp_get_wtime() - t;
                if (best[d] < 0 || t < best[d])
                    best[d] = t;
            }
        }
        all = omp_get_wtime() - ta;
        double err = max_error(R, C, 0, nn);
        snprintf(check, sizeof check, "matmul_device_%d", d);
        gpu_where_text(&w, text, sizeof text);
        gpu_check(err == 0 && gpu_where_fits(&job, d, &w), check,
                  "device %d (%s): C checked against the host, max error %.1e; the region %s",
                  d, name, err, text);
        if (is_gpu) {
            memset(C, 0, nn * sizeof *C);
#pragma omp target data device(d) map(to : A[0:nn], B[0:nn]) map(from : C[0:nn])
            {
                product_on(d, A, B, C, n, gpu_teams, &wt);
                for (int r = 0; r < reps; r++) {
                    double t = omp_get_wtime();
                    product_on(d, A, B, C, n, gpu_teams, &wt);
                    t = omp_get_wtime() - t;
                    if (best_teams[d] < 0 || t < best_teams[d])
                        best_teams[d] = t;
                }
            }
            err_teams = max_error(R, C, 0, nn);
            snprintf(check, sizeof check, "matmul_teams_device_%d", d);
            gpu_where_text(&wt, text, sizeof text);
            gpu_check(err_teams == 0 && gpu_where_fits(&job, d, &wt), check,
                      "device %d (%s) with num_teams(%d): C checked against the host, max "
                      "error %.1e; the region %s", d, name, gpu_teams, err_teams, text);
        }
        printf("TIME device %d (%s): first region %.3f s (loads the image%s), best of %d "
               "%.4f s = %.1f GFLOP/s (%d teams x %d threads, the runtime's choice)",
               d, name, first, jit ? ", JIT-compiles it" : "", reps, best[d],
               best[d] > 0 ? flop / best[d] / 1e9 : 0.0, w.teams, w.threads);
        if (best_teams[d] > 0)
            printf(", with num_teams(%d) %.4f s = %.1f GFLOP/s (%d teams x %d threads)",
                   gpu_teams, best_teams[d], flop / best_teams[d] / 1e9, wt.teams, wt.threads);
        printf("; with the transfers and %d more %.3f s\n", reps, all);
    }
    /* The accelerators against their rank's CPU device. */
    for (int d = 0; d < job.n; d++) {
        if (!job.dev[d].proxied || best[d] <= 0)
            continue;
        int cpu = gpu_cpu_of(&job, job.dev[d].rank);
        gpu_dev_name(&job, d, name, sizeof name);
        if (cpu >= 0 && best[cpu] > 0 && best_teams[d] > 0)
            printf("TIME compare device %d (%s): %.4f s (runtime's teams), %.4f s "
                   "(num_teams(%d)) against %.4f s on device %d, rank %d's CPU: %.1fx, %.1fx\n",
                   d, name, best[d], best_teams[d], gpu_teams, best[cpu], cpu, job.dev[d].rank,
                   best[cpu] / best[d], best[cpu] / best_teams[d]);
        else if (cpu >= 0 && best[cpu] > 0)
            printf("TIME compare device %d (%s): %.4f s against %.4f s on device %d, rank %d's "
                   "CPU: %.1fx\n", d, name, best[d], best[cpu], cpu, job.dev[d].rank,
                   best[cpu] / best[d]);
        else
            printf("TIME compare device %d (%s): %.4f s; rank %d's CPU device ran no product "
                   "(variant %s)\n", d, name, best[d], job.dev[d].rank, GPU_VARIANT);
    }

    /* 2. Bands, one per accelerator, all at once. */
    int band_dev[GPU_MAX_DEVICES], nb = 0;
    for (int d = 0; d < job.n; d++)
        if (job.dev[d].proxied && gpu_runs_regions(&job, d))
            band_dev[nb++] = d;
    if (!nb) {
        /* The GPU check's job must have its GPUs (or the host plugin's
         * devices): without them it checked only the ranks' CPUs. */
        gpu_check(0, "matmul_bands", "%s", accels ? "no accelerator runs this variant's regions"
                  : "the job has no accelerator (proxied device): OMPTARGET_MPI_REMOTE_PLUGINS?");
    } else {
        static gpu_where bw[GPU_MAX_DEVICES];
        memset(C, 0, nn * sizeof *C);
        double tb = omp_get_wtime();
        for (int b = 0; b < nb; b++)
            band_on(band_dev[b], A, B, C, n, b * n / nb, (b + 1) * n / nb, &bw[b]);
#pragma omp taskwait
        tb = omp_get_wtime() - tb;
        int fits = 1;
        for (int b = 0; b < nb; b++) {
            int lo = b * n / nb, hi = (b + 1) * n / nb, d = band_dev[b];
            double err = max_error(R, C, (size_t)lo * n, (size_t)hi * n);
            gpu_dev_name(&job, d, name, sizeof name);
            gpu_where_text(&bw[b], text, sizeof text);
            printf("BAND rows %d..%d: device %d, %s: max error %.1e; the region %s\n", lo,
                   hi - 1, d, name, err, text);
            fits &= err == 0 && gpu_where_fits(&job, d, &bw[b]);
        }
        double err = max_error(R, C, 0, nn);
        gpu_check(fits && err == 0, "matmul_bands",
                  "C in %d bands on %d accelerators at once (nowait), checked against the host: "
                  "max error %.1e, every band where the map says", nb, nb, err);
        printf("TIME bands: %.3f s for the product on %d accelerators at once, transfers "
               "included\n", tb, nb);
    }
    free(A), free(B), free(Bt), free(R), free(C);
    char what[128];
    snprintf(what, sizeof what, "N = %d on %d devices, %d of them accelerators, variant %s", n,
             job.n, accels, GPU_VARIANT);
    return gpu_finish(what);
}
