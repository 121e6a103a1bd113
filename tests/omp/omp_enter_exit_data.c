/* omp_enter_exit_data: unstructured mappings with target enter data and
 * target exit data: to/alloc at entry, from/release/delete at exit,
 * reference counts, and the same host array mapped on two devices at
 * once, each with its own copy. */
#define OMP_TEST_NAME "omp_enter_exit_data"
#include "omp_check.h"

#define N 2000

static int a[N], b[N], c[N];

static void map_in(int dev)
{
#pragma omp target enter data device(dev) map(to: a) map(alloc: b)
}

static void compute(int dev, int factor)
{
#pragma omp target device(dev) map(to: factor)
    for (int i = 0; i < N; i++)
        b[i] = a[i] * factor;
}

static void map_out(int dev)
{
#pragma omp target exit data device(dev) map(from: b) map(release: a)
}

int main(void)
{
    int ndev = require_devices(2);

    /* 1. enter in one function, compute in another, exit in a third. */
    for (int dev = 0; dev < ndev; dev++) {
        for (int i = 0; i < N; i++)
            a[i] = i + dev, b[i] = -1;
        map_in(dev);
        CHECK(omp_target_is_present(a, dev) && omp_target_is_present(b, dev),
              "device %d: not present after enter data", dev);
        compute(dev, 3 + dev);
        CHECK(b[0] == -1, "device %d: b copied back before exit data", dev);
        map_out(dev);
        CHECK(!omp_target_is_present(a, dev) && !omp_target_is_present(b, dev),
              "device %d: still present after exit data", dev);
        for (int i = 0; i < N; i++)
            CHECK(b[i] == (i + dev) * (3 + dev), "device %d: b[%d] = %d, expected %d",
                  dev, i, b[i], (i + dev) * (3 + dev));
    }

    /* 2. reference counts: two entries need two exits; only the last copies. */
    for (int i = 0; i < N; i++)
        c[i] = i;
#pragma omp target enter data device(0) map(to: c)
    for (int i = 0; i < N; i++)
        c[i] = -5;   /* not sent again: already present */
#pragma omp target enter data device(0) map(to: c)
#pragma omp target device(0)
    for (int i = 0; i < N; i++)
        c[i] += 10;
#pragma omp target exit data device(0) map(from: c)
    CHECK(omp_target_is_present(c, 0), "c gone after the first of two exits");
    CHECK(c[0] == -5, "c[0] = %d: copied back while still referenced", c[0]);
#pragma omp target exit data device(0) map(from: c)
    CHECK(!omp_target_is_present(c, 0), "c still present after the second exit");
    for (int i = 0; i < N; i++)
        CHECK(c[i] == i + 10, "c[%d] = %d, expected %d", i, c[i], i + 10);

    /* 3. delete drops the mapping whatever its count, without copying. */
#pragma omp target enter data device(1) map(to: c)
#pragma omp target enter data device(1) map(to: c)
#pragma omp target device(1)
    for (int i = 0; i < N; i++)
        c[i] = 0;
#pragma omp target exit data device(1) map(delete: c)
    CHECK(!omp_target_is_present(c, 1), "c present on device 1 after delete");
    CHECK(c[7] == 17, "c[7] = %d: delete copied back", c[7]);

    /* 4. one host array on two devices at once, each its own copy. */
    for (int i = 0; i < N; i++)
        a[i] = i;
#pragma omp target enter data device(0) map(to: a)
#pragma omp target enter data device(1) map(to: a)
#pragma omp target device(0)
    for (int i = 0; i < N; i++)
        a[i] += 1000;
#pragma omp target device(1)
    for (int i = 0; i < N; i++)
        a[i] *= 2;
#pragma omp target exit data device(1) map(from: a)
    for (int i = 0; i < N; i++)
        CHECK(a[i] == 2 * i, "a[%d] = %d from device 1, expected %d", i, a[i], 2 * i);
#pragma omp target exit data device(0) map(from: a)
    for (int i = 0; i < N; i++)
        CHECK(a[i] == i + 1000, "a[%d] = %d from device 0, expected %d", i, a[i], i + 1000);

    PASS("enter/exit data on %d devices: to/alloc then from/release across functions, "
         "reference count 2 (copy only at the last exit), delete, one array mapped on "
         "two devices with separate copies", ndev);
    return 0;
}
