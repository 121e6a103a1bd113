/* omp_nowait_depend: deferred target tasks (nowait) on two devices chained
 * by depend clauses, then taskwait: a slow producer on device 0 must finish
 * (and its map(from) land) before the consumer on device 1 maps the data;
 * a write-after-read on device 0 waits for that consumer; independent
 * tasks run alongside. Once from inside a parallel/single region and once
 * from the initial thread (hidden helper threads). */
#define OMP_TEST_NAME "omp_nowait_depend"
#include "omp_check.h"

#define N 4096
#define ROUNDS 6

static int x[N], y[N], z[N], w0[N], w1[N];

static void round_of_tasks(int r)
{
#pragma omp target nowait device(0) map(from: x) depend(out: x)
    {
        usleep(20000);   /* slow: a missing dependency shows as stale x */
        for (int i = 0; i < N; i++)
            x[i] = i + r;
    }
#pragma omp target nowait device(1) map(to: x) map(from: y) depend(in: x) depend(out: y)
    for (int i = 0; i < N; i++)
        y[i] = 2 * x[i];
#pragma omp target nowait device(0) map(tofrom: x) depend(inout: x)
    for (int i = 0; i < N; i++)
        x[i] += 1;
#pragma omp target nowait device(1) map(to: y) map(tofrom: z) depend(in: y) depend(inout: z)
    for (int i = 0; i < N; i++)
        z[i] += y[i];
    /* Independent of the chain. */
#pragma omp target nowait device(0) map(tofrom: w0)
    for (int i = 0; i < N; i++)
        w0[i] += 3;
#pragma omp target nowait device(1) map(tofrom: w1)
    for (int i = 0; i < N; i++)
        w1[i] -= 3;
#pragma omp taskwait
}

static void check_round(int r, const char *how)
{
    for (int i = 0; i < N; i++) {
        CHECK(y[i] == 2 * (i + r), "%s round %d: y[%d] = %d, expected %d (device 1 did not "
              "see device 0's x)", how, r, i, y[i], 2 * (i + r));
        CHECK(x[i] == i + r + 1, "%s round %d: x[%d] = %d, expected %d", how, r, i, x[i],
              i + r + 1);
    }
}

int main(void)
{
    require_devices(2);
    long zsum_want = 0;
    int tasks = 0;
    memset(z, 0, sizeof z);
    memset(w0, 0, sizeof w0);
    memset(w1, 0, sizeof w1);

    for (int r = 0; r < ROUNDS; r++) {
#pragma omp parallel num_threads(2)
#pragma omp single
        round_of_tasks(r);
        check_round(r, "parallel/single");
        tasks += 6;
        for (int i = 0; i < N; i++)
            zsum_want += 2 * (i + r);
    }
    for (int r = ROUNDS; r < 2 * ROUNDS; r++) {
        round_of_tasks(r);   /* the initial thread: hidden helper tasks */
        check_round(r, "initial thread");
        tasks += 6;
        for (int i = 0; i < N; i++)
            zsum_want += 2 * (i + r);
    }
    long zsum = 0;
    for (int i = 0; i < N; i++) {
        zsum += z[i];
        CHECK(w0[i] == 3 * 2 * ROUNDS && w1[i] == -3 * 2 * ROUNDS,
              "w0[%d] = %d, w1[%d] = %d, expected %d and %d", i, w0[i], i, w1[i],
              6 * ROUNDS, -6 * ROUNDS);
    }
    CHECK(zsum == zsum_want, "sum of z = %ld, expected %ld", zsum, zsum_want);
    PASS("%d nowait target tasks over 2 devices in %d rounds (parallel/single and initial "
         "thread): depend out -> in across devices, inout after in, independent tasks, "
         "taskwait", tasks, 2 * ROUNDS);
    return 0;
}
