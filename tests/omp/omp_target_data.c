/* omp_target_data: a target data region whose mappings nested target
 * regions and a nested target data region reuse: nothing is copied while
 * the data is present, the device copy lives across kernels, and only the
 * outermost region's end copies back. */
#define OMP_TEST_NAME "omp_target_data"
#include "omp_check.h"

#define N 4096

static int in[N], acc[N], tmp[N], in0[N];

int main(void)
{
    int ndev = require_devices(2);
    for (int dev = 0; dev < ndev; dev++) {
        for (int i = 0; i < N; i++) {
            in[i] = in0[i] = (i * 31 + dev) % 1000;
            acc[i] = 100 + i;
            tmp[i] = -7;
        }
        int present_inside = 0, present_tmp_inside = 0;
#pragma omp target data device(dev) map(to: in) map(tofrom: acc) map(alloc: tmp)
        {
            present_inside = omp_target_is_present(in, dev) && omp_target_is_present(acc, dev);
            present_tmp_inside = omp_target_is_present(tmp, dev);

#pragma omp target device(dev)
            for (int i = 0; i < N; i++)
                tmp[i] = 2 * in[i];

            /* tmp is map(alloc): the host copy never changes. */
            for (int i = 0; i < N; i++)
                CHECK(tmp[i] == -7, "device %d: host tmp[%d] = %d changed inside the "
                      "data region", dev, i, tmp[i]);

            /* The device keeps its own copy of in: a host write is not seen. */
            for (int i = 0; i < N; i++)
                in[i] = -1;

#pragma omp target device(dev) map(tofrom: acc) map(to: in)
            for (int i = 0; i < N; i++)
                acc[i] += tmp[i] + in[i];

            /* acc is still mapped: the host copy is untouched. */
            for (int i = 0; i < N; i++)
                CHECK(acc[i] == 100 + i, "device %d: host acc[%d] = %d before the "
                      "end of the data region", dev, i, acc[i]);

#pragma omp target data device(dev) map(tofrom: acc)
            {
#pragma omp target device(dev)
                for (int i = 0; i < N; i++)
                    acc[i] += 1;
            }
            for (int i = 0; i < N; i++)
                CHECK(acc[i] == 100 + i, "device %d: host acc[%d] = %d after the inner "
                      "data region (its end must not copy back)", dev, i, acc[i]);
        }
        CHECK(present_inside && present_tmp_inside,
              "device %d: mapped data not present inside the data region", dev);
        CHECK(!omp_target_is_present(in, dev) && !omp_target_is_present(acc, dev) &&
              !omp_target_is_present(tmp, dev),
              "device %d: data still present after the data region", dev);
        for (int i = 0; i < N; i++) {
            int want = 100 + i + 3 * in0[i] + 1;
            CHECK(acc[i] == want, "device %d: acc[%d] = %d, expected %d", dev, i, acc[i],
                  want);
            CHECK(in[i] == -1, "device %d: in[%d] = %d: map(to) copied back", dev, i, in[i]);
        }
    }
    PASS("target data on %d devices: 3 nested targets reuse map(to/tofrom/alloc) data "
         "of %d ints, no copy-back until the outermost end, presence inside and after",
         ndev, N);
    return 0;
}
