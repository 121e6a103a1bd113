/* omp_declare_link: `declare target link` variables, in an extended list
 * and nested in a declare-target block. The host has one image entry per
 * link variable (its `_decl_tgt_ref_ptr`) that the device image defines
 * without listing it: the device's copy of a variable is what a mapping
 * of it made, one per device, reached through that pointer. */
#define OMP_TEST_NAME "omp_declare_link"
#include "omp_check.h"

#define N 64

int g_vec[N];
int g_count = 10;
double g_sum;
#pragma omp declare target link(g_vec, g_count)

#pragma omp declare target
#pragma omp declare target link(g_sum)
static int twice(int v) { return 2 * v; }
/* Reads and writes link variables: valid only where they are mapped. */
void accumulate(void)
{
    g_sum = 0;
    for (int i = 0; i < N; i++) {
        g_vec[i] = twice(g_vec[i]);
        g_sum += g_vec[i];
    }
    g_count++;
}
#pragma omp end declare target

static void fill(int base)
{
    for (int i = 0; i < N; i++)
        g_vec[i] = base + i;
}

int main(void)
{
    int ndev = require_devices(2);

    /* 1. Mapped by the region itself, on every device. */
    for (int dev = 0; dev < ndev; dev++) {
        fill(dev);
        g_count = 10;
#pragma omp target device(dev) map(tofrom: g_vec, g_count, g_sum)
        accumulate();
        double want = 0;
        for (int i = 0; i < N; i++) {
            CHECK(g_vec[i] == 2 * (dev + i), "device %d: g_vec[%d] = %d, expected %d",
                  dev, i, g_vec[i], 2 * (dev + i));
            want += g_vec[i];
        }
        CHECK(g_count == 11, "device %d: g_count = %d, expected 11", dev, g_count);
        CHECK(g_sum == want, "device %d: g_sum = %g, expected %g", dev, g_sum, want);
    }

    /* 2. Mapped by enter data on device 0 and target data on device 1:
     *    each device keeps its own copy across regions, the host sees it
     *    only through update and the end of the mapping. */
    fill(100);
    g_count = 0;
#pragma omp target enter data device(0) map(to: g_vec, g_count, g_sum)
#pragma omp target data device(1) map(tofrom: g_vec, g_count, g_sum)
    {
        for (int r = 0; r < 3; r++) {
#pragma omp target device(0)
            accumulate();
#pragma omp target device(1)
            accumulate();
        }
#pragma omp target update device(1) from(g_count)
        CHECK(g_count == 3, "device 1: g_count = %d after update from, expected 3",
              g_count);
    }
    CHECK(g_vec[5] == 8 * 105, "device 1: g_vec[5] = %d, expected %d", g_vec[5], 8 * 105);
#pragma omp target exit data device(0) map(from: g_vec, g_count, g_sum)
    CHECK(g_count == 3, "device 0: g_count = %d, expected 3", g_count);
    CHECK(g_vec[N - 1] == 8 * (100 + N - 1), "device 0: g_vec[%d] = %d, expected %d",
          N - 1, g_vec[N - 1], 8 * (100 + N - 1));

    PASS("link variables mapped by regions, enter/exit data and target data on %d "
         "devices", ndev);
    return 0;
}
