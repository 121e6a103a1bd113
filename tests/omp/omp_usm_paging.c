/* omp_usm_paging: unified shared memory under traffic. Each round, a
 * region on device 0 sums a 16 MiB host array (4,096 pages, each fetched
 * from rank 0 when first touched) and writes the sum into a host
 * variable, which the host checks; then a region visits the 1,024 pages
 * of a 4 MiB array in a scattered order (the fetched runs do not grow),
 * reading one word of each and writing the next. One round by default; rounds go on for
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
#define PAGES 1024u             /* of the scattered array */
#define PAGE_WORDS 1024u

/* Page k of b, visited in the order 769 k mod 1024 (769 is prime): word
 * 1 becomes 3 times word 0, on device 0. */
static void scattered(int *b, int round)
{
    for (unsigned k = 0; k < PAGES; k++)
        b[k * PAGE_WORDS] = (int)k + round, b[k * PAGE_WORDS + 1] = -1;
#pragma omp target device(0)
    for (unsigned k = 0; k < PAGES; k++) {
        unsigned at = (k * 769u) % PAGES * PAGE_WORDS;
        b[at + 1] = 3 * b[at];
    }
    for (unsigned k = 0; k < PAGES; k++)
        CHECK(b[k * PAGE_WORDS + 1] == 3 * ((int)k + round), "round %d: page %u of the "
              "scattered walk holds %d, expected %d", round, k, b[k * PAGE_WORDS + 1],
              3 * ((int)k + round));
}

int main(void)
{
    int n = require_devices(1);
    const char *mark = getenv("OTM_TEST_MARK");
    const char *secs = getenv("OTM_TEST_SECONDS");
    double seconds = secs ? atof(secs) : mark ? 60.0 : 0.0;
    int *a = malloc(WORDS * sizeof *a), *b = malloc(PAGES * PAGE_WORDS * sizeof *b);
    CHECK(a != NULL && b != NULL, "no memory for the arrays");
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
        scattered(b, rounds);
    } while (omp_get_wtime() < until);
    PASS("%d rounds summed 16 MiB of the host's memory on device 0 and walked 1,024 "
         "pages in a scattered order", rounds);
    return 0;
}
