/* omp_is_device_ptr: kernels working on device pointers: memory from
 * omp_target_alloc passed with is_device_ptr, a device pointer kept
 * across kernels, and the device address of mapped data obtained with
 * use_device_ptr / use_device_addr and handed back with is_device_ptr. */
#define OMP_TEST_NAME "omp_is_device_ptr"
#include "omp_check.h"

#define N 5000

static long out[N];
static int arr[N];

int main(void)
{
    int ndev = require_devices(2);
    int host = omp_get_initial_device();
    for (int dev = 0; dev < ndev; dev++) {
        long *p = omp_target_alloc(N * sizeof(long), dev);
        CHECK(p, "device %d: omp_target_alloc failed", dev);

#pragma omp target device(dev) is_device_ptr(p)
        for (int i = 0; i < N; i++)
            p[i] = (long)i * i + dev;

        /* A second kernel reads what the first left in device memory. */
#pragma omp target device(dev) is_device_ptr(p) map(from: out)
        for (int i = 0; i < N; i++) {
            out[i] = p[i] + 1;
            p[i] = -p[i];
        }
        for (int i = 0; i < N; i++)
            CHECK(out[i] == (long)i * i + dev + 1, "device %d: out[%d] = %ld", dev, i, out[i]);

        memset(out, 0, sizeof out);
        CHECK(omp_target_memcpy(out, p, sizeof out, 0, 0, host, dev) == 0, "copy back");
        for (int i = 0; i < N; i++)
            CHECK(out[i] == -((long)i * i + dev), "device %d: p[%d] = %ld after the second "
                  "kernel", dev, i, out[i]);
        omp_target_free(p, dev);

        /* use_device_ptr: the device address of a mapped array. */
        int *a = arr;
        for (int i = 0; i < N; i++)
            a[i] = i;
        int *dptr = NULL;
#pragma omp target data device(dev) map(tofrom: a[0:N])
        {
#pragma omp target data device(dev) use_device_ptr(a)
            dptr = a;
            CHECK(dptr && dptr != arr, "device %d: use_device_ptr gave %p (host %p)", dev,
                  (void *)dptr, (void *)arr);
#pragma omp target device(dev) is_device_ptr(dptr)
            for (int i = 0; i < N; i++)
                dptr[i] *= 5;
            /* use_device_addr on the array itself. */
#pragma omp target data device(dev) use_device_addr(arr)
            {
                CHECK(&arr[0] == dptr, "device %d: use_device_addr %p != use_device_ptr %p",
                      dev, (void *)&arr[0], (void *)dptr);
            }
        }
        for (int i = 0; i < N; i++)
            CHECK(arr[i] == 5 * i, "device %d: arr[%d] = %d, expected %d", dev, i, arr[i],
                  5 * i);
    }
    PASS("is_device_ptr on %d devices: omp_target_alloc memory written by one kernel and "
         "read by the next, use_device_ptr/use_device_addr addresses used in a kernel", ndev);
    return 0;
}
