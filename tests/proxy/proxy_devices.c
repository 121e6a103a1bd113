/* proxy_devices: every device of the job with the test plugin proxied
 * (OTM_ACCEL_DEVICES per rank, default 3): their number, and on each a
 * region that is not the initial device and whose mapped memory lies where
 * the numbering says (a proxied device's in the plugin's arena, which the
 * worker's own code cannot touch); map tofrom, a declare-target global,
 * target data with updates, enter/exit data, omp_target_alloc with 4 MiB
 * copied each way, and a teams loop whose threads all reach device memory.
 * Every value is checked on the host. */
#define OMP_TEST_NAME "proxy_devices"
#include "proxy_omp.h"

#define N 1024
#define BIG ((4u << 20) + 5u)

#pragma omp declare target
int g_vals[16];
#pragma omp end declare target

/* A region on a mapped array: not the initial device, memory in place. */
static void mapped_region(int d)
{
    int a[N], initial = 1;
    char w[160];
    for (int i = 0; i < N; i++)
        a[i] = i;
#pragma omp target device(d) map(tofrom : a) map(from : initial, w)
    {
        initial = omp_is_initial_device();
        for (int i = 0; i < N; i++)
            a[i] = a[i] * 3 + d;
        where_is(a, w, sizeof w);
    }
    CHECK(!initial, "device %d ran the region on the initial device", d);
    check_where(d, "a mapped array", w);
    for (int i = 0; i < N; i++)
        CHECK(a[i] == i * 3 + d, "device %d: a[%d] = %d", d, i, a[i]);
}

/* A declare-target global: updated to, changed by a region, updated from. */
static void global_region(int d)
{
    char w[160];
    for (int i = 0; i < 16; i++)
        g_vals[i] = 100 * d + i;
#pragma omp target update to(g_vals) device(d)
#pragma omp target device(d) map(from : w)
    {
        for (int i = 0; i < 16; i++)
            g_vals[i] += 7;
        where_is(g_vals, w, sizeof w);
    }
    for (int i = 0; i < 16; i++)
        g_vals[i] = -1;
#pragma omp target update from(g_vals) device(d)
    /* The region's code reaches the global of its own copy of the image:
     * the plugin's (which mirrors it to and from its arena around each
     * kernel) on a proxied device, the rank's on a CPU. */
    if (local_of(d) < 0)
        CHECK(!strstr(w, "otmaccel"), "device %d (rank %d's CPU): its global lies in '%s'", d,
              rank_of(d), w);
    else
        CHECK(strstr(w, "otmaccel-image-") != NULL, "device %d (rank %d, otmaccel device %d): "
              "its global lies in '%s', not in the plugin's copy of the image", d, rank_of(d),
              local_of(d), w);
    for (int i = 0; i < 16; i++)
        CHECK(g_vals[i] == 100 * d + i + 7, "device %d: g_vals[%d] = %d", d, i, g_vals[i]);
}

/* target data with updates around a region, then enter/exit data. */
static void data_regions(int d)
{
    static int b[N], c[N];
    for (int i = 0; i < N; i++)
        b[i] = i ^ d, c[i] = 2 * i;
#pragma omp target data map(alloc : b) device(d)
    {
#pragma omp target update to(b) device(d)
#pragma omp target device(d)
        for (int i = 0; i < N; i++)
            b[i] += 11;
        for (int i = 0; i < N; i++)
            b[i] = 0;
#pragma omp target update from(b) device(d)
    }
    for (int i = 0; i < N; i++)
        CHECK(b[i] == (i ^ d) + 11, "device %d: b[%d] = %d", d, i, b[i]);
#pragma omp target enter data map(to : c) device(d)
    for (int i = 0; i < N; i++)
        c[i] = -1;
#pragma omp target device(d)
    for (int i = 0; i < N; i++)
        c[i] = c[i] * 5 + 1;
#pragma omp target exit data map(from : c) device(d)
    for (int i = 0; i < N; i++)
        CHECK(c[i] == 10 * i + 1, "device %d: c[%d] = %d", d, i, c[i]);
}

/* omp_target_alloc: 4 MiB + 5 bytes each way, changed in between by a
 * teams loop on the device pointer (every thread of the team in device
 * memory). */
static void alloc_round_trip(int d)
{
    int host = omp_get_initial_device();
    unsigned char *in = malloc(BIG), *out = malloc(BIG);
    CHECK(in && out, "out of memory");
    unsigned state = 12345u + (unsigned)d;
    for (size_t i = 0; i < BIG; i++)
        in[i] = (unsigned char)next_rand(&state);
    unsigned char *p = omp_target_alloc(BIG, d);
    CHECK(p != NULL, "omp_target_alloc(%u) on device %d", BIG, d);
    CHECK(!omp_target_memcpy(p, in, BIG, 0, 0, d, host), "to device %d", d);
    long sum = 0;
    unsigned char key = (unsigned char)(d + 1);
#pragma omp target teams distribute parallel for device(d) is_device_ptr(p) \
    reduction(+ : sum) map(tofrom : sum)
    for (size_t i = 0; i < BIG; i++) {
        sum += p[i];
        p[i] ^= key;
    }
    CHECK(!omp_target_memcpy(out, p, BIG, 0, 0, host, d), "from device %d", d);
    long want = 0;
    for (size_t i = 0; i < BIG; i++) {
        want += in[i];
        CHECK(out[i] == (unsigned char)(in[i] ^ key), "device %d: byte %zu is %u, expected %u",
              d, i, out[i], (unsigned char)(in[i] ^ key));
    }
    CHECK(sum == want, "device %d: sum %ld, expected %ld", d, sum, want);
    omp_target_free(p, d);
    free(in), free(out);
}

int main(void)
{
    int n = require_proxied_devices();
    printf("RUN proxy_devices: %d devices, %d per rank\n", n, per_rank());
    fflush(stdout);
    for (int d = 0; d < n; d++) {
        mapped_region(d);
        global_region(d);
        data_regions(d);
        alloc_round_trip(d);
    }
    PASS("%d devices (2 ranks x (CPU + %d otmaccel)): regions off the initial device with "
         "memory where the numbering says, map, a global, target data, enter/exit data, "
         "4 MiB omp_target_alloc round trips", n, accel_devices());
    return 0;
}
