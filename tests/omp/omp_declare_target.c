/* omp_declare_target: declare-target globals (their initial value from the
 * device image, written and read with target update, used in kernels, one
 * copy per device) and declare-target functions called from kernels. */
#define OMP_TEST_NAME "omp_declare_target"
#include "omp_check.h"

#define T 256

#pragma omp declare target
int g_scale = 3;
int g_table[T];
double g_total;
long g_calls;
static int square(int v) { return v * v; }
int apply(int v)
{
    g_calls++;
    return square(v) * g_scale + 1;
}
#pragma omp end declare target

int main(void)
{
    int ndev = require_devices(2);
    int seen[16] = {0};

    /* 1. The image's initial value, without any update. */
    for (int dev = 0; dev < ndev && dev < 16; dev++) {
        int s = 0;
#pragma omp target device(dev) map(from: s)
        s = g_scale;
        CHECK(s == 3, "device %d: g_scale = %d in a kernel, expected the initial 3", dev, s);
    }

    /* 2. A host change sent to device 0 only: device 1 keeps its own copy. */
    g_scale = 5;
#pragma omp target update device(0) to(g_scale)
    for (int dev = 0; dev < ndev && dev < 16; dev++) {
        int s = 0;
#pragma omp target device(dev) map(from: s)
        s = g_scale;
        seen[dev] = s;
    }
    CHECK(seen[0] == 5, "device 0: g_scale = %d after update to, expected 5", seen[0]);
    CHECK(seen[1] == 3, "device 1: g_scale = %d, expected 3 (not updated)", seen[1]);

    /* 3. A table updated to the device, transformed by a declare-target
     *    function in a kernel, read back with update from. */
    for (int dev = 0; dev < ndev; dev++) {
        g_scale = 2 + dev;
        g_calls = 0;
        for (int i = 0; i < T; i++)
            g_table[i] = i - 100;
#pragma omp target update device(dev) to(g_scale, g_table, g_calls)
        for (int i = 0; i < T; i++)
            g_table[i] = 0;   /* the device has its copy */
#pragma omp target device(dev)
        {
            g_total = 0;
            for (int i = 0; i < T; i++) {
                g_table[i] = apply(g_table[i]);
                g_total += g_table[i];
            }
        }
        CHECK(g_calls == 0, "device %d: host g_calls = %ld changed without update", dev,
              g_calls);
#pragma omp target update device(dev) from(g_table, g_total, g_calls)
        double want_total = 0;
        for (int i = 0; i < T; i++) {
            int want = (i - 100) * (i - 100) * (2 + dev) + 1;
            CHECK(g_table[i] == want, "device %d: g_table[%d] = %d, expected %d", dev, i,
                  g_table[i], want);
            want_total += want;
        }
        CHECK(g_total == want_total, "device %d: g_total = %g, expected %g", dev, g_total,
              want_total);
        CHECK(g_calls == T, "device %d: apply called %ld times on the device, expected %d",
              dev, g_calls, T);
    }

    /* 4. The host version of the function works on the host's globals. */
    g_scale = 10;
    g_calls = 0;
    CHECK(apply(3) == 91 && g_calls == 1, "host apply(3) = %d", apply(3));

    PASS("declare target on %d devices: initial value from the image, per-device copies, "
         "update to/from of a scalar, an int[%d] and a double, a declare-target function "
         "(calling a static one) in kernels and on the host", ndev, T);
    return 0;
}
