/* proxy_nowait: three `target nowait` regions on the three proxied devices
 * of rank 1 (devices 1, 2, 3), then taskwait. Run with
 * OTM_ACCEL_RENDEZVOUS=3:30: the test plugin holds each kernel until three
 * of its rank's kernels run at once, and fails them after 30 s otherwise,
 * so the program passes only if the three regions overlapped on the
 * device rank (no timing is measured). */
#define OMP_TEST_NAME "proxy_nowait"
#include "proxy_omp.h"

int main(void)
{
    require_proxied_devices();
    CHECK(per_rank() == 4, "run it with 3 proxied devices per rank (%d)", per_rank() - 1);
    printf("RUN proxy_nowait: 3 nowait regions on devices 1, 2, 3 (rank 1)\n");
    fflush(stdout);
    int ran[3] = {0, 0, 0};
    char where[3][160];
    for (int k = 0; k < 3; k++) {
        int *r = &ran[k];
        char *w = where[k];
#pragma omp target device(1 + k) map(from : r[0:1], w[0:160]) nowait
        {
            r[0] = 1 + omp_is_initial_device();
            where_is(r, w, 160);
        }
    }
#pragma omp taskwait
    for (int k = 0; k < 3; k++) {
        CHECK(ran[k] == 1, "the region on device %d did not run on a device (%d)", 1 + k,
              ran[k]);
        check_where(1 + k, "the region's result", where[k]);
    }
    PASS("3 nowait regions ran at once on rank 1's otmaccel devices 0, 1, 2");
    return 0;
}
