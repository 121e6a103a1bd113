/* omp_host_dies: EXPECTED TO FAIL (check_status.sh). After a region on
 * each device, the program itself (rank 0) ends as OTM_TEST_VARIANT says:
 *   abort      abort(): SIGABRT, 134 from a shell (not in the tests:
 *              `mandatory` takes the same path)
 *   segv       a store through NULL in the host's own code: 139
 *   mandatory  a region on a device that does not exist, with
 *              OMP_TARGET_OFFLOAD=MANDATORY set by the check: libomptarget
 *              ends the program (its fatal error: abort(), 134)
 * The MPI runtime then kills the device ranks and reports whichever end it
 * counted last; the launcher must report rank 0's own end, the same in
 * every run. It prints "RUN omp_host_dies: ..." first.
 */
#define OMP_TEST_NAME "omp_host_dies"
#include "omp_check.h"

int main(void)
{
    int n = require_devices(1);
    const char *how = getenv("OTM_TEST_VARIANT");
    CHECK(how != NULL, "OTM_TEST_VARIANT is not set (abort, segv or mandatory)");
    for (int d = 0; d < n; d++) {
        int x = d;
#pragma omp target device(d) map(tofrom : x)
        x += 1;
        CHECK(x == d + 1, "device %d: %d", d, x);
    }
    printf("RUN omp_host_dies: %d devices ran a region; now the program ends: %s\n", n, how);
    fflush(stdout);
    if (!strcmp(how, "abort"))
        abort();
    if (!strcmp(how, "segv"))
        *(volatile int *)(uintptr_t)n /* NULL, plus a little */ = 1;
    if (!strcmp(how, "mandatory")) {
        int x = 0;
#pragma omp target device(n + 5) map(tofrom : x)
        x = 1;
    }
    fprintf(stderr, "FAIL omp_host_dies: the program did not end (%s)\n", how);
    return 3;
}
