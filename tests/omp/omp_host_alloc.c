/* omp_host_alloc: libomptarget 14's allocator extensions:
 * llvm_omp_target_alloc_host (host memory from the plugin, freed with
 * omp_target_free) used as the host side of maps and copies, and
 * llvm_omp_target_alloc_device used like omp_target_alloc. */
#define OMP_TEST_NAME "omp_host_alloc"
#include "omp_check.h"

/* Exported by libomptarget 14, declared by no header of it. */
void *llvm_omp_target_alloc_host(size_t size, int device_num);
void *llvm_omp_target_alloc_device(size_t size, int device_num);

#define N 20000

int main(void)
{
    int ndev = require_devices(2);
    int host = omp_get_initial_device();
    int *h[2];
    for (int k = 0; k < 2; k++) {
        h[k] = llvm_omp_target_alloc_host(N * sizeof(int), k);
        CHECK(h[k], "llvm_omp_target_alloc_host(%zu, %d) returned NULL", N * sizeof(int), k);
    }
    CHECK(h[0] != h[1], "two host allocations share an address");

    for (int i = 0; i < N; i++)
        h[0][i] = i, h[1][i] = -i;
    /* The allocation of device 0 mapped on both devices. */
    for (int dev = 0; dev < ndev; dev++) {
        int *p = h[0];
#pragma omp target device(dev) map(tofrom: p[0:N])
        for (int i = 0; i < N; i++)
            p[i] += 10;
    }
    for (int i = 0; i < N; i++)
        CHECK(h[0][i] == i + 10 * ndev, "h0[%d] = %d, expected %d", i, h[0][i], i + 10 * ndev);

    /* Host allocation <-> device allocation through omp_target_memcpy. */
    int *d = llvm_omp_target_alloc_device(N * sizeof(int), 1);
    CHECK(d, "llvm_omp_target_alloc_device returned NULL");
    CHECK(omp_target_memcpy(d, h[1], N * sizeof(int), 0, 0, 1, host) == 0, "host -> device");
#pragma omp target device(1) is_device_ptr(d)
    for (int i = 0; i < N; i++)
        d[i] *= 3;
    CHECK(omp_target_memcpy(h[0], d, N * sizeof(int), 0, 0, host, 1) == 0, "device -> host");
    for (int i = 0; i < N; i++)
        CHECK(h[0][i] == -3 * i, "h0[%d] = %d after the copy, expected %d", i, h[0][i], -3 * i);
    omp_target_free(d, 1);

    /* Free in reverse order; allocate and free again. */
    omp_target_free(h[1], 1);
    omp_target_free(h[0], 0);
    int rounds = 0;
    for (int k = 0; k < 20; k++) {
        char *p = llvm_omp_target_alloc_host(1000 + k, k % ndev);
        CHECK(p, "round %d: llvm_omp_target_alloc_host returned NULL", k);
        memset(p, k, 1000 + k);
        omp_target_free(p, k % ndev);
        rounds++;
    }
    PASS("llvm_omp_target_alloc_host on devices 0 and 1: mapped tofrom on %d devices, "
         "source and target of omp_target_memcpy with an llvm_omp_target_alloc_device "
         "buffer, %d more alloc/free rounds, freed with omp_target_free", ndev, rounds);
    return 0;
}
