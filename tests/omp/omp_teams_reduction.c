/* omp_teams_reduction: combined target teams distribute parallel for with
 * reductions (+ on long and double, max, min, * and a logical and), with
 * and without num_teams/thread_limit, on every device. */
#define OMP_TEST_NAME "omp_teams_reduction"
#include "omp_check.h"

#define N 100000

static int a[N];
static double b[N];

int main(void)
{
    int ndev = require_devices(2);
    unsigned seed = 99;
    long want_sum = 0;
    double want_dsum = 0;
    int want_max = -1, want_min = 1 << 30;
    for (int i = 0; i < N; i++) {
        a[i] = (int)(next_rand(&seed) % 100000);
        b[i] = (i % 7) * 0.5;   /* exact sums in double */
        want_sum += a[i];
        want_dsum += b[i];
        if (a[i] > want_max)
            want_max = a[i];
        if (a[i] < want_min)
            want_min = a[i];
    }
    int max_teams = 0, max_threads = 0;
    for (int dev = 0; dev < ndev; dev++) {
        long sum = 0;
        double dsum = 0;
        int mx = -1, mn = 1 << 30, teams_seen = 0, threads_seen = 0;
#pragma omp target teams distribute parallel for device(dev) num_teams(4) thread_limit(2) \
    map(to: a, b) reduction(+: sum, dsum) reduction(max: mx, teams_seen, threads_seen) \
    reduction(min: mn)
        for (int i = 0; i < N; i++) {
            sum += a[i];
            dsum += b[i];
            if (a[i] > mx)
                mx = a[i];
            if (a[i] < mn)
                mn = a[i];
            if (omp_get_num_teams() > teams_seen)
                teams_seen = omp_get_num_teams();
            if (omp_get_num_threads() > threads_seen)
                threads_seen = omp_get_num_threads();
        }
        CHECK(sum == want_sum, "device %d: sum %ld, expected %ld", dev, sum, want_sum);
        CHECK(dsum == want_dsum, "device %d: double sum %g, expected %g", dev, dsum, want_dsum);
        CHECK(mx == want_max, "device %d: max %d, expected %d", dev, mx, want_max);
        CHECK(mn == want_min, "device %d: min %d, expected %d", dev, mn, want_min);
        CHECK(teams_seen >= 1 && teams_seen <= 4, "device %d: %d teams, num_teams(4)", dev,
              teams_seen);
        CHECK(threads_seen >= 1 && threads_seen <= 2, "device %d: %d threads, thread_limit(2)",
              dev, threads_seen);
        if (teams_seen > max_teams)
            max_teams = teams_seen;
        if (threads_seen > max_threads)
            max_threads = threads_seen;

        /* Without clauses; a product and a logical and. */
        long long prod = 1;
        int all_small = 1, count = 0;
#pragma omp target teams distribute parallel for device(dev) map(to: a) \
    reduction(*: prod) reduction(&&: all_small) reduction(+: count)
        for (int i = 0; i < N; i++) {
            if (i % 10000 == 0)
                prod *= 3;
            all_small = all_small && a[i] < 100000;
            count++;
        }
        CHECK(prod == 59049, "device %d: product %lld, expected 3^10", dev, prod);
        CHECK(all_small == 1, "device %d: logical and false", dev);
        CHECK(count == N, "device %d: %d iterations, expected %d", dev, count, N);
    }
    PASS("teams distribute parallel for on %d devices over %d elements: reductions +, max, "
         "min (num_teams(4) thread_limit(2): up to %d teams x %d threads seen), *, &&",
         ndev, N, max_teams, max_threads);
    return 0;
}
