/* omp_transfer_wait: for check_stopped.sh, never run on its own. Maps 1
 * GiB on device 0, says on stdout that it started ("RUN omp_transfer_wait:
 * ...", flushed), then moves it to the device and back for 60 s: the test
 * stops the device in the middle of a transfer. Should the transfers go
 * on for 60 s, the program says so on stderr and exits with status 3
 * (never 0). */
#define OMP_TEST_NAME "omp_transfer_wait"
#include <omp.h>

#include "omp_check.h"

#define BYTES ((size_t)1 << 30)

int main(void)
{
    int ndev = require_devices(1);
    char *a = malloc(BYTES);
    CHECK(a != NULL, "no memory for %zu bytes", BYTES);
    memset(a, 1, BYTES);
#pragma omp target enter data device(0) map(alloc: a[0:BYTES])
    printf("RUN omp_transfer_wait: %d devices, now 1 GiB to device 0 and back for 60 s\n",
           ndev);
    fflush(stdout);
    double until = omp_get_wtime() + 60.0;
    while (omp_get_wtime() < until) {
#pragma omp target update device(0) to(a[0:BYTES])
#pragma omp target update device(0) from(a[0:BYTES])
    }
    fprintf(stderr, "FAIL omp_transfer_wait: the transfers were not interrupted\n");
    return 3;
}
