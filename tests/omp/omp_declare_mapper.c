/* omp_declare_mapper: nested user-defined mappers. `struct vec` has a
 * default mapper that maps its data (v[0:n]); `struct obj` holds two vecs
 * and an index array, and its default mapper maps the index array and the
 * two vecs, which brings in vec's mapper for each; a named mapper maps only
 * part of an obj. Used on a single object, an array section of objects
 * (the mapper per element) and with enter/update/exit data; results
 * checked, host pointers intact after each, and the kernels saw device
 * pointers, not the host's (libomptarget's own host plugin would run a
 * kernel that uses an unattached host pointer without complaint; a device
 * in another process cannot). */
#define OMP_TEST_NAME "omp_declare_mapper"
#include "omp_check.h"

#define NV 300
#define NI 50
#define NOBJ 3

struct vec {
    int n;
    double *v;
};
/* x.n, not x: with map(tofrom: x, x.v[0:x.n]) libomptarget 14 does not
 * attach x.v at enter data (a later kernel sees the host pointer). */
#pragma omp declare mapper(struct vec x) map(tofrom: x.n, x.v[0:x.n])

struct obj {
    int id;
    struct vec a;
    struct vec b;
    int nidx;
    int *idx;
};
#pragma omp declare mapper(struct obj o) map(tofrom: o.id, o.nidx, o.a, o.b) \
    map(tofrom: o.idx[0:o.nidx])
/* Only a's data and the index array: b stays on the host. */
#pragma omp declare mapper(only_a: struct obj o) map(tofrom: o.id, o.nidx, o.a, \
    o.idx[0:o.nidx])

static void fill(struct obj *o, int id)
{
    o->id = id;
    o->a.n = NV;
    o->b.n = NV / 2;
    o->nidx = NI;
    for (int i = 0; i < NV; i++)
        o->a.v[i] = i + id;
    for (int i = 0; i < NV / 2; i++)
        o->b.v[i] = -i;
    for (int i = 0; i < NI; i++)
        o->idx[i] = (i * 7) % NV;
}

static struct obj make(int id)
{
    struct obj o;
    o.a.v = malloc(NV * sizeof(double));
    o.b.v = malloc(NV / 2 * sizeof(double));
    o.idx = malloc(NI * sizeof(int));
    CHECK(o.a.v && o.b.v && o.idx, "malloc failed");
    fill(&o, id);
    return o;
}

/* The host pointers of o are still `want`'s, the data as the kernel left it:
 * a.v[idx[k]] += 100 * mult for each k, b.v[i] *= mult (if b_mapped), idx[i] += 1. */
static void check_obj(const char *what, int dev, const struct obj *o, const struct obj *want,
                      int id, int mult, int b_mapped)
{
    CHECK(o->a.v == want->a.v && o->b.v == want->b.v && o->idx == want->idx,
          "device %d, %s: host pointers changed: a.v %p (%p), b.v %p (%p), idx %p (%p)", dev,
          what, (void *)o->a.v, (void *)want->a.v, (void *)o->b.v, (void *)want->b.v,
          (void *)o->idx, (void *)want->idx);
    CHECK(o->id == id && o->a.n == NV && o->b.n == NV / 2 && o->nidx == NI,
          "device %d, %s: scalars {%d, %d, %d, %d}", dev, what, o->id, o->a.n, o->b.n, o->nidx);
    for (int i = 0; i < NV; i++) {
        double w = i + id;
        for (int k = 0; k < NI; k++)
            if ((k * 7) % NV == i)
                w += 100.0 * mult;
        CHECK(o->a.v[i] == w, "device %d, %s: a.v[%d] = %g, expected %g", dev, what, i,
              o->a.v[i], w);
    }
    for (int i = 0; i < NV / 2; i++) {
        double w = b_mapped ? -i * mult : -i;
        CHECK(o->b.v[i] == w, "device %d, %s: b.v[%d] = %g, expected %g", dev, what, i,
              o->b.v[i], w);
    }
    for (int i = 0; i < NI; i++)
        CHECK(o->idx[i] == (i * 7) % NV + 1, "device %d, %s: idx[%d] = %d, expected %d", dev,
              what, i, o->idx[i], (i * 7) % NV + 1);
}

/* The kernel saw pointers other than the host's: they were attached. */
#define CHECK_ATTACHED(what, dev, da, di, o)                                                \
    CHECK((da) != (void *)(o).a.v && (di) != (void *)(o).idx,                                \
          "device %d, %s: the kernel saw a.v = %p, idx = %p, the host pointers (%p, %p): "    \
          "not attached to the device's copies", dev, what, (da), (di), (void *)(o).a.v,      \
          (void *)(o).idx)

int main(void)
{
    int ndev = require_devices(1);
    struct obj objs[NOBJ];
    for (int k = 0; k < NOBJ; k++)
        objs[k] = make(10 * k);
    struct obj saved[NOBJ];
    memcpy(saved, objs, sizeof saved);
    int uses = 0;

    for (int dev = 0; dev < ndev; dev++) {
        int mult = 2 + dev;
        /* 1. One object through the default mappers (obj's, then vec's). */
        struct obj o = objs[0];
        fill(&o, 5);
        void *da = NULL, *di = NULL;
#pragma omp target device(dev) map(tofrom: o) map(from: da, di) firstprivate(mult)
        {
            da = o.a.v;
            di = o.idx;
            for (int k = 0; k < o.nidx; k++)
                o.a.v[o.idx[k]] += 100.0 * mult;
            for (int i = 0; i < o.b.n; i++)
                o.b.v[i] *= mult;
            for (int k = 0; k < o.nidx; k++)
                o.idx[k] += 1;
        }
        CHECK_ATTACHED("map(tofrom: o)", dev, da, di, o);
        check_obj("map(tofrom: o), nested default mappers", dev, &o, &saved[0], 5, mult, 1);
        uses++;

        /* 2. An array section of objects: the mapper for each element. */
        for (int k = 0; k < NOBJ; k++)
            fill(&objs[k], 10 * k + dev);
#pragma omp target device(dev) map(tofrom: objs[0:NOBJ]) map(from: da, di) firstprivate(mult)
        for (int j = 0; j < NOBJ; j++) {
            da = objs[j].a.v;
            di = objs[j].idx;
            for (int k = 0; k < objs[j].nidx; k++)
                objs[j].a.v[objs[j].idx[k]] += 100.0 * mult;
            for (int i = 0; i < objs[j].b.n; i++)
                objs[j].b.v[i] *= mult;
            for (int k = 0; k < objs[j].nidx; k++)
                objs[j].idx[k] += 1;
        }
        CHECK_ATTACHED("map(tofrom: objs[0:3])", dev, da, di, objs[NOBJ - 1]);
        for (int k = 0; k < NOBJ; k++)
            check_obj("map(tofrom: objs[0:3])", dev, &objs[k], &saved[k], 10 * k + dev, mult, 1);
        uses++;

        /* 3. The named mapper: b is not mapped, the kernel leaves it. */
        fill(&o, 6);
#pragma omp target device(dev) map(mapper(only_a), tofrom: o) map(from: da, di) \
    firstprivate(mult)
        {
            da = o.a.v;
            di = o.idx;
            for (int k = 0; k < o.nidx; k++)
                o.a.v[o.idx[k]] += 100.0 * mult;
            for (int k = 0; k < o.nidx; k++)
                o.idx[k] += 1;
        }
        CHECK_ATTACHED("map(mapper(only_a), tofrom: o)", dev, da, di, o);
        check_obj("map(mapper(only_a), tofrom: o)", dev, &o, &saved[0], 6, mult, 0);
        uses++;

        /* 4. enter data, a kernel, update from, exit data, all through the
         *    default mappers. */
        fill(&o, 7);
#pragma omp target enter data device(dev) map(to: o)
        CHECK(o.a.v == saved[0].a.v && o.idx == saved[0].idx, "device %d: host pointers "
              "changed by enter data", dev);
#pragma omp target device(dev) map(from: da, di) firstprivate(mult)
        {
            da = o.a.v;
            di = o.idx;
            for (int k = 0; k < o.nidx; k++)
                o.a.v[o.idx[k]] += 100.0 * mult;
            for (int i = 0; i < o.b.n; i++)
                o.b.v[i] *= mult;
            for (int k = 0; k < o.nidx; k++)
                o.idx[k] += 1;
        }
        CHECK_ATTACHED("enter data, then a kernel", dev, da, di, o);
#pragma omp target update device(dev) from(o)
        check_obj("enter data, kernel, update from(o)", dev, &o, &saved[0], 7, mult, 1);
        fill(&o, 7);   /* exit data copies the device's (unchanged) data back again */
#pragma omp target exit data device(dev) map(from: o)
        check_obj("exit data map(from: o)", dev, &o, &saved[0], 7, mult, 1);
        CHECK(!omp_target_is_present(o.a.v, dev) && !omp_target_is_present(o.idx, dev),
              "device %d: o's data still present after exit data", dev);
        uses++;
    }
    for (int k = 0; k < NOBJ; k++) {
        free(saved[k].a.v);
        free(saved[k].b.v);
        free(saved[k].idx);
    }
    PASS("%d uses on %d devices of nested declare mappers (obj's mapper maps two vecs "
         "through vec's mapper), on an object, an array of objects, a named mapper, and "
         "enter/update/exit data; data right and host pointers intact", uses, ndev);
    return 0;
}
