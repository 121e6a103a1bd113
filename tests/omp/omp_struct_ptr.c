/* omp_struct_ptr: a struct holding a pointer member, mapped with the data
 * it points to (map(to: s) map(tofrom: s.p[0:N]), enter data, target
 * update from of the pointee and of the struct itself, exit data), and the
 * same one level down (s.t.p[:N] of a nested struct). libomptarget attaches
 * the device struct's pointer to the device copy of the data and restores
 * the host pointer after every copy back: after each step the host
 * struct's pointer members must still be the host pointers, and the data
 * correct, and the kernels must have seen device pointers (libomptarget's
 * own host plugin would let a kernel use an unattached host pointer). */
#define OMP_TEST_NAME "omp_struct_ptr"
#include "omp_check.h"

#define N 1024

struct vec {
    int n;
    double *p;
};

struct outer {
    int id;
    struct vec t;
    int *q;
};

static void check_data(const char *step, int dev, const double *p, double scale, double add)
{
    for (int i = 0; i < N; i++)
        CHECK(p[i] == i * scale + add, "device %d, %s: p[%d] = %g, expected %g", dev, step, i,
              p[i], i * scale + add);
}

#define CHECK_PTR(step, dev, got, want)                                                     \
    CHECK((void *)(got) == (void *)(want), "device %d, %s: host pointer member is %p, "       \
          "expected the host's %p", dev, step, (void *)(got), (void *)(want))

int main(void)
{
    int ndev = require_devices(1);
    double *hp = malloc(N * sizeof *hp), *hp2 = malloc(N * sizeof *hp2);
    int *hq = malloc(N * sizeof *hq);
    CHECK(hp && hp2 && hq, "malloc failed");
    int steps = 0;

    for (int dev = 0; dev < ndev; dev++) {
        /* 1. A target region: map(to: s) map(tofrom: s.p[0:N]). */
        struct vec s = {N, hp};
        for (int i = 0; i < N; i++)
            hp[i] = i;
        void *seen = NULL, *seen_q = NULL;
#pragma omp target device(dev) map(to: s) map(tofrom: s.p[0:N]) map(from: seen)
        {
            for (int i = 0; i < s.n; i++)
                s.p[i] = s.p[i] * 2 + 1;
            seen = s.p;
        }
        CHECK(seen != (void *)hp, "device %d: the kernel saw the host pointer %p", dev, seen);
        CHECK_PTR("target map(to: s) map(tofrom: s.p[0:N])", dev, s.p, hp);
        check_data("target map(tofrom: s.p[0:N])", dev, hp, 2, 1);
        steps++;

        /* 2. map(tofrom: s, s.p[0:N]): the struct itself is copied back. */
#pragma omp target device(dev) map(tofrom: s, s.p[0:N])
        {
            for (int i = 0; i < s.n; i++)
                s.p[i] += 1;
            s.n = N;   /* written: the struct comes back */
        }
        CHECK_PTR("target map(tofrom: s, s.p[0:N])", dev, s.p, hp);
        check_data("target map(tofrom: s, s.p[0:N])", dev, hp, 2, 2);
        steps++;

        /* 3. enter data, kernels, update from of the pointee and of the
         *    struct, exit data. */
        for (int i = 0; i < N; i++)
            hp[i] = i;
#pragma omp target enter data device(dev) map(to: s) map(to: s.p[0:N])
        CHECK_PTR("enter data", dev, s.p, hp);
        CHECK(omp_target_is_present(&s, dev) && omp_target_is_present(hp, dev),
              "device %d: s or its data not present after enter data", dev);
        for (int i = 0; i < N; i++)
            hp[i] = -1;   /* the device has its copy */
#pragma omp target device(dev) map(from: seen)
        {
            for (int i = 0; i < s.n; i++)
                s.p[i] = s.p[i] * 3;
            seen = s.p;
        }
        CHECK(seen != (void *)hp, "device %d: after enter data the kernel saw the host "
              "pointer %p", dev, seen);
#pragma omp target update device(dev) from(s.p[0:N])
        CHECK_PTR("target update from(s.p[0:N])", dev, s.p, hp);
        check_data("target update from(s.p[0:N])", dev, hp, 3, 0);
#pragma omp target update device(dev) from(s)
        CHECK_PTR("target update from(s)", dev, s.p, hp);
        CHECK(s.n == N, "device %d: s.n = %d after update from(s)", dev, s.n);
#pragma omp target device(dev)
        for (int i = 0; i < s.n; i++)
            s.p[i] += 5;
#pragma omp target exit data device(dev) map(from: s) map(from: s.p[0:N])
        CHECK_PTR("exit data map(from: s, s.p[0:N])", dev, s.p, hp);
        check_data("exit data map(from: s.p[0:N])", dev, hp, 3, 5);
        CHECK(!omp_target_is_present(&s, dev) && !omp_target_is_present(hp, dev),
              "device %d: s or its data still present after exit data", dev);
        steps++;

        /* 4. A nested struct: o.t.p and o.q, update from(o.t.p[:N]). */
        struct outer o = {7 + dev, {N, hp2}, hq};
        for (int i = 0; i < N; i++) {
            hp2[i] = i;
            hq[i] = -i;
        }
#pragma omp target enter data device(dev) map(to: o) map(to: o.t.p[:N]) map(to: o.q[0:N])
        CHECK_PTR("nested enter data (t.p)", dev, o.t.p, hp2);
        CHECK_PTR("nested enter data (q)", dev, o.q, hq);
#pragma omp target device(dev) map(from: seen, seen_q)
        {
            for (int i = 0; i < o.t.n; i++) {
                o.t.p[i] = o.t.p[i] * 4 + o.id;
                o.q[i] = o.q[i] * 2;
            }
            seen = o.t.p;
            seen_q = o.q;
        }
        CHECK(seen != (void *)hp2 && seen_q != (void *)hq, "device %d: the kernel saw a host "
              "pointer (o.t.p %p, o.q %p)", dev, seen, seen_q);
#pragma omp target update device(dev) from(o.t.p[:N])
        CHECK_PTR("target update from(o.t.p[:N])", dev, o.t.p, hp2);
        CHECK_PTR("target update from(o.t.p[:N]) (q)", dev, o.q, hq);
        check_data("target update from(o.t.p[:N])", dev, hp2, 4, 7 + dev);
        for (int i = 0; i < N; i++)
            CHECK(hq[i] == -i, "device %d: hq[%d] = %d, not updated yet", dev, i, hq[i]);
#pragma omp target update device(dev) from(o.q[0:N])
#pragma omp target update device(dev) from(o)
        CHECK_PTR("target update from(o.q[0:N]), from(o)", dev, o.t.p, hp2);
        CHECK_PTR("target update from(o.q[0:N]), from(o) (q)", dev, o.q, hq);
        for (int i = 0; i < N; i++)
            CHECK(hq[i] == -2 * i, "device %d: hq[%d] = %d, expected %d", dev, i, hq[i], -2 * i);
#pragma omp target device(dev)
        for (int i = 0; i < o.t.n; i++)
            o.t.p[i] -= 1;
#pragma omp target exit data device(dev) map(from: o.t.p[:N]) map(from: o) map(release: o.q[0:N])
        CHECK_PTR("nested exit data", dev, o.t.p, hp2);
        CHECK_PTR("nested exit data (q)", dev, o.q, hq);
        CHECK(o.id == 7 + dev && o.t.n == N, "device %d: o = {%d, {%d, ...}}", dev, o.id, o.t.n);
        check_data("nested exit data", dev, hp2, 4, 7 + dev - 1);
        CHECK(!omp_target_is_present(&o, dev) && !omp_target_is_present(hp2, dev) &&
              !omp_target_is_present(hq, dev), "device %d: o or its data still present", dev);
        steps++;
    }
    free(hp);
    free(hp2);
    free(hq);
    PASS("%d steps on %d devices: struct pointer members mapped with their data (target, "
         "enter/exit data, update from of the pointee, of the struct, of a nested struct's "
         "member), host pointers intact and data right after each", steps, ndev);
    return 0;
}
