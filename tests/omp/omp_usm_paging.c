/* omp_usm_paging: unified shared memory under traffic. Each round, a
 * region on device 0 sums a 16 MiB host array (4,096 pages, each fetched
 * from rank 0 when first touched) and writes the sum into a host
 * variable, which the host checks. One round by default; rounds go on for
 * OTM_TEST_SECONDS seconds when set, or 60 s when OTM_TEST_MARK is (a
 * test then stops or kills a rank meanwhile: the region creates that file
 * first, so that the test waits for the fact that pages flow). Prints
 * "RUN omp_usm_paging: ..." first and "PASS ..." with the rounds run.
 */
#define OMP_TEST_NAME "omp_usm_paging"
#include <fcntl.h>

#include "omp_check.h"

#pragma omp requires unified_shared_memory

#define WORDS (4u << 20)        /* 16 MiB of ints */

int main(void)
{
    int n = require_devices(1);
    const char *mark = getenv("OTM_TEST_MARK");
    const char *secs = getenv("OTM_TEST_SECONDS");
    double seconds = secs ? atof(secs) : mark ? 60.0 : 0.0;
    int *a = malloc(WORDS * sizeof *a);
    CHECK(a != NULL, "no memory for the array");
    long long want = 0;
    for (unsigned i = 0; i < WORDS; i++) {
        a[i] = (int)(i % 1000);
        want += a[i];
    }
    printf("RUN omp_usm_paging: %d devices; regions on device 0 sum 16 MiB of the host's "
           "for %.0f s\n", n, seconds);
    fflush(stdout);
    double until = omp_get_wtime() + seconds;
    int rounds = 0;
    long long sum = 0, *out = &sum;     /* a scalar would be firstprivate */
    do {
        int first = rounds == 0;
#pragma omp target device(0)
        {
            if (first && mark) {
                char path[512];
                size_t k = 0;
                for (; mark[k] && k < sizeof path - 1; k++)
                    path[k] = mark[k];
                path[k] = '\0';
                int fd = open(path, O_WRONLY | O_CREAT, 0600);
                if (fd >= 0)
                    close(fd);
            }
            long long s = 0;
            for (unsigned i = 0; i < WORDS; i++)
                s += a[i];
            *out = s;
        }
        rounds++;
        CHECK(sum == want, "round %d: the region summed %lld, expected %lld", rounds, sum,
              want);
    } while (omp_get_wtime() < until);
    PASS("%d rounds summed 16 MiB of the host's memory on device 0", rounds);
    return 0;
}
