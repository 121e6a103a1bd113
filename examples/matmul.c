/*
 * matmul.c - the demo: a blocked matrix multiply C = A x B spread over every
 * OpenMP device (one MPI rank each), checked against the host.
 *
 * Each device gets a band of rows of A and all of B, computes its band of C
 * in a `target teams distribute parallel for` region, and reports which MPI
 * rank and process ran it. The bands run concurrently (nowait + taskwait).
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

static double now(void)
{
    return omp_get_wtime();
}

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

int main(void)
{
    int ndev = omp_get_num_devices();
    if (ndev < 1) {
        fprintf(stderr, "no devices: run with omptarget-mpirun -n 3 ./matmul\n");
        return 1;
    }
    double *A = malloc(sizeof(double) * N * N), *B = malloc(sizeof(double) * N * N);
    double *C = calloc((size_t)N * N, sizeof(double));
    int *rank_of = calloc((size_t)ndev, sizeof(int)), *pid_of = calloc((size_t)ndev, sizeof(int));
    for (int i = 0; i < N * N; i++) {
        A[i] = (double)((i * 7) % 13) - 6.0;
        B[i] = (double)((i * 5) % 11) / 4.0;
    }
    printf("C = A x B with N = %d on %d devices (MPI ranks 1..%d)\n", N, ndev, ndev);
    double t0 = now();
    for (int d = 0; d < ndev; d++) {
        int lo = d * N / ndev, hi = (d + 1) * N / ndev;
        double *a = A + (size_t)lo * N, *c = C + (size_t)lo * N;
        int rows = hi - lo;
        int *r = &rank_of[d], *p = &pid_of[d];
        #pragma omp target teams distribute parallel for device(d) nowait \
            map(to: a[0:rows * N], B[0:N * N]) map(from: c[0:rows * N], r[0:1], p[0:1])
        for (int i = 0; i < rows; i++) {
            if (i == 0) {
                *r = my_rank();
                *p = (int)getpid();
            }
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int k = 0; k < N; k++)
                    s += a[(size_t)i * N + k] * B[(size_t)k * N + j];
                c[(size_t)i * N + j] = s;
            }
        }
    }
    #pragma omp taskwait
    double t1 = now();
    for (int d = 0; d < ndev; d++)
        printf("  rows %4d..%4d  device %d  MPI rank %d  pid %d\n", d * N / ndev,
               (d + 1) * N / ndev - 1, d, rank_of[d], pid_of[d]);
    /* Check every 7th row against the host. */
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
    int ok = maxerr < 1e-9;
    for (int d = 0; d < ndev; d++)
        ok &= rank_of[d] == d + 1 && pid_of[d] != (int)getpid();
    printf("C[0][0] = %.3f  C[%d][%d] = %.3f\n", C[0], N - 1, N - 1, C[(size_t)N * N - 1]);
    printf("check: %s (max error %.2e over %d checked rows; every band ran on its own rank)\n",
           ok ? "PASSED" : "FAILED", maxerr, (N + 6) / 7);
    printf("time: %.3f s on the devices (%.2f GFLOP/s)\n", t1 - t0,
           2.0 * N * N * N / (t1 - t0) / 1e9);
    free(A), free(B), free(C), free(rank_of), free(pid_of);
    return ok ? 0 : 1;
}
