/* omp_fault_abort: EXPECTED TO FAIL (run_omp.sh --expect-fail). A target
 * region on device 0 calls abort().
 * The program says on stdout that it got that far ("RUN omp_fault_abort: ...",
 * flushed: the host may be taken down with the device), then runs the
 * region; the plugin must report the fault on rank 0's stderr and the job
 * must end with a non-zero status and no process left. Should the region
 * return, the program says so on stderr and exits with status 3 (never 0).
 */
#define OMP_TEST_NAME "omp_fault_abort"
#include "omp_check.h"

int main(void)
{
    int ndev = require_devices(1);
    int out = 0;
    printf("RUN omp_fault_abort: %d devices, now a region on device 0 calls abort()\n", ndev);
    fflush(stdout);
#pragma omp target device(0) map(tofrom: out)
    {
        out = 1;
        abort();
    }
    fprintf(stderr, "FAIL omp_fault_abort: the faulting region returned (out = %d)\n", out);
    return 3;
}
