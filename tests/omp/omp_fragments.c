/* omp_fragments: transfers much larger than OMPTARGET_MPI_FRAGMENT_SIZE
 * (run_omp.sh sets it to 4096): sizes around the fragment and inline
 * limits, ~1 MiB map to/from on both devices, an offset section update
 * that starts and ends inside fragments, and a 1 MiB device-to-device
 * copy; every byte is compared. */
#define OMP_TEST_NAME "omp_fragments"
#include "omp_check.h"

#define BIG (1024 * 1024 + 123)      /* bytes: 257 fragments, the last partial */
#define NDBL (128 * 1024)            /* doubles: exactly 1 MiB */

static unsigned char src[BIG], dst[BIG];
static double v[NDBL];

static unsigned char expect(unsigned char x, size_t i, int dev)
{
    return (unsigned char)(x ^ 0x5a ^ (i * 13) ^ dev);
}

int main(void)
{
    int ndev = require_devices(2);
    const char *frag = getenv("OMPTARGET_MPI_FRAGMENT_SIZE");
    CHECK(frag && strcmp(frag, "4096") == 0, "OMPTARGET_MPI_FRAGMENT_SIZE is %s, the "
          "driver must set it to 4096", frag ? frag : "not set");

    static const size_t sizes[] = {1, 4095, 4096, 4097, 8191, 8192, 8193,
                                   3 * 4096 + 17, 65536, BIG};
    const size_t nsizes = sizeof sizes / sizeof *sizes;
    unsigned seed = 12345;
    uint64_t moved = 0;

    /* 1. map(to) + map(from) of each size on each device. */
    for (int dev = 0; dev < ndev; dev++) {
        for (size_t k = 0; k < nsizes; k++) {
            size_t n = sizes[k];
            for (size_t i = 0; i < n; i++)
                src[i] = (unsigned char)next_rand(&seed), dst[i] = 0;
#pragma omp target device(dev) map(to: src[0:n]) map(from: dst[0:n])
            for (size_t i = 0; i < n; i++)
                dst[i] = (unsigned char)(src[i] ^ 0x5a ^ (i * 13) ^ dev);
            moved += 2 * n;
            for (size_t i = 0; i < n; i++)
                CHECK(dst[i] == expect(src[i], i, dev), "device %d, size %zu: byte %zu "
                      "is %#x, expected %#x", dev, n, i, dst[i], expect(src[i], i, dev));
        }
    }

    /* 2. 1 MiB of doubles tofrom, then an offset section update inside a
     *    data region (start and end off fragment boundaries). */
    for (int dev = 0; dev < ndev; dev++) {
        for (int i = 0; i < NDBL; i++)
            v[i] = i * 0.5 + dev;
#pragma omp target device(dev) map(tofrom: v)
        for (int i = 0; i < NDBL; i++)
            v[i] = v[i] * 2 + 1;
        moved += 2 * sizeof v;
        for (int i = 0; i < NDBL; i++)
            CHECK(v[i] == (i * 0.5 + dev) * 2 + 1, "device %d: v[%d] = %g after tofrom",
                  dev, i, v[i]);

#pragma omp target data device(dev) map(to: v)
        {
            const int lo = 1001, len = 100003;   /* 800 KB, odd offset */
            for (int i = 0; i < NDBL; i++)
                v[i] = -i;
#pragma omp target update device(dev) to(v[lo:len])
#pragma omp target device(dev)
            for (int i = 0; i < NDBL; i++)
                v[i] += 0.25;
            for (int i = 0; i < NDBL; i++)
                v[i] = 99;
#pragma omp target update device(dev) from(v[lo - 1:len + 2])
            moved += sizeof v + 2 * len * sizeof(double);
            for (int i = 0; i < NDBL; i++) {
                double want = 99;
                if (i == lo - 1 || i == lo + len)
                    want = ((i * 0.5 + dev) * 2 + 1) + 0.25;   /* not updated: old data */
                else if (i >= lo && i < lo + len)
                    want = -i + 0.25;
                CHECK(v[i] == want, "device %d: v[%d] = %g, expected %g after section "
                      "updates", dev, i, v[i], want);
            }
        }
    }

    /* 3. device 0 -> device 1, 1 MiB + 123 bytes, through omp_target_memcpy. */
    int host = omp_get_initial_device();
    unsigned char *d0 = omp_target_alloc(BIG, 0), *d1 = omp_target_alloc(BIG, 1);
    CHECK(d0 && d1, "omp_target_alloc of %d bytes failed", BIG);
    for (size_t i = 0; i < BIG; i++)
        src[i] = (unsigned char)next_rand(&seed), dst[i] = 0;
    CHECK(omp_target_memcpy(d0, src, BIG, 0, 0, 0, host) == 0, "host -> device 0");
    CHECK(omp_target_memcpy(d1, d0, BIG, 0, 0, 1, 0) == 0, "device 0 -> device 1");
    CHECK(omp_target_memcpy(dst, d1, BIG, 0, 0, host, 1) == 0, "device 1 -> host");
    moved += 3 * (uint64_t)BIG;
    CHECK(memcmp(src, dst, BIG) == 0, "1 MiB copied device 0 -> device 1 differs");
    omp_target_free(d0, 0);
    omp_target_free(d1, 1);

    PASS("fragment size 4096: %zu sizes from 1 to %d bytes to/from on %d devices, 1 MiB "
         "tofrom and odd-offset section updates, 1 MiB device 0 -> 1; %.1f MiB compared",
         nsizes, BIG, ndev, moved / 1048576.0);
    return 0;
}
