/* omp_printf_order: 1,000 times a host printf("host %d\n", i), then a
 * target region (on device i % devices) doing printf("device %d\n", i). The
 * program never flushes stdout itself: a device's output must reach the
 * program's stdout in order with the host's, as it does when the region
 * runs in the host process. The ORDER is checked by the driver
 * (run_omp.sh --stdout-check "check_stdout.sh order"), not here. */
#define OMP_TEST_NAME "omp_printf_order"
#include "omp_check.h"

#define ROUNDS 1000

int main(void)
{
    int ndev = require_devices(1);
    for (int i = 0; i < ROUNDS; i++) {
        int dev = i % ndev;
        printf("host %d\n", i);
#pragma omp target device(dev) firstprivate(i)
        printf("device %d\n", i);
    }
    PASS("%d host and %d device lines, alternating, devices 0..%d in turn (order checked "
         "by the driver)", ROUNDS, ROUNDS, ndev - 1);
    return 0;
}
