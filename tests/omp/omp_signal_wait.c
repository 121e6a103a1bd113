/* omp_signal_wait: for check_signals.sh, never run on its own. Says on
 * stdout that it started ("RUN omp_signal_wait: ...", flushed), then runs a
 * target region on device 0 that spins for 60 s: the test signals the
 * launcher meanwhile. Should the region end, the program says so on
 * stderr and exits with status 3 (never 0). */
#define OMP_TEST_NAME "omp_signal_wait"
#include <omp.h>

#include "omp_check.h"

int main(void)
{
    int ndev = require_devices(1);
    int done = 0;
    printf("RUN omp_signal_wait: %d devices, now a region on device 0 spins for 60 s\n",
           ndev);
    fflush(stdout);
#pragma omp target device(0) map(from: done)
    {
        double until = omp_get_wtime() + 60.0;
        while (omp_get_wtime() < until)
            ;
        done = 1;
    }
    fprintf(stderr, "FAIL omp_signal_wait: the region was not interrupted (done = %d)\n",
            done);
    return 3;
}
