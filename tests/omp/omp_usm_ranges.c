/* omp_usm_ranges: under unified shared memory the host's address space
 * changes between regions, and the devices follow it. A device learns rank
 * 0's ranges at its first region, then again only when a region touches
 * an address outside them or writes one it learned read-only. Each round:
 *  - a new anonymous mapping and a heap block above malloc's mmap
 *    threshold (each a range the devices have not seen), written on the
 *    host, read and changed by a team of 4 threads on every device at
 *    once (several threads fault into the new range together);
 *  - the last round's mapping unmapped first, so that this round's often
 *    lands at the same address with other bytes: never served stale;
 *  - a page the host made read-only before a region read it, writable
 *    again before the next region writes it: the store lands.
 */
#define OMP_TEST_NAME "omp_usm_ranges"
#include "omp_check.h"

#pragma omp requires unified_shared_memory

#define ROUNDS 6
#define WORDS (64 * 1024)       /* 512 KiB of longs: 128 pages */

/* Adds `add` to every word of a, on device dev, with 4 threads. */
static void add_on(int dev, long *a, long add)
{
#pragma omp target parallel for device(dev) num_threads(4)
    for (long i = 0; i < WORDS; i++)
        a[i] += add;
}

static void check_words(const long *a, long base, long add, const char *what, int round)
{
    for (long i = 0; i < WORDS; i++)
        CHECK(a[i] == base + i + add, "round %d, %s: word %ld = %ld, expected %ld", round,
              what, i, a[i], base + i + add);
}

/* A page read-only when a region reads it, writable when the next writes. */
static void reprotected_page(int dev, int round)
{
    long page = sysconf(_SC_PAGESIZE);
    int *q = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                  -1, 0);
    CHECK(q != MAP_FAILED, "mmap of one page failed");
    q[0] = 1000 + round;
    CHECK(!mprotect(q, (size_t)page, PROT_READ), "mprotect(PROT_READ) failed");
    int seen = -1;
#pragma omp target device(dev) map(from : seen)
    seen = q[0];
    CHECK(seen == 1000 + round, "round %d: the read-only page read %d on device %d", round,
          seen, dev);
    CHECK(!mprotect(q, (size_t)page, PROT_READ | PROT_WRITE), "mprotect(RW) failed");
#pragma omp target device(dev)
    q[1] = 2000 + round;
    CHECK(q[1] == 2000 + round, "round %d: the page made writable again holds %d after "
          "device %d wrote it", round, q[1], dev);
    munmap(q, (size_t)page);
}

int main(void)
{
    int n = require_devices(1);
    long *mapped = NULL;
    size_t len = WORDS * sizeof(long);
    int reused = 0;
    for (int round = 0; round < ROUNDS; round++) {
        void *was = mapped;
        if (mapped)
            CHECK(!munmap(mapped, len), "munmap failed");
        mapped = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(mapped != MAP_FAILED, "mmap of %zu bytes failed", len);
        reused += (void *)mapped == was;
        long *heap = malloc(len);
        CHECK(heap != NULL, "no memory");
        for (long i = 0; i < WORDS; i++)
            mapped[i] = round * 1000000L + i, heap[i] = -round * 1000000L + i;
        for (int dev = 0; dev < n; dev++) {
            add_on(dev, mapped, 3);
            add_on(dev, heap, 5);
        }
        check_words(mapped, round * 1000000L, 3L * n, "the new mapping", round);
        check_words(heap, -round * 1000000L, 5L * n, "the new heap block", round);
        free(heap);
        reprotected_page(round % n, round);
    }
    munmap(mapped, len);
    PASS("%d rounds of new mappings and heap blocks read and changed by 4 threads on each "
         "of %d devices (%d at the address of the one unmapped before), a page "
         "read-only then writable", ROUNDS, n, reused);
    return 0;
}
