/* omp_fault_null: EXPECTED TO FAIL (run_omp.sh --expect-fail). A target
 * region on device 0 dereferences NULL; the address comes from the host as
 * a firstprivate integer, so the compiler cannot see that it is NULL.
 * The program says on stdout that it got that far ("RUN omp_fault_null: ...",
 * flushed: the host may be taken down with the device), then runs the
 * region; the plugin must report the fault on rank 0's stderr and the job
 * must end with a non-zero status and no process left. Should the region
 * return, the program says so on stderr and exits with status 3 (never 0).
 */
#define OMP_TEST_NAME "omp_fault_null"
#include "omp_check.h"

int main(void)
{
    int ndev = require_devices(1);
    volatile uintptr_t zero = 0;
    uintptr_t addr = zero;
    int out = 0;
    printf("RUN omp_fault_null: %d devices, now a region on device 0 reads address 0x0\n",
           ndev);
    fflush(stdout);
#pragma omp target device(0) map(from: out) firstprivate(addr)
    out = *(volatile int *)addr;
    fprintf(stderr, "FAIL omp_fault_null: the faulting region returned (out = %d)\n", out);
    return 3;
}
