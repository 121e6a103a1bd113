/*
 * matmul.c - the demo: a matrix multiply C = A x B spread over every OpenMP
 * device (one MPI rank each), checked against the host.
 *
 * Each device gets a band of rows of A and all of B and computes its band
 * of C in a `target nowait` region; the bands run at once and the host
 * waits for all of them (taskwait). Each region reports which MPI rank,
 * machine and process ran it and how long it computed, so the demo can
 * show that every device was busy, and at once: the devices' busy time
 * added up, divided by the time the host waited, is how many computed at
 * once on average.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef N
#define N 768
#endif

/* What a device reports about its band. */
typedef struct band {
    int rank, pid;
    double seconds;         /* computing, on the device's clock */
    char host[32];
} band;

/* Which MPI rank runs this code (the launcher's environment). */
#pragma omp declare target
static int my_rank(void)
{
    const char *r = getenv("PMI_RANK");
    if (!r)
        r = getenv("OMPI_COMM_WORLD_RANK");
    return r ? atoi(r) : -1;
}
#pragma omp end declare target

/* Rows lo..hi-1 of C, on device d, reporting into *b. */
static void multiply_band(const double *A, const double *B, double *C, int lo, int hi,
                          int d, band *b)
{
    const double *a = A + (size_t)lo * N;
    double *c = C + (size_t)lo * N;
    int rows = hi - lo;
#pragma omp target device(d) nowait firstprivate(rows) \
    map(to: a[0:rows * N], B[0:N * N]) map(from: c[0:rows * N], b[0:1])
    {
        double t0 = omp_get_wtime();
#pragma omp parallel for
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int k = 0; k < N; k++)
                    s += a[(size_t)i * N + k] * B[(size_t)k * N + j];
                c[(size_t)i * N + j] = s;
            }
        b->seconds = omp_get_wtime() - t0;
        b->rank = my_rank();
        b->pid = (int)getpid();
        gethostname(b->host, sizeof b->host - 1);
    }
}

/* The largest difference from the host's product over every 7th row. */
static double max_error(const double *A, const double *B, const double *C)
{
    double maxerr = 0;
    for (int i = 0; i < N; i += 7)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < N; k++)
                s += A[(size_t)i * N + k] * B[(size_t)k * N + j];
            double e = fabs(s - C[(size_t)i * N + j]);
            if (e > maxerr)
                maxerr = e;
        }
    return maxerr;
}

int main(void)
{
    int ndev = omp_get_num_devices();
    if (ndev < 1) {
        fprintf(stderr, "no devices: run with omptarget-mpirun -n 3 ./matmul\n");
        return 1;
    }
    double *A = malloc(sizeof(double) * N * N), *B = malloc(sizeof(double) * N * N);
    double *C = calloc((size_t)N * N, sizeof(double));
    band *bands = calloc((size_t)ndev, sizeof *bands);
    if (!A || !B || !C || !bands) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (int i = 0; i < N * N; i++) {
        A[i] = (double)((i * 7) % 13) - 6.0;
        B[i] = (double)((i * 5) % 11) / 4.0;
    }
    printf("C = A x B with N = %d on %d devices (MPI ranks 1..%d)\n", N, ndev, ndev);
    double t0 = omp_get_wtime();
    for (int d = 0; d < ndev; d++)
        multiply_band(A, B, C, d * N / ndev, (d + 1) * N / ndev, d, &bands[d]);
#pragma omp taskwait
    double elapsed = omp_get_wtime() - t0;

    double busy = 0;
    int ok = 1;
    for (int d = 0; d < ndev; d++) {
        band *b = &bands[d];
        printf("  rows %4d..%4d  device %2d  MPI rank %2d on %s, pid %d: %.3f s\n",
               d * N / ndev, (d + 1) * N / ndev - 1, d, b->rank, b->host, b->pid,
               b->seconds);
        busy += b->seconds;
        ok &= b->rank == d + 1 && b->pid != (int)getpid();
    }
    double maxerr = max_error(A, B, C);
    ok &= maxerr < 1e-9;
    printf("C[0][0] = %.3f  C[%d][%d] = %.3f\n", C[0], N - 1, N - 1, C[(size_t)N * N - 1]);
    printf("check: %s (max error %.2e over %d checked rows; every band ran on its own rank)\n",
           ok ? "PASSED" : "FAILED", maxerr, (N + 6) / 7);
    printf("time: %.3f s from the first band sent to the last one back (%.2f GFLOP/s)\n",
           elapsed, 2.0 * N * N * N / elapsed / 1e9);
    printf("concurrency: the devices computed %.3f s in all, %.2f of %d at once on "
           "average\n", busy, busy / elapsed, ndev);
    free(A), free(B), free(C), free(bands);
    return ok ? 0 : 1;
}
