/* omp_fault_unmapped: EXPECTED TO FAIL (run_omp.sh --expect-fail). A
 * target region on device 0 reads host memory that was never mapped: the
 * address of a host page, passed as a firstprivate integer and cast back
 * to a pointer. (libomptarget's own host plugin runs the region in the host
 * process, where the read succeeds.)
 * The page is placed where no Linux process has memory unless it asks for
 * it (page_of_its_own), so that the device's read faults. A host stack
 * address, as in a real program, is not always unmapped on the device: a
 * read up to 8 MiB below a device's own stack grows that stack, and
 * returns a zero (seen once in CI).
 * The program says on stdout that it got that far ("RUN omp_fault_unmapped: ...",
 * flushed: the host may be taken down with the device), then runs the
 * region; the plugin must report the fault on rank 0's stderr and the job
 * must end with a non-zero status and no process left. Should the region
 * return, the program says so on stderr and exits with status 3 (never 0).
 */
#define OMP_TEST_NAME "omp_fault_unmapped"
#include "omp_check.h"

int main(void)
{
    int ndev = require_devices(1);
    volatile int *on_host = page_of_its_own();
    *on_host = 42;
    uintptr_t addr = (uintptr_t)on_host;
    int out = 0;
    printf("RUN omp_fault_unmapped: %d devices, now a region on device 0 reads the host "
           "address %p\n", ndev, (void *)addr);
    fflush(stdout);
#pragma omp target device(0) map(from: out) firstprivate(addr)
    out = *(volatile int *)addr;
    fprintf(stderr, "FAIL omp_fault_unmapped: the faulting region returned (out = %d)\n", out);
    return 3;
}
