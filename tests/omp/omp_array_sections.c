/* omp_array_sections: maps of array sections and structures: pointer
 * sections with an offset, rows of a 2-D array, a struct with a pointer
 * member mapped with its data, map(always) forcing a copy of present
 * data, and several arrays of different types in one region. */
#define OMP_TEST_NAME "omp_array_sections"
#include "omp_check.h"

#define N 10000
#define R 64
#define C 48

typedef struct vec {
    int n;
    double *data;
    double scale;
} vec;

static double m[R][C];

int main(void)
{
    int ndev = require_devices(2);
    int *p = malloc(N * sizeof *p);
    double *vd = malloc(N * sizeof *vd);
    CHECK(p && vd, "out of memory");

    for (int dev = 0; dev < ndev; dev++) {
        /* 1. p[lo:len]: only that part exists on the device, indexed as on the host. */
        const int lo = 1234, len = 3000;
        for (int i = 0; i < N; i++)
            p[i] = i;
#pragma omp target device(dev) map(tofrom: p[lo:len])
        for (int i = lo; i < lo + len; i++)
            p[i] = -p[i];
        for (int i = 0; i < N; i++)
            CHECK(p[i] == (i >= lo && i < lo + len ? -i : i), "device %d: p[%d] = %d", dev, i,
                  p[i]);

        /* 2. Rows 10..29 of a 2-D array. */
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++)
                m[r][c] = r * 1000 + c;
#pragma omp target device(dev) map(tofrom: m[10:20][0:C])
        for (int r = 10; r < 30; r++)
            for (int c = 0; c < C; c++)
                m[r][c] += 0.5;
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++) {
                double want = r * 1000 + c + (r >= 10 && r < 30 ? 0.5 : 0);
                CHECK(m[r][c] == want, "device %d: m[%d][%d] = %g, expected %g", dev, r, c,
                      m[r][c], want);
            }

        /* 3. A struct and the array its member points to. */
        vec v = {N, vd, 1.5 + dev};
        for (int i = 0; i < N; i++)
            vd[i] = i;
#pragma omp target device(dev) map(to: v) map(tofrom: v.data[0:v.n])
        for (int i = 0; i < v.n; i++)
            v.data[i] *= v.scale;
        CHECK(v.data == vd, "device %d: the host struct's pointer changed", dev);
        for (int i = 0; i < N; i++)
            CHECK(vd[i] == i * (1.5 + dev), "device %d: v.data[%d] = %g", dev, i, vd[i]);

        /* 4. map(always, to) sends present data again; plain to does not. */
#pragma omp target data device(dev) map(to: p[0:N])
        {
            for (int i = 0; i < N; i++)
                p[i] = 7;
            int first = 0, second = 0;
#pragma omp target device(dev) map(to: p[0:N]) map(from: first)
            first = p[5];
#pragma omp target device(dev) map(always, to: p[0:N]) map(from: second)
            second = p[5];
            CHECK(first == 5, "device %d: present data was sent again (%d)", dev, first);
            CHECK(second == 7, "device %d: map(always, to) did not send (%d)", dev, second);
#pragma omp target device(dev)
            p[6] = 66;
#pragma omp target device(dev) map(always, from: p[0:N])
            p[7] = 77;
            CHECK(p[6] == 66 && p[7] == 77, "device %d: map(always, from) gave %d %d", dev,
                  p[6], p[7]);
        }

        /* 5. Mixed types in one region. */
        char s[100];
        short sh[300];
        long long ll[50];
        float fl[77];
        for (int i = 0; i < 100; i++)
            s[i] = (char)i;
        for (int i = 0; i < 300; i++)
            sh[i] = (short)(i - 150);
        for (int i = 0; i < 50; i++)
            ll[i] = (long long)i << 40;
        for (int i = 0; i < 77; i++)
            fl[i] = i * 0.25f;
#pragma omp target device(dev) map(tofrom: s, sh[10:280], ll, fl[1:75])
        {
            for (int i = 0; i < 100; i++)
                s[i] = (char)(s[i] + 1);
            for (int i = 10; i < 290; i++)
                sh[i] = (short)(sh[i] * 2);
            for (int i = 0; i < 50; i++)
                ll[i] += 1;
            for (int i = 1; i < 76; i++)
                fl[i] += 1.0f;
        }
        for (int i = 0; i < 100; i++)
            CHECK(s[i] == (char)(i + 1), "device %d: s[%d]", dev, i);
        for (int i = 0; i < 300; i++)
            CHECK(sh[i] == (short)((i >= 10 && i < 290 ? 2 : 1) * (i - 150)), "device %d: sh[%d]",
                  dev, i);
        for (int i = 0; i < 50; i++)
            CHECK(ll[i] == ((long long)i << 40) + 1, "device %d: ll[%d]", dev, i);
        for (int i = 0; i < 77; i++)
            CHECK(fl[i] == i * 0.25f + (i >= 1 && i < 76 ? 1.0f : 0.0f), "device %d: fl[%d]",
                  dev, i);
    }
    free(p);
    free(vd);
    PASS("array sections on %d devices: p[1234:3000] of a heap array, rows m[10:20][0:48], a "
         "struct with its pointer member's data, map(always, to/from) of present data, five "
         "types and partial sections in one region", ndev);
    return 0;
}
