/* omp_remote: every device of the job, its ranks' CPUs and the devices of
 * the plugins they proxy (OMPTARGET_MPI_REMOTE_PLUGINS: the test runs it
 * with `host`, the node's x86_64 plugin, 4 devices a rank). On each
 * device: a region on a mapped array, a declare-target global updated to
 * and from it, memory of omp_target_alloc written from the host; then the
 * bytes passed from each device to the next (omp_target_memcpy: a rank's
 * CPU to its proxied device, proxied to proxied on one rank and across
 * ranks, proxied to another rank's CPU), back to the host; then a nowait
 * region on every device at once. Every byte is checked on the host. */
#define OMP_TEST_NAME "omp_remote"
#include "omp_check.h"

#define N 256

#pragma omp declare target
int g_scale[16];
#pragma omp end declare target

int main(void)
{
    int n = require_devices(1);
    int host = omp_get_initial_device();
    printf("RUN omp_remote: %d devices\n", n);
    fflush(stdout);
    for (int d = 0; d < n; d++) {
        int a[N];
        for (int i = 0; i < N; i++)
            a[i] = i;
        for (int i = 0; i < 16; i++)
            g_scale[i] = d + i;
#pragma omp target update to(g_scale) device(d)
        int initial = 1;
#pragma omp target device(d) map(tofrom : a) map(from : initial)
        {
            initial = omp_is_initial_device();
            for (int i = 0; i < N; i++)
                a[i] = a[i] * 2 + g_scale[i % 16];
            for (int i = 0; i < 16; i++)
                g_scale[i] += 100;
        }
#pragma omp target update from(g_scale) device(d)
        CHECK(!initial, "device %d ran the region on the host", d);
        for (int i = 0; i < N; i++)
            CHECK(a[i] == i * 2 + d + i % 16, "device %d: a[%d] = %d", d, i, a[i]);
        for (int i = 0; i < 16; i++)
            CHECK(g_scale[i] == d + i + 100, "device %d: g_scale[%d] = %d", d, i, g_scale[i]);
    }
    /* The bytes go round every device, each copy device to device. */
    int *mem[64];
    CHECK(n <= 64, "%d devices", n);
    int src[N], back[N];
    for (int i = 0; i < N; i++)
        src[i] = 7 * i + 3;
    for (int d = 0; d < n; d++) {
        mem[d] = omp_target_alloc(N * sizeof(int), d);
        CHECK(mem[d] != NULL, "omp_target_alloc on device %d", d);
    }
    CHECK(!omp_target_memcpy(mem[0], src, sizeof src, 0, 0, 0, host), "to device 0");
    for (int d = 0; d + 1 < n; d++)
        CHECK(!omp_target_memcpy(mem[d + 1], mem[d], sizeof src, 0, 0, d + 1, d),
              "device %d to device %d", d, d + 1);
    CHECK(!omp_target_memcpy(back, mem[n - 1], sizeof back, 0, 0, host, n - 1), "back");
    for (int i = 0; i < N; i++)
        CHECK(back[i] == src[i], "after %d devices: byte %d is %d", n, i, back[i]);
    for (int d = 0; d < n; d++)
        omp_target_free(mem[d], d);
    /* Every device at once. */
    long sums[64] = {0};
#pragma omp parallel for
    for (int d = 0; d < n; d++) {
        long s = 0;
#pragma omp target device(d) map(tofrom : s) nowait
        for (int i = 0; i < 100000; i++)
            s += i % (d + 2);
#pragma omp taskwait
        sums[d] = s;
    }
    for (int d = 0; d < n; d++) {
        long want = 0;
        for (int i = 0; i < 100000; i++)
            want += i % (d + 2);
        CHECK(sums[d] == want, "device %d: nowait sum %ld, expected %ld", d, sums[d], want);
    }
    PASS("%d devices: regions, a declare-target global, memory passed device to device "
         "round all of them, nowait on all at once", n);
    return 0;
}
