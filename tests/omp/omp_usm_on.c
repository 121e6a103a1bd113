/* omp_usm_on: OMPTARGET_MPI_USM=on, in a program that does not require
 * unified shared memory: what it maps still travels as always, and what a
 * region reaches through host pointers it never mapped (a struct's
 * pointer member mapped shallowly, a pointer passed by value, a page at an
 * address of its own) is served from rank 0's memory, writes included.
 * Then the protocol's larger cases: 1,200 host mappings apart (more ranges
 * than a device asks for at first) and a region that writes 20 MiB (more
 * than one write-back ask holds).
 */
#define OMP_TEST_NAME "omp_usm_on"
#include "omp_check.h"

typedef struct holder {
    int n;
    double *data;           /* never mapped */
} holder;

int main(void)
{
    int ndev = require_devices(2);
    holder h = {512, malloc(512 * sizeof(double))};
    int mapped[256];
    CHECK(h.data, "no memory");
    for (int i = 0; i < h.n; i++)
        h.data[i] = i / 2.0;
    for (int i = 0; i < 256; i++)
        mapped[i] = i;
    double sum = 0;
#pragma omp target device(1) map(to : h) map(tofrom : mapped, sum)
    {
        for (int i = 0; i < h.n; i++) {
            sum += h.data[i];
            h.data[i] = -1.0;
        }
        for (int i = 0; i < 256; i++)
            mapped[i] += 1;
    }
    CHECK(sum == 511.0 * 512 / 4, "sum %f", sum);
    for (int i = 0; i < h.n; i++)
        CHECK(h.data[i] == -1.0, "data[%d] = %f", i, h.data[i]);
    for (int i = 0; i < 256; i++)
        CHECK(mapped[i] == i + 1, "mapped[%d] = %d", i, mapped[i]);

    int *own = page_of_its_own();
    own[0] = 42;
    uintptr_t addr = (uintptr_t)own;
    int seen = 0;
#pragma omp target device(0) firstprivate(addr) map(from : seen)
    {
        int *p = (int *)addr;
        seen = p[0];
        p[1] = 43;
    }
    CHECK(seen == 42 && own[1] == 43, "read %d, wrote %d", seen, own[1]);

    enum { MANY = 1200 };
    static uintptr_t pages[MANY];
    for (int i = 0; i < MANY; i++) {
        int *p = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
        CHECK(p != MAP_FAILED, "mmap %d", i);
        munmap((char *)p + 4096, 4096);   /* a hole after it: ranges of their own */
        p[0] = i;
        pages[i] = (uintptr_t)p;
    }
    long sum_many = 0;
    uintptr_t *list = pages;
#pragma omp target device(1) map(to : list[0:MANY]) map(tofrom : sum_many)
    for (int i = 0; i < MANY; i++) {
        int *p = (int *)list[i];
        sum_many += p[0];
        p[1] = -p[0];
    }
    CHECK(sum_many == (long)MANY * (MANY - 1) / 2, "sum over the mappings %ld", sum_many);
    for (int i = 0; i < MANY; i++)
        CHECK(((int *)pages[i])[1] == -i, "mapping %d wrote %d", i, ((int *)pages[i])[1]);

    size_t big = 20u << 20;
    unsigned char *wide = malloc(big);
    CHECK(wide, "no memory");
    memset(wide, 1, big);
    uintptr_t w = (uintptr_t)wide;
#pragma omp target device(0) firstprivate(w, big)
    for (size_t i = 0; i < big; i++)
        ((unsigned char *)w)[i] = (unsigned char)(i % 251);
    for (size_t i = 0; i < big; i++)
        CHECK(wide[i] == (unsigned char)(i % 251), "wide[%zu] = %u", i, wide[i]);
    free(wide);
    free(h.data);
    PASS("%d devices: a shallow struct's pointer, a page of its own, 1,200 mappings, "
         "20 MiB written, read and written back", ndev);
    return 0;
}
