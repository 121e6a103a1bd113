/* omp_associate_ptr: omp_target_associate_ptr makes device memory from
 * omp_target_alloc the device copy of a host array (at an offset): maps
 * then find it present and move nothing, target update moves data, and
 * after omp_target_disassociate_ptr the array is no longer present. */
#define OMP_TEST_NAME "omp_associate_ptr"
#include "omp_check.h"

#define N 3000
#define OFF 64   /* ints before the associated part of the device buffer */

static int a[N];

int main(void)
{
    int ndev = require_devices(2);
    int host = omp_get_initial_device();
    for (int dev = 0; dev < ndev; dev++) {
        int *d = omp_target_alloc((N + OFF) * sizeof(int), dev);
        CHECK(d, "device %d: omp_target_alloc failed", dev);
        for (int i = 0; i < N; i++)
            a[i] = 1000 + i;
        CHECK(omp_target_memcpy(d, a, N * sizeof(int), OFF * sizeof(int), 0, dev, host) == 0,
              "device %d: fill", dev);
        CHECK(omp_target_associate_ptr(a, d, N * sizeof(int), OFF * sizeof(int), dev) == 0,
              "device %d: omp_target_associate_ptr failed", dev);
        CHECK(omp_target_is_present(a, dev), "device %d: not present after associate", dev);

        for (int i = 0; i < N; i++)
            a[i] = -1;   /* present: map(tofrom) moves nothing either way */
#pragma omp target device(dev) map(tofrom: a)
        for (int i = 0; i < N; i++)
            a[i] += 1;
        for (int i = 0; i < N; i++)
            CHECK(a[i] == -1, "device %d: a[%d] = %d: an associated array was copied", dev, i,
                  a[i]);
#pragma omp target update device(dev) from(a)
        for (int i = 0; i < N; i++)
            CHECK(a[i] == 1001 + i, "device %d: a[%d] = %d, expected %d", dev, i, a[i],
                  1001 + i);

        /* The kernel wrote into the caller's buffer at the offset. */
        int probe[3] = {0};
        CHECK(omp_target_memcpy(probe, d, sizeof probe, 0, (OFF + 10) * sizeof(int), host,
                                dev) == 0, "device %d: probe", dev);
        CHECK(probe[0] == 1011 && probe[2] == 1013, "device %d: buffer holds %d %d", dev,
              probe[0], probe[2]);

        CHECK(omp_target_disassociate_ptr(a, dev) == 0, "device %d: disassociate failed", dev);
        CHECK(!omp_target_is_present(a, dev), "device %d: present after disassociate", dev);
        omp_target_free(d, dev);

        /* An ordinary map works again afterwards. */
#pragma omp target device(dev) map(tofrom: a)
        for (int i = 0; i < N; i++)
            a[i] *= 2;
        CHECK(a[N - 1] == 2 * (1000 + N), "device %d: a map after disassociate gave %d", dev,
              a[N - 1]);
    }
    PASS("omp_target_associate_ptr at offset %zu bytes on %d devices: present, maps copy "
         "nothing, update from and the buffer see the kernel's writes, disassociate",
         OFF * sizeof(int), ndev);
    return 0;
}
