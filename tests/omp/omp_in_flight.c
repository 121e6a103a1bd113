/* omp_in_flight: every device busy at once. One thread issues REGIONS
 * `target nowait` regions per device, each sleeping SLEEP_US, then waits.
 * Each region records when it started and ended on its device
 * (CLOCK_REALTIME: the driver runs every rank on this one machine), and
 * the program counts the regions in flight at the busiest instant, which
 * must be one on every device (the driver starts 8), or at least
 * OTM_TEST_MIN_IN_FLIGHT when that is set (a job of many ranks on the
 * 2-core machines the tests run on). With libomp's
 * default of 8 hidden helper threads, 7 of which run tasks, and
 * libomptarget 14, which holds one per region until it ends, at most 7
 * were; the launcher's 16 helpers (libomptarget 14) or a region that holds
 * none while it runs (15 and later) keep every device busy. A fact about
 * overlap, not a timed assertion: the regions are long enough that all
 * are issued before the first ends on any machine that runs the tests. */
#define OMP_TEST_NAME "omp_in_flight"
#include "omp_check.h"

#include <time.h>

#define REGIONS 2               /* per device */
#define SLEEP_US 1000000
#define MAXDEV 32

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

#pragma omp declare target(now_s)

/* The most intervals [span[2i], span[2i+1]) that hold one instant. */
static int most_at_once(const double *span, int n)
{
    int most = 0;
    for (int i = 0; i < n; i++) {
        int here = 0;           /* in flight when region i started */
        for (int j = 0; j < n; j++)
            here += span[2 * j] <= span[2 * i] && span[2 * i] < span[2 * j + 1];
        most = here > most ? here : most;
    }
    return most;
}

int main(void)
{
    int ndev = require_devices(2);
    CHECK(ndev <= MAXDEV, "%d devices: the test handles at most %d", ndev, MAXDEV);
    int n = ndev * REGIONS;
    static double span[2 * REGIONS * MAXDEV];
    static int ran_on[REGIONS * MAXDEV];
    for (int d = 0; d < ndev; d++) {    /* every device started first */
#pragma omp target device(d)
        { }
    }

    for (int i = 0; i < n; i++) {
        double *s = &span[2 * i];
        int *on = &ran_on[i];
#pragma omp target nowait device(i % ndev) map(from: s[0:2], on[0:1]) firstprivate(i)
        {
            s[0] = now_s();
            usleep(SLEEP_US);
            s[1] = now_s();
            *on = omp_is_initial_device() ? -1 : i;
        }
    }
#pragma omp taskwait

    for (int i = 0; i < n; i++) {
        CHECK(ran_on[i] == i, "region %d: ran_on = %d (-1: on the host)", i, ran_on[i]);
        CHECK(span[2 * i + 1] - span[2 * i] >= SLEEP_US * 1e-6,
              "region %d slept %.3f s", i, span[2 * i + 1] - span[2 * i]);
    }
    int most = most_at_once(span, n);
    const char *min_s = getenv("OTM_TEST_MIN_IN_FLIGHT");
    int want = min_s && *min_s ? atoi(min_s) : ndev;
    CHECK(most >= want, "at most %d of %d regions were in flight at once over %d "
          "devices (want %d)", most, n, ndev, want);
    PASS("%d target nowait regions over %d devices from one thread: %d in flight at "
         "once", n, ndev, most);
    return 0;
}
