/* omp_fault_shared: EXPECTED TO FAIL (run_omp.sh --expect-fail). LLVM's
 * own test of managed memory (offload/test/api/omp_device_managed_memory.c)
 * as it runs here: the shared allocation is refused (memory cannot be
 * shared across processes) and returns NULL, and a teams loop on device 0
 * writes through it, on every thread of its team. The region's fault must
 * be reported once and end the job (status 139); the team's other threads,
 * faulting after the region was abandoned, must not take the device rank
 * down with a second fault "outside any target region". Should the loop
 * return, the program says so on stderr and exits with status 3. */
#define OMP_TEST_NAME "omp_fault_shared"
#include "omp_check.h"

void *llvm_omp_target_alloc_shared(size_t, int);

#define N 64

int main(void)
{
    int ndev = require_devices(1);
    int *shared_ptr = llvm_omp_target_alloc_shared(N * sizeof(int), 0);
    printf("RUN omp_fault_shared: %d devices, shared memory %s, now a teams loop on "
           "device 0 writes through it\n", ndev, shared_ptr ? "given" : "refused");
    fflush(stdout);
#pragma omp target teams distribute parallel for device(0) is_device_ptr(shared_ptr)
    for (int i = 0; i < N; ++i)
        shared_ptr[i] = 1;
    fprintf(stderr, "FAIL omp_fault_shared: the loop wrote through %p and returned\n",
            (void *)shared_ptr);
    return 3;
}
