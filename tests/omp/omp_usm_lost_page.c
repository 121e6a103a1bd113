/* omp_usm_lost_page: EXPECTED TO FAIL (run_omp.sh --expect-fail), under
 * OMPTARGET_MPI_USM=on. A first region reads a host page, so the device
 * keeps rank 0's range of it reserved; the host then unmaps the page, and
 * a second region reads it again. Rank 0 has no such page to serve: the
 * device refuses it, and the region faults there as it would without
 * unified shared memory, reported as any fault (status 139), instead of
 * reading anything.
 */
#define OMP_TEST_NAME "omp_usm_lost_page"
#include "omp_check.h"

int main(void)
{
    require_devices(1);
    int *page = page_of_its_own();
    page[0] = 42;
    uintptr_t at = (uintptr_t)page;
    int seen = 0;
#pragma omp target device(0) firstprivate(at) map(from : seen)
    seen = *(volatile int *)at;
    CHECK(seen == 42, "the first region read %d", seen);
    munmap(page, 4096);
    printf("RUN omp_usm_lost_page: a region reads the host page %p, unmapped since\n",
           (void *)at);
    fflush(stdout);
#pragma omp target device(0) firstprivate(at) map(from : seen)
    seen = *(volatile int *)at;
    fprintf(stderr, "omp_usm_lost_page: the region read %d from a page the host unmapped\n",
            seen);
    return 3;
}
