/* omp_target_alloc: device memory managed by hand: omp_target_alloc and
 * omp_target_free on both devices, omp_target_memcpy host -> device,
 * device -> host, device 0 -> device 1, device 1 -> device 0 and within one
 * device, with offsets; omp_target_memcpy_rect of a 2-D block; repeated
 * alloc/free of one size (the device pool) with fresh contents each time. */
#define OMP_TEST_NAME "omp_target_alloc"
#include "omp_check.h"

#define N 10000   /* ints */
#define ROWS 40
#define COLS 50

static int h[N], back[N];
static double m[ROWS][COLS], m2[ROWS][COLS];

int main(void)
{
    int ndev = require_devices(2);
    int host = omp_get_initial_device();
    const size_t bytes = sizeof h;
    int copies = 0;

    for (int i = 0; i < N; i++)
        h[i] = i * 3 - 7;
    int *p0 = omp_target_alloc(bytes, 0);
    int *p1 = omp_target_alloc(bytes, 1);
    CHECK(p0 && p1, "omp_target_alloc failed: %p %p", (void *)p0, (void *)p1);

    /* host -> device 0 -> device 1 -> host */
    CHECK(omp_target_memcpy(p0, h, bytes, 0, 0, 0, host) == 0, "host -> device 0");
    CHECK(omp_target_memcpy(p1, p0, bytes, 0, 0, 1, 0) == 0, "device 0 -> device 1");
    memset(back, 0, sizeof back);
    CHECK(omp_target_memcpy(back, p1, bytes, 0, 0, host, 1) == 0, "device 1 -> host");
    copies += 3;
    for (int i = 0; i < N; i++)
        CHECK(back[i] == h[i], "host -> 0 -> 1 -> host: [%d] = %d, expected %d", i, back[i],
              h[i]);

    /* device 1 -> device 0 with offsets: p0[100..1100) = p1[5000..6000) */
    CHECK(omp_target_memcpy(p0, p1, 1000 * sizeof(int), 100 * sizeof(int),
                            5000 * sizeof(int), 0, 1) == 0, "device 1 -> device 0, offsets");
    /* within device 0: p0[8000..8500) = p0[0..500) */
    CHECK(omp_target_memcpy(p0, p0, 500 * sizeof(int), 8000 * sizeof(int), 0, 0, 0) == 0,
          "device 0 -> device 0");
    /* host -> device 0 at an offset, from an offset */
    CHECK(omp_target_memcpy(p0, h, 10 * sizeof(int), 9990 * sizeof(int), 20 * sizeof(int),
                            0, host) == 0, "host -> device 0, offsets");
    memset(back, 0, sizeof back);
    CHECK(omp_target_memcpy(back, p0, bytes, 0, 0, host, 0) == 0, "device 0 -> host");
    copies += 4;
    for (int i = 0; i < N; i++) {
        int want = h[i];
        if (i >= 100 && i < 1100)
            want = h[i - 100 + 5000];
        else if (i >= 8000 && i < 8500)   /* p0[0..500) after the first copy */
            want = i - 8000 >= 100 ? h[i - 8000 - 100 + 5000] : h[i - 8000];
        else if (i >= 9990)
            want = h[i - 9990 + 20];
        CHECK(back[i] == want, "after offset copies: [%d] = %d, expected %d", i, back[i],
              want);
    }
    /* A partial read at an offset. */
    int few[7] = {0};
    CHECK(omp_target_memcpy(few, p1, sizeof few, 0, 4321 * sizeof(int), host, 1) == 0,
          "device 1 -> host, offset");
    copies++;
    for (int i = 0; i < 7; i++)
        CHECK(few[i] == h[4321 + i], "few[%d] = %d, expected %d", i, few[i], h[4321 + i]);
    omp_target_free(p0, 0);
    omp_target_free(p1, 1);

    /* omp_target_memcpy_rect: a 10x20 block at (5, 7) of the host matrix
     * lands at (30, 25) of a device matrix on device 1, then comes back. */
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            m[r][c] = r * 100 + c, m2[r][c] = -1;
    double *dm = omp_target_alloc(sizeof m, 1);
    CHECK(dm, "omp_target_alloc of the matrix failed");
    CHECK(omp_target_memcpy(dm, m2, sizeof m, 0, 0, 1, host) == 0, "matrix fill");
    size_t volume[2] = {10, 20}, dims[2] = {ROWS, COLS};
    size_t at_src[2] = {5, 7}, at_dst[2] = {30, 25}, zero[2] = {0, 0};
    CHECK(omp_target_memcpy_rect(dm, m, sizeof(double), 2, volume, at_dst, at_src, dims, dims,
                                 1, host) == 0, "memcpy_rect host -> device 1");
    CHECK(omp_target_memcpy_rect(m2, dm, sizeof(double), 2, dims, zero, zero, dims, dims,
                                 host, 1) == 0, "memcpy_rect device 1 -> host");
    copies += 3;
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) {
            int in = r >= 30 && c >= 25 && c < 45;
            double want = in ? m[r - 30 + 5][c - 25 + 7] : -1;
            CHECK(m2[r][c] == want, "rect: [%d][%d] = %g, expected %g", r, c, m2[r][c], want);
        }
    omp_target_free(dm, 1);

    /* Reuse: the same size allocated and freed many times on each device. */
    int rounds = 0;
    for (int k = 0; k < 40; k++) {
        int dev = k % ndev;
        int *p = omp_target_alloc(4096 * sizeof(int), dev);
        CHECK(p, "round %d: omp_target_alloc failed", k);
        for (int i = 0; i < 4096; i++)
            h[i] = k * 10000 + i;
        CHECK(omp_target_memcpy(p, h, 4096 * sizeof(int), 0, 0, dev, host) == 0, "reuse to");
        memset(back, 0, sizeof back);
        CHECK(omp_target_memcpy(back, p, 4096 * sizeof(int), 0, 0, host, dev) == 0,
              "reuse from");
        for (int i = 0; i < 4096; i++)
            CHECK(back[i] == k * 10000 + i, "round %d: [%d] = %d", k, i, back[i]);
        omp_target_free(p, dev);
        rounds++;
    }

    /* Edge cases the API defines. */
    CHECK(omp_target_alloc(0, 0) == NULL, "omp_target_alloc(0) is not NULL");
    omp_target_free(NULL, 0);
    void *hp = omp_target_alloc(64, host);
    CHECK(hp, "omp_target_alloc on the initial device failed");
    memset(hp, 1, 64);
    omp_target_free(hp, host);

    PASS("omp_target_alloc/free on %d devices, %d omp_target_memcpy(_rect) calls: host<->"
         "device, device 0<->1 and within device 0 with offsets, a 10x20 rect, %d "
         "alloc/copy/free rounds, size 0 and the initial device", ndev, copies, rounds);
    return 0;
}
