/* proxy_exchange: omp_target_memcpy between devices with the test plugin
 * proxied (run with OTM_ACCEL_DEVICES=2: devices 0 and 3 are ranks 1 and
 * 2's CPUs, 1, 2 and 4, 5 their proxied devices): two proxied devices of
 * one rank, proxied devices of two ranks, a rank's CPU and its proxied
 * device both ways, a CPU and another rank's proxied device both ways; at
 * 1 MiB + 13 bytes (in fragments, staged) and at 100 bytes with offsets
 * (inline). Every byte of every destination is checked after each copy. */
#define OMP_TEST_NAME "proxy_exchange"
#include "proxy_omp.h"

#define BIG ((1u << 20) + 13u)
#define MAXDEV 16

static unsigned char *mem[MAXDEV];

static void expect_bytes(int d, const unsigned char *want, size_t len, const char *step)
{
    int host = omp_get_initial_device();
    unsigned char *got = malloc(len);
    CHECK(got != NULL, "out of memory");
    CHECK(!omp_target_memcpy(got, mem[d], len, 0, 0, host, d), "%s: back from device %d", step,
          d);
    for (size_t i = 0; i < len; i++)
        CHECK(got[i] == want[i], "%s: device %d byte %zu is %u, expected %u", step, d, i, got[i],
              want[i]);
    free(got);
}

/* Fills device d with junk, so that a copy that did nothing shows. */
static void spoil(int d, size_t len)
{
    int host = omp_get_initial_device();
    unsigned char *junk = malloc(len);
    CHECK(junk != NULL, "out of memory");
    memset(junk, 0xee, len);
    CHECK(!omp_target_memcpy(mem[d], junk, len, 0, 0, d, host), "junk to device %d", d);
    free(junk);
}

static const char *kind(int d, char *buf, size_t len)
{
    if (local_of(d) < 0)
        snprintf(buf, len, "rank %d's CPU (device %d)", rank_of(d), d);
    else
        snprintf(buf, len, "rank %d's otmaccel device %d (device %d)", rank_of(d), local_of(d),
                 d);
    return buf;
}

/* Copies the whole buffer along a chain of devices, checked at each. */
static void chain(const int *path, int steps, size_t len, const unsigned char *src)
{
    int host = omp_get_initial_device();
    char step[256], a[64], b[64];
    spoil(path[0], len);
    CHECK(!omp_target_memcpy(mem[path[0]], src, len, 0, 0, path[0], host), "to device %d",
          path[0]);
    expect_bytes(path[0], src, len, "host to the first device");
    for (int i = 0; i + 1 < steps; i++) {
        int s = path[i], d = path[i + 1];
        snprintf(step, sizeof step, "%zu bytes from %s to %s", len, kind(s, a, sizeof a),
                 kind(d, b, sizeof b));
        spoil(d, len);
        CHECK(!omp_target_memcpy(mem[d], mem[s], len, 0, 0, d, s), "%s", step);
        expect_bytes(d, src, len, step);
    }
}

/* 100 bytes from an offset of s to an offset of d; the rest of d kept. */
static void offsets(int s, int d, const unsigned char *src)
{
    int host = omp_get_initial_device();
    char step[256], a[64], b[64];
    unsigned char *want = malloc(BIG);
    CHECK(want != NULL, "out of memory");
    snprintf(step, sizeof step, "100 bytes at offset 1000 of %s to offset 77 of %s",
             kind(s, a, sizeof a), kind(d, b, sizeof b));
    CHECK(!omp_target_memcpy(mem[s], src, BIG, 0, 0, s, host), "to device %d", s);
    memset(want, 0xee, BIG);
    spoil(d, BIG);
    CHECK(!omp_target_memcpy(mem[d], mem[s], 100, 77, 1000, d, s), "%s", step);
    memcpy(want + 77, src + 1000, 100);
    expect_bytes(d, want, BIG, step);
    free(want);
}

int main(void)
{
    int n = require_proxied_devices();
    CHECK(per_rank() == 3 && n <= MAXDEV, "run it with OTM_ACCEL_DEVICES=2 (%d per rank)",
          per_rank());
    printf("RUN proxy_exchange: %d devices\n", n);
    fflush(stdout);
    unsigned char *src = malloc(BIG);
    CHECK(src != NULL, "out of memory");
    unsigned state = 777u;
    for (size_t i = 0; i < BIG; i++)
        src[i] = (unsigned char)next_rand(&state);
    for (int d = 0; d < n; d++) {
        mem[d] = omp_target_alloc(BIG, d);
        CHECK(mem[d] != NULL, "omp_target_alloc on device %d", d);
    }
    /* 1 -> 2: proxied, one rank; 2 -> 4: proxied, two ranks; 4 -> 3:
     * proxied to its CPU; 3 -> 1: CPU to another rank's proxied; 1 -> 0:
     * proxied to its CPU; 0 -> 5: CPU to another rank's proxied; 5 -> 4,
     * 4 -> 1: proxied of one rank, then back across. */
    static const int path[] = {1, 2, 4, 3, 1, 0, 5, 4, 1, 0, 2};
    int steps = (int)(sizeof path / sizeof *path);
    chain(path, steps, BIG, src);
    chain(path, steps, 100, src + 5);
    /* Offsets on both ends, for each kind of pair. */
    static const int pairs[][2] = {{1, 2}, {2, 5}, {0, 1}, {1, 0}, {3, 2}, {4, 0}};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
        offsets(pairs[i][0], pairs[i][1], src);
    for (int d = 0; d < n; d++)
        omp_target_free(mem[d], d);
    free(src);
    PASS("%d devices: omp_target_memcpy proxied<->proxied on one rank and across ranks, "
         "CPU<->proxied on one rank and across, %u and 100 bytes, with offsets; every byte",
         n, BIG);
    return 0;
}
