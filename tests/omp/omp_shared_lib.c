/* omp_shared_lib: an offload library (libomp_shared_lib_lib.so, built with
 * -fopenmp -fopenmp-targets -fPIC -shared, its own device image) linked at
 * start-up into this executable, which has target regions and declare-target
 * globals of its own: both images on every device, the library's globals
 * (one of them static) read and written from the library's kernels and
 * through update to/from, the executable's regions before, between and
 * after the library's. */
#define OMP_TEST_NAME "omp_shared_lib"
#include "omp_check.h"

#define N 1000
#define LIB_N 512

/* The library's interface (omp_shared_lib_lib.c). */
extern int lib_scale;
extern long lib_calls;
extern double lib_table[LIB_N];
int lib_read_scale(int dev);
int lib_swap_hidden(int dev, int v);
int lib_host_hidden(void);
void lib_transform(int dev, const int *in, int *out, int n);

#pragma omp declare target
int exe_offset = 100;
#pragma omp end declare target

static void exe_region(int dev, int *a, int n, int round)
{
#pragma omp target device(dev) map(tofrom: a[0:n]) firstprivate(round)
    for (int i = 0; i < n; i++)
        a[i] += exe_offset + round;
}

int main(void)
{
    int ndev = require_devices(1);
    static int a[N], in[N], out[N];

    for (int dev = 0; dev < ndev; dev++) {
        /* The executable's region first. */
        for (int i = 0; i < N; i++)
            a[i] = i;
        exe_region(dev, a, N, 0);
        for (int i = 0; i < N; i++)
            CHECK(a[i] == i + 100, "device %d: a[%d] = %d, expected %d", dev, i, a[i], i + 100);

        /* The library's globals: initial values from its image. */
        int s = lib_read_scale(dev);
        CHECK(s == 7, "device %d: lib_scale = %d in the library's kernel, expected 7", dev, s);
        int h = lib_swap_hidden(dev, 4321 + dev);
        CHECK(h == 1234, "device %d: static lib_hidden = %d on the device, expected 1234",
              dev, h);
        h = lib_swap_hidden(dev, 1234);
        CHECK(h == 4321 + dev, "device %d: static lib_hidden = %d after the write, expected %d",
              dev, h, 4321 + dev);
        CHECK(lib_host_hidden() == 1234, "host lib_hidden = %d, expected 1234 (the device "
              "wrote its own copy)", lib_host_hidden());

        /* A library global set from the executable with update to. */
        lib_scale = 3 + dev;
        lib_calls = 0;
#pragma omp target update device(dev) to(lib_scale, lib_calls)
        lib_scale = -1;
        CHECK(lib_read_scale(dev) == 3 + dev, "device %d: lib_scale after update to", dev);

        /* The executable's region between the library's. */
        exe_region(dev, a, N, 1);
        for (int i = 0; i < N; i++)
            CHECK(a[i] == i + 201, "device %d: a[%d] = %d, expected %d", dev, i, a[i], i + 201);

        for (int i = 0; i < N; i++) {
            in[i] = i * 3 - dev;
            out[i] = 0;
        }
        lib_transform(dev, in, out, N);
        for (int i = 0; i < N; i++) {
            int want = (2 * in[i] + 1234) * (3 + dev);
            CHECK(out[i] == want, "device %d: out[%d] = %d, expected %d", dev, i, out[i], want);
        }
        for (int i = 0; i < LIB_N; i++) {
            int last = i + ((N - 1 - i) / LIB_N) * LIB_N;   /* last index written to slot i */
            double want = 0.5 * (2 * in[last] + 1234) * (3 + dev);
            CHECK(lib_table[i] == want, "device %d: lib_table[%d] = %g, expected %g", dev, i,
                  lib_table[i], want);
        }
        CHECK(lib_calls == N, "device %d: lib_calls = %ld, expected %d", dev, lib_calls, N);

        /* The executable's own global, changed on the device. */
        exe_offset = 1000 + dev;
#pragma omp target update device(dev) to(exe_offset)
        exe_region(dev, a, N, 2);
        for (int i = 0; i < N; i++)
            CHECK(a[i] == i + 201 + 1002 + dev, "device %d: a[%d] = %d after exe_offset update",
                  dev, i, a[i]);
        exe_offset = 100;
#pragma omp target update device(dev) to(exe_offset)
    }
    PASS("an offload library linked at start-up and the executable, on %d devices: the "
         "library's kernels, its globals (initial values, a static one, update to/from, a "
         "double[%d]) and the executable's kernels and global, interleaved", ndev, LIB_N);
    return 0;
}
