/* omp_hold: the ompx_hold map-type modifier (an LLVM extension) on structs
 * with pointer members. A hold reference keeps a mapping present: inside
 * `target data map(ompx_hold, tofrom: ...)` an exit data with delete or
 * release does not remove it, kernels still find the same device copy,
 * and only the end of the region copies back and unmaps; the same with a
 * hold on a target region's own map. Data checked, host pointers intact. */
#define OMP_TEST_NAME "omp_hold"
#include "omp_check.h"

#define N 2048

struct buf {
    int n;
    int *p;
};

int main(void)
{
    int ndev = require_devices(1);
    int *hp = malloc(N * sizeof *hp);
    CHECK(hp != NULL, "malloc failed");
    int steps = 0;

    for (int dev = 0; dev < ndev; dev++) {
        struct buf s = {N, hp};
        for (int i = 0; i < N; i++)
            hp[i] = i;

        /* 1. target data with hold; enter/exit data inside do not unmap. */
#pragma omp target data device(dev) map(ompx_hold, tofrom: s, s.p[0:N])
        {
            CHECK(omp_target_is_present(&s, dev) && omp_target_is_present(hp, dev),
                  "device %d: not present in the hold region", dev);
#pragma omp target enter data device(dev) map(to: s, s.p[0:N])
#pragma omp target device(dev)
            for (int i = 0; i < s.n; i++)
                s.p[i] += 1;
            /* A dynamic reference dropped, then every dynamic one deleted:
             * the hold reference keeps the mapping. */
#pragma omp target exit data device(dev) map(release: s, s.p[0:N])
#pragma omp target exit data device(dev) map(delete: s, s.p[0:N])
            CHECK(omp_target_is_present(&s, dev) && omp_target_is_present(hp, dev),
                  "device %d: exit data delete removed a held mapping", dev);
            CHECK(s.p == hp && hp[0] == 0 && hp[N - 1] == N - 1,
                  "device %d: host data or pointer changed inside the hold region "
                  "(s.p %p, hp %p, hp[0] = %d)", dev, (void *)s.p, (void *)hp, hp[0]);
#pragma omp target device(dev)
            for (int i = 0; i < s.n; i++)
                s.p[i] *= 2;
            /* update from still finds the held copy */
#pragma omp target update device(dev) from(s.p[0:N / 2])
            CHECK(s.p == hp, "device %d: host pointer changed by update from", dev);
            for (int i = 0; i < N / 2; i++)
                CHECK(hp[i] == (i + 1) * 2, "device %d: hp[%d] = %d after update from, "
                      "expected %d", dev, i, hp[i], (i + 1) * 2);
            for (int i = N / 2; i < N; i++)
                CHECK(hp[i] == i, "device %d: hp[%d] = %d changed", dev, i, hp[i]);
        }
        CHECK(s.p == hp && s.n == N, "device %d: s = {%d, %p} after the hold region, expected "
              "{%d, %p}", dev, s.n, (void *)s.p, N, (void *)hp);
        for (int i = 0; i < N; i++)
            CHECK(hp[i] == (i + 1) * 2, "device %d: hp[%d] = %d after the hold region, "
                  "expected %d", dev, i, hp[i], (i + 1) * 2);
        CHECK(!omp_target_is_present(&s, dev) && !omp_target_is_present(hp, dev),
              "device %d: still present after the hold region", dev);
        steps++;

        /* 2. A hold on a kernel's own map, inside an enter/exit data pair
         *    whose exit data (delete) comes while the kernel's hold is
         *    gone again: the mapping ends there. */
#pragma omp target enter data device(dev) map(to: s, s.p[0:N])
#pragma omp target device(dev) map(ompx_hold, tofrom: s, s.p[0:N])
        for (int i = 0; i < s.n; i++)
            s.p[i] -= 3;
        CHECK(omp_target_is_present(hp, dev), "device %d: the enter data mapping is gone", dev);
        for (int i = 0; i < N; i++)
            CHECK(hp[i] == (i + 1) * 2, "device %d: hp[%d] = %d, the region copied back "
                  "though enter data still holds a reference", dev, i, hp[i]);
#pragma omp target exit data device(dev) map(from: s.p[0:N]) map(release: s)
        CHECK(s.p == hp, "device %d: host pointer changed by exit data", dev);
        for (int i = 0; i < N; i++)
            CHECK(hp[i] == (i + 1) * 2 - 3, "device %d: hp[%d] = %d after exit data, "
                  "expected %d", dev, i, hp[i], (i + 1) * 2 - 3);
        CHECK(!omp_target_is_present(hp, dev), "device %d: present after exit data", dev);
        steps++;

        /* 3. Nested hold regions: the inner one's end keeps the outer's. */
        for (int i = 0; i < N; i++)
            hp[i] = i;
#pragma omp target data device(dev) map(ompx_hold, tofrom: s, s.p[0:N])
        {
#pragma omp target data device(dev) map(ompx_hold, tofrom: s, s.p[0:N])
            {
#pragma omp target device(dev)
                for (int i = 0; i < s.n; i++)
                    s.p[i] += 10;
            }
            CHECK(omp_target_is_present(hp, dev) && hp[5] == 5, "device %d: the inner hold "
                  "region's end unmapped or copied back (hp[5] = %d)", dev, hp[5]);
#pragma omp target device(dev)
            for (int i = 0; i < s.n; i++)
                s.p[i] += 100;
        }
        CHECK(s.p == hp, "device %d: host pointer changed after nested hold regions", dev);
        for (int i = 0; i < N; i++)
            CHECK(hp[i] == i + 110, "device %d: hp[%d] = %d after nested hold regions, "
                  "expected %d", dev, i, hp[i], i + 110);
        steps++;
    }
    free(hp);
    PASS("%d steps on %d devices: map(ompx_hold, tofrom:) of a struct with a pointer member "
         "on target data (exit data release/delete inside kept the mapping, update from, "
         "nested holds) and on a kernel inside enter/exit data", steps, ndev);
    return 0;
}
