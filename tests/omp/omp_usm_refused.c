/* omp_usm_refused: EXPECTED TO FAIL (run_omp.sh --expect-fail). A program
 * that requires unified shared memory, started where it cannot be
 * served: with OMPTARGET_MPI_USM=off, or in a job whose ranks all have
 * rank 0's layout (address randomisation off: omp_usm_same_layout), where
 * rank 0's pages cannot be placed at their addresses elsewhere. The plugin
 * refuses with one line saying why (and how to start it instead), rather
 * than let a region read a device's own memory at those addresses. The
 * program says on stdout that it got as far as its first region; should
 * the region run, it says so on stderr and exits with status 3.
 */
#define OMP_TEST_NAME "omp_usm_refused"
#include "omp_check.h"

#pragma omp requires unified_shared_memory

int main(void)
{
    int *a = malloc(16 * sizeof *a);
    CHECK(a, "no memory");
    a[0] = 1;
    printf("RUN omp_usm_refused: a region that reads the host's heap\n");
    fflush(stdout);
#pragma omp target
    a[1] = a[0] + 1;
    fprintf(stderr, "omp_usm_refused: the region ran (a[1] = %d): it should have been "
            "refused\n", a[1]);
    return 3;
}
