/*
 * mpi_sizes.c - transfers of the sizes where the protocol changes shape:
 * 0 and 1 byte, around the fragment size F (OMPTARGET_MPI_FRAGMENT_SIZE)
 * and the inline limit I (OMPTARGET_MPI_INLINE_MAX), several fragments
 * (3F + 1, more than the window), sync and async, at the start and at an
 * offset inside an allocation, with guard bytes on both sides of the host
 * buffer; also device to device. With MT_BIG=1: 256 MiB submit and
 * retrieve, sync and async, checked byte for byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "mpi_common.h"

#define OK OFFLOAD_SUCCESS
#define GUARD 64
#define GUARD_BYTE 0xA5

static int guards_ok(const uint8_t *buf, size_t size)
{
    for (size_t i = 0; i < GUARD; i++)
        if (buf[i] != GUARD_BYTE || buf[GUARD + size + i] != GUARD_BYTE)
            return 0;
    return 1;
}

/* One size on device d: submit then retrieve, synchronously and through
 * an async info, at offset 0 and at an odd offset inside a larger
 * allocation. */
static void one_size(int d, size_t size, const char *why, uint32_t seed)
{
    const size_t off = 13;
    uint8_t *in = malloc(size + 1), *out = malloc(size + 2 * GUARD);
    void *tgt = __tgt_rtl_data_alloc(d, (int64_t)size, NULL, TARGET_ALLOC_DEFAULT);
    void *big = __tgt_rtl_data_alloc(d, (int64_t)(size + off + 7), NULL, TARGET_ALLOC_DEFAULT);
    if (!CHECK(in && out && tgt && big, "device %d: alloc of %zu bytes (%s)", d, size, why))
        goto out;

    /* synchronous, at the start of an exact-size allocation */
    mt_fill(in, size, seed);
    memset(out, GUARD_BYTE, size + 2 * GUARD);
    int ok = __tgt_rtl_data_submit(d, tgt, in, (int64_t)size) == OK &&
             __tgt_rtl_data_retrieve(d, out + GUARD, tgt, (int64_t)size) == OK;
    size_t bad = mt_verify(out + GUARD, size, seed);
    CHECK(ok && bad == (size_t)-1 && guards_ok(out, size),
          "device %d: %8zu bytes (%s), sync submit + retrieve: data and guards checked", d, size,
          why);

    /* async, at an odd offset inside a larger allocation; two transfers
     * queued back to back */
    __tgt_async_info ai = {0};
    char *at = (char *)big + off;
    mt_fill(in, size, seed + 1);
    memset(out, GUARD_BYTE, size + 2 * GUARD);
    ok = __tgt_rtl_data_submit_async(d, at, in, (int64_t)size, &ai) == OK &&
         __tgt_rtl_data_retrieve_async(d, out + GUARD, at, (int64_t)size, &ai) == OK &&
         __tgt_rtl_synchronize(d, &ai) == OK;
    bad = mt_verify(out + GUARD, size, seed + 1);
    CHECK(ok && bad == (size_t)-1 && guards_ok(out, size),
          "device %d: %8zu bytes (%s), async at offset %zu: data and guards checked", d, size,
          why, off);

    /* device to device, into the exact allocation of the next device */
    int peer = (d + 1) % mt.ndev;
    void *dst = __tgt_rtl_data_alloc(peer, (int64_t)size, NULL, TARGET_ALLOC_DEFAULT);
    memset(out, GUARD_BYTE, size + 2 * GUARD);
    ok = dst && __tgt_rtl_data_exchange(d, at, peer, dst, (int64_t)size) == OK &&
         __tgt_rtl_data_retrieve(peer, out + GUARD, dst, (int64_t)size) == OK;
    bad = mt_verify(out + GUARD, size, seed + 1);
    CHECK(ok && bad == (size_t)-1 && guards_ok(out, size),
          "device %d -> %d: %8zu bytes (%s), data_exchange: data checked", d, peer, size, why);
    if (dst)
        __tgt_rtl_data_delete(peer, dst);
out:
    if (tgt)
        __tgt_rtl_data_delete(d, tgt);
    if (big)
        __tgt_rtl_data_delete(d, big);
    free(in);
    free(out);
}

/* The sizes to try, each with why (several reasons when limits meet). */
typedef struct size_list {
    int n;
    size_t size[32];
    char why[32][80];
} size_list;

static void add(size_list *l, long long v, const char *why)
{
    if (v < 0)
        return;
    for (int i = 0; i < l->n; i++) {
        if (l->size[i] == (size_t)v) {
            size_t len = strlen(l->why[i]);
            snprintf(l->why[i] + len, sizeof l->why[i] - len, ", %s", why);
            return;
        }
    }
    l->size[l->n] = (size_t)v;
    snprintf(l->why[l->n], sizeof l->why[0], "%s", why);
    l->n++;
}

static void boundaries(void)
{
    long long frag = mt_env_size("OMPTARGET_MPI_FRAGMENT_SIZE", 64ll << 20);
    long long inl = mt_env_size("OMPTARGET_MPI_INLINE_MAX", 4096);
    int window = (int)mt_env_size("OMPTARGET_MPI_WINDOW", 4);
    mt_note("fragment size %lld, inline max %lld, window %d", frag, inl, window);
    size_list l = {0};
    add(&l, 0, "empty");
    add(&l, 1, "one byte");
    add(&l, 7, "odd");
    if (inl > 0)
        add(&l, inl - 1, "inline max - 1");
    add(&l, inl, inl ? "inline max" : "inline off");
    add(&l, inl + 1, "inline max + 1");
    if (frag <= (4 << 20)) {
        add(&l, frag - 1, "fragment - 1");
        add(&l, frag, "fragment");
        add(&l, frag + 1, "fragment + 1");
        add(&l, 2 * frag, "2 fragments");
        add(&l, 3 * frag + 1, "3 fragments + 1");
        add(&l, (window + 3) * frag - 1, "window + 3 fragments - 1");
    }
    add(&l, 1 << 20, "1 MiB");
    for (int d = 0; d < mt.ndev; d++)
        for (int i = 0; i < l.n; i++)
            one_size(d, l.size[i], l.why[i], (uint32_t)(1000 * d + 10 * i));
}

/* 256 MiB each way, sync then async. */
static void big(void)
{
    const size_t size = (size_t)256 << 20;
    int d = mt.ndev - 1;
    uint8_t *in = malloc(size), *out = malloc(size);
    void *tgt = __tgt_rtl_data_alloc(d, (int64_t)size, NULL, TARGET_ALLOC_DEFAULT);
    if (!CHECK(in && out && tgt, "device %d: 256 MiB allocated on both sides", d))
        return;
    mt_fill(in, size, 77);
    memset(out, 0, size);
    double t0 = mt_now();
    int ok = __tgt_rtl_data_submit(d, tgt, in, (int64_t)size) == OK;
    double t1 = mt_now();
    ok = ok && __tgt_rtl_data_retrieve(d, out, tgt, (int64_t)size) == OK;
    double t2 = mt_now();
    size_t bad = mt_verify(out, size, 77);
    CHECK(ok && bad == (size_t)-1, "device %d: 256 MiB sync submit (%.2f s, %.0f MB/s) + "
          "retrieve (%.2f s, %.0f MB/s): pattern checked (first bad byte %zd)", d, t1 - t0,
          size / 1e6 / (t1 - t0), t2 - t1, size / 1e6 / (t2 - t1), (ssize_t)bad);

    __tgt_async_info ai = {0};
    mt_fill(in, size, 78);
    memset(out, 0, size);
    t0 = mt_now();
    ok = __tgt_rtl_data_submit_async(d, tgt, in, (int64_t)size, &ai) == OK &&
         __tgt_rtl_data_retrieve_async(d, out, tgt, (int64_t)size, &ai) == OK;
    t1 = mt_now();
    ok = ok && __tgt_rtl_synchronize(d, &ai) == OK;
    t2 = mt_now();
    bad = mt_verify(out, size, 78);
    CHECK(ok && bad == (size_t)-1, "device %d: 256 MiB submit_async + retrieve_async "
          "(queued in %.3f s), synchronize (%.2f s): pattern checked (first bad byte %zd)", d,
          t1 - t0, t2 - t1, (ssize_t)bad);
    CHECK(__tgt_rtl_data_delete(d, tgt) == OK, "device %d: data_delete of 256 MiB", d);
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    (void)argc;
    mt_start(argv[0], 0);
    double t0 = mt_now();
    const char *b = getenv("MT_BIG");
    if (b && *b == '1')
        big();
    boundaries();
    for (int d = 0; d < mt.ndev; d++)
        CHECK(mt_roundtrip(d, 3, 5), "device %d still answers at the end", d);
    mt_note("tests took %.2f s", mt_now() - t0);
    return mt_finish();
}
