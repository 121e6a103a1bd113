/* omp_signal_wait: for check_signals.sh, check_stopped.sh and
 * check_killed.sh, never run on its own. Says on stdout that it started
 * ("RUN omp_signal_wait: ...", flushed), then runs a target region on
 * device 0 that spins for 60 s: the test signals, stops or kills a
 * process meanwhile. With OTM_TEST_MARK=PATH the region creates that file
 * first, so that a test waits for the fact that the region runs rather
 * than for a time. Should the region end, the program says so on stderr
 * and exits with status 3 (never 0). */
#define OMP_TEST_NAME "omp_signal_wait"
#include <fcntl.h>
#include <omp.h>

#include "omp_check.h"

int main(void)
{
    int ndev = require_devices(1);
    int done = 0;
    char mark[512] = "";
    if (getenv("OTM_TEST_MARK"))
        snprintf(mark, sizeof mark, "%s", getenv("OTM_TEST_MARK"));
    printf("RUN omp_signal_wait: %d devices, now a region on device 0 spins for 60 s\n",
           ndev);
    fflush(stdout);
#pragma omp target device(0) map(from: done) map(to: mark)
    {
        int fd = mark[0] ? open(mark, O_WRONLY | O_CREAT, 0600) : -1;
        if (fd >= 0)
            close(fd);
        double until = omp_get_wtime() + 60.0;
        while (omp_get_wtime() < until)
            ;
        done = 1;
    }
    fprintf(stderr, "FAIL omp_signal_wait: the region was not interrupted (done = %d)\n",
            done);
    return 3;
}
