/* omp_host_fallback: run WITHOUT a launcher (plain ./prog, the plugin
 * loaded but no mpiexec): the plugin must report 0 devices (run_omp.sh
 * --no-launcher checks its warning) and every construct falls back to the
 * host and still computes the right results. */
#define OMP_TEST_NAME "omp_host_fallback"
#include "omp_check.h"

#define N 10000

static int a[N], b[N];

#pragma omp declare target
int g = 7;
#pragma omp end declare target

int main(void)
{
    int ndev = omp_get_num_devices();
    CHECK(ndev == 0, "omp_get_num_devices() = %d without a launcher, expected 0", ndev);
    CHECK(omp_get_initial_device() == 0, "omp_get_initial_device() = %d, expected 0",
          omp_get_initial_device());

    int initial = -1, pid = 0;
    for (int i = 0; i < N; i++)
        a[i] = i;
#pragma omp target map(tofrom: a) map(from: initial, pid)
    {
        for (int i = 0; i < N; i++)
            a[i] *= 2;
        initial = omp_is_initial_device();
        pid = getpid();
    }
    CHECK(initial == 1 && pid == getpid(), "the region did not run on the host (initial %d)",
          initial);
    for (int i = 0; i < N; i++)
        CHECK(a[i] == 2 * i, "a[%d] = %d, expected %d", i, a[i], 2 * i);

    /* device(0) names no device: host fallback as well. */
#pragma omp target device(0) map(tofrom: a)
    for (int i = 0; i < N; i++)
        a[i] += 1;
    for (int i = 0; i < N; i++)
        CHECK(a[i] == 2 * i + 1, "device(0): a[%d] = %d", i, a[i]);

    /* Data regions, enter/exit and updates are no-ops on shared memory. */
#pragma omp target enter data map(to: b)
#pragma omp target data map(tofrom: a)
    {
#pragma omp target
        for (int i = 0; i < N; i++)
            b[i] = a[i] + g;
#pragma omp target update from(b)
    }
#pragma omp target exit data map(from: b)
    for (int i = 0; i < N; i++)
        CHECK(b[i] == 2 * i + 8, "b[%d] = %d, expected %d", i, b[i], 2 * i + 8);

    long sum = 0;
#pragma omp target teams distribute parallel for reduction(+: sum) map(to: b)
    for (int i = 0; i < N; i++)
        sum += b[i];
    CHECK(sum == (long)N * (N - 1) + 8L * N, "sum %ld", sum);

    /* nowait + taskwait */
    int x = 0;
#pragma omp target nowait map(tofrom: x) depend(out: x)
    x = 41;
#pragma omp target nowait map(tofrom: x) depend(inout: x)
    x += 1;
#pragma omp taskwait
    CHECK(x == 42, "nowait chain gave %d", x);

    /* omp_target_alloc on the initial device is host memory. */
    int *p = omp_target_alloc(N * sizeof(int), omp_get_initial_device());
    CHECK(p, "omp_target_alloc on the initial device failed");
    CHECK(omp_target_memcpy(p, a, N * sizeof(int), 0, 0, 0, 0) == 0, "memcpy host -> host");
    CHECK(memcmp(p, a, N * sizeof(int)) == 0, "memcpy host -> host differs");
    omp_target_free(p, omp_get_initial_device());

    PASS("no launcher: 0 devices, target, device(0), data/enter/exit/update, teams "
         "reduction, nowait+depend and omp_target_alloc all on the host, results correct");
    return 0;
}
