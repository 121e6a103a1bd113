/* omp_firstprivate: firstprivate scalars of every basic type (explicit
 * and implicit), small and large structs and a fixed-size array: the
 * region sees the host's values, its changes stay private. */
#define OMP_TEST_NAME "omp_firstprivate"
#include "omp_check.h"

typedef struct point {
    int x, y;
} point;

typedef struct record {
    char name[24];
    int id;
    double weight;
    long long big;
    short tags[10];
    float f;
    point where;
    unsigned char raw[37];
} record;

typedef struct results {
    long long ll;
    double d, f;
    int i, c, s;
    unsigned u;
    long long struct_sum;
    int name_ok, arr_sum, implicit;
    uintptr_t addr;
    point p;
} results;

int main(void)
{
    int ndev = require_devices(2);
    for (int dev = 0; dev < ndev; dev++) {
        int i = 1234567 + dev;
        char c = 'q';
        short s = -321;
        unsigned u = 4000000000u;
        long long ll = -9000000000123LL;
        float f = 2.5f;
        double d = 3.141592653589793;
        point pt = {-4, 9};
        record rec;
        memset(&rec, 0, sizeof rec);
        strcpy(rec.name, "firstprivate record");
        rec.id = 77 + dev;
        rec.weight = 0.5;
        rec.big = 1LL << 50;
        for (int k = 0; k < 10; k++)
            rec.tags[k] = (short)(k * k);
        rec.f = -0.125f;
        rec.where = (point){11, 12};
        for (int k = 0; k < 37; k++)
            rec.raw[k] = (unsigned char)(255 - k);
        int arr[16];
        for (int k = 0; k < 16; k++)
            arr[k] = k + 100;
        int implicit_scalar = 555;   /* a scalar without a clause is firstprivate */
        /* An address as an integer: clang 14 treats a firstprivate pointer as a
         * zero-length section (NULL unless mapped), so no pointer here. */
        uintptr_t addr = (uintptr_t)&implicit_scalar;
        results r;
        memset(&r, 0, sizeof r);

#pragma omp target device(dev) firstprivate(i, c, s, u, ll, f, d, pt, rec, arr, addr) \
    map(from: r)
        {
            r.i = i;
            r.c = c;
            r.s = s;
            r.u = u;
            r.ll = ll;
            r.f = f;
            r.d = d;
            r.p = pt;
            r.struct_sum = rec.id + (long long)(rec.weight * 4) + rec.big + rec.where.x +
                           rec.where.y + (long long)(rec.f * 8);
            for (int k = 0; k < 10; k++)
                r.struct_sum += rec.tags[k];
            for (int k = 0; k < 37; k++)
                r.struct_sum += rec.raw[k];
            r.name_ok = 1;
            const char *want = "firstprivate record";
            for (int k = 0; want[k] || rec.name[k]; k++)
                if (want[k] != rec.name[k])
                    r.name_ok = 0;
            /* r is map(from:): its device copy starts uninitialised. */
            r.arr_sum = 0;
            for (int k = 0; k < 16; k++)
                r.arr_sum += arr[k];
            r.implicit = implicit_scalar;
            r.addr = addr;
            /* Private copies: none of this reaches the host. */
            i = c = s = 0;
            u = 0;
            ll = 0;
            f = 0;
            d = 0;
            pt.x = pt.y = 0;
            rec.id = 0;
            rec.name[0] = 0;
            arr[0] = 0;
            implicit_scalar = 0;
            addr = 0;
        }

        long long want_struct = 77 + dev + 2 + (1LL << 50) + 11 + 12 - 1;
        for (int k = 0; k < 10; k++)
            want_struct += k * k;
        for (int k = 0; k < 37; k++)
            want_struct += 255 - k;
        CHECK(r.i == 1234567 + dev, "device %d: int %d", dev, r.i);
        CHECK(r.c == 'q', "device %d: char %d", dev, r.c);
        CHECK(r.s == -321, "device %d: short %d", dev, r.s);
        CHECK(r.u == 4000000000u, "device %d: unsigned %u", dev, r.u);
        CHECK(r.ll == -9000000000123LL, "device %d: long long %lld", dev, r.ll);
        CHECK(r.f == 2.5, "device %d: float %g", dev, r.f);
        CHECK(r.d == 3.141592653589793, "device %d: double %.17g", dev, r.d);
        CHECK(r.p.x == -4 && r.p.y == 9, "device %d: point (%d, %d)", dev, r.p.x, r.p.y);
        CHECK(r.struct_sum == want_struct, "device %d: struct checksum %lld, expected %lld",
              dev, r.struct_sum, want_struct);
        CHECK(r.name_ok, "device %d: struct string member differs", dev);
        CHECK(r.arr_sum == 16 * 100 + 120, "device %d: array sum %d", dev, r.arr_sum);
        CHECK(r.implicit == 555, "device %d: implicit firstprivate %d", dev, r.implicit);
        CHECK(r.addr == (uintptr_t)&implicit_scalar, "device %d: uintptr_t %#lx, expected %p",
              dev, (unsigned long)r.addr, (void *)&implicit_scalar);
        /* The host's values are unchanged. */
        CHECK(i == 1234567 + dev && c == 'q' && s == -321 && u == 4000000000u &&
              ll == -9000000000123LL && f == 2.5f && d == 3.141592653589793 &&
              pt.x == -4 && pt.y == 9 && implicit_scalar == 555 &&
              addr == (uintptr_t)&implicit_scalar,
              "device %d: a host scalar changed", dev);
        CHECK(rec.id == 77 + dev && strcmp(rec.name, "firstprivate record") == 0 &&
              arr[0] == 100, "device %d: a host struct or array changed", dev);
    }
    PASS("firstprivate on %d devices: char, short, int, unsigned, long long, float, double, "
         "an address in a uintptr_t, an implicit scalar, an 8-byte and a %zu-byte struct, int[16]; "
         "values arrive, changes stay private", ndev, sizeof(record));
    return 0;
}
