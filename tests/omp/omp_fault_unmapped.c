/* omp_fault_unmapped: EXPECTED TO FAIL (run_omp.sh --expect-fail). A
 * target region on device 0 reads host memory that was never mapped: the
 * address of a host page, passed as a firstprivate integer and cast back
 * to a pointer. (libomptarget's own host plugin runs the region in the host
 * process, where the read succeeds.)
 * The page is placed where no Linux process has memory unless it asks for
 * it (below the mmap area, far above the heap), so that the device's read
 * faults. A host stack address, as in a real program, is not always
 * unmapped on the device: a read up to 8 MiB below a device's own stack
 * grows that stack, and returns a zero (seen once in CI).
 * The program says on stdout that it got that far ("RUN omp_fault_unmapped: ...",
 * flushed: the host may be taken down with the device), then runs the
 * region; the plugin must report the fault on rank 0's stderr and the job
 * must end with a non-zero status and no process left. Should the region
 * return, the program says so on stderr and exits with status 3 (never 0).
 */
#define OMP_TEST_NAME "omp_fault_unmapped"
#include "omp_check.h"

#include <sys/mman.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* A host page at an address of its own (see above). */
static volatile int *host_page(void)
{
    for (uintptr_t at = 0x3f0000000000u; at < 0x3f0000100000u; at += 0x10000) {
        void *p = mmap((void *)at, 4096, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p == (void *)at)
            return p;
        if (p != MAP_FAILED)
            munmap(p, 4096);
    }
    CHECK(0, "no free page at 0x3f0000000000 and above");
    return NULL;
}

int main(void)
{
    int ndev = require_devices(1);
    volatile int *on_host = host_page();
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
