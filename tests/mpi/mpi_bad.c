/*
 * mpi_bad.c - bad input at every entry point: each call must fail
 * (OFFLOAD_FAIL, or NULL for the calls returning a pointer) with a message
 * on stderr, and leave every process alive: after each case a valid round
 * trip runs on every device. The shutdown checks of run_mpi.sh then show
 * that every worker still exits cleanly.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_common.h"

#define OK OFFLOAD_SUCCESS
#define FAIL OFFLOAD_FAIL

static int cases;

/* First line of the captured text, for the report. */
static const char *first_line(const char *text)
{
    static char line[200];
    size_t n = strcspn(text, "\n");
    if (n >= sizeof line)
        n = sizeof line - 1;
    memcpy(line, text, n);
    line[n] = 0;
    return line;
}

static int all_alive(uint32_t seed)
{
    int ok = 1;
    for (int d = 0; d < mt.ndev; d++)
        ok &= mt_roundtrip(d, 24, seed + (uint32_t)d);
    return ok;
}

static void report(const char *what, int failed, const char *msg, int alive)
{
    cases++;
    int has_msg = strstr(msg, "omptarget-mpi") != NULL;
    CHECK(failed && has_msg && alive, "%s -> %s; stderr: %s; next valid calls %s", what,
          failed ? "fails" : "SUCCEEDS", has_msg ? first_line(msg) : "(NOTHING)",
          alive ? "work" : "FAIL");
}

/* BAD(what, expression that is true when the call failed): runs the
 * call with stderr captured, then a valid round trip on every device. */
#define BAD(what, failed)                                                                      \
    do {                                                                                       \
        mt_capture_begin();                                                                    \
        int failed_ = (failed);                                                                \
        const char *msg_ = mt_capture_end();                                                   \
        char keep_[4096];                                                                      \
        strcpy(keep_, msg_);                                                                   \
        report((what), failed_, keep_, all_alive((uint32_t)cases));                            \
    } while (0)

static void bad_ids(void)
{
    int n = mt.ndev;
    int ids[2] = {-1, n};
    void *p0 = __tgt_rtl_data_alloc(0, 64, NULL, TARGET_ALLOC_DEFAULT);
    void *ev = NULL;
    __tgt_rtl_create_event(0, &ev);
    int64_t host = 5;
    void *k = mt.fx[0][MT_FX_TICK];
    char what[128];
    for (int i = 0; i < 2; i++) {
        int id = ids[i];
        __tgt_async_info ai = {0};
        void *out = &ai;
#define ID(name) (snprintf(what, sizeof what, "%s with device id %d", name, id), what)
        BAD(ID("init_device"), __tgt_rtl_init_device(id) == FAIL);
        BAD(ID("load_binary"), __tgt_rtl_load_binary(id, &mt.images[0]) == NULL);
        BAD(ID("data_alloc"), __tgt_rtl_data_alloc(id, 64, NULL, TARGET_ALLOC_DEFAULT) == NULL);
        BAD(ID("data_alloc HOST"), __tgt_rtl_data_alloc(id, 64, NULL, TARGET_ALLOC_HOST) == NULL);
        BAD(ID("data_delete"), __tgt_rtl_data_delete(id, p0) == FAIL);
        BAD(ID("data_submit"), __tgt_rtl_data_submit(id, p0, &host, 8) == FAIL);
        BAD(ID("data_submit_async"), __tgt_rtl_data_submit_async(id, p0, &host, 8, &ai) == FAIL);
        BAD(ID("data_retrieve"), __tgt_rtl_data_retrieve(id, &host, p0, 8) == FAIL);
        BAD(ID("data_retrieve_async"),
            __tgt_rtl_data_retrieve_async(id, &host, p0, 8, &ai) == FAIL);
        BAD(ID("data_exchange from"), __tgt_rtl_data_exchange(id, p0, 0, p0, 8) == FAIL);
        BAD(ID("data_exchange to"), __tgt_rtl_data_exchange(0, p0, id, p0, 8) == FAIL);
        BAD(ID("data_exchange_async from"),
            __tgt_rtl_data_exchange_async(id, p0, 0, p0, 8, &ai) == FAIL);
        BAD(ID("data_exchange_async to"),
            __tgt_rtl_data_exchange_async(0, p0, id, p0, 8, &ai) == FAIL);
        BAD(ID("run_target_region"), __tgt_rtl_run_target_region(id, k, NULL, NULL, 0) == FAIL);
        BAD(ID("run_target_region_async"),
            __tgt_rtl_run_target_region_async(id, k, NULL, NULL, 0, &ai) == FAIL);
        BAD(ID("run_target_team_region"),
            __tgt_rtl_run_target_team_region(id, k, NULL, NULL, 0, 1, 1, 1) == FAIL);
        BAD(ID("run_target_team_region_async"),
            __tgt_rtl_run_target_team_region_async(id, k, NULL, NULL, 0, 1, 1, 1, &ai) == FAIL);
        BAD(ID("synchronize"), __tgt_rtl_synchronize(id, &ai) == FAIL);
        BAD(ID("create_event"), __tgt_rtl_create_event(id, &out) == FAIL);
        BAD(ID("record_event"), __tgt_rtl_record_event(id, ev, &ai) == FAIL);
        BAD(ID("wait_event"), __tgt_rtl_wait_event(id, ev, &ai) == FAIL);
        BAD(ID("sync_event"), __tgt_rtl_sync_event(id, ev) == FAIL);
        BAD(ID("destroy_event"), __tgt_rtl_destroy_event(id, ev) == FAIL);
        mt_capture_begin();
        __tgt_rtl_print_device_info(id);
        const char *msg = mt_capture_end();
        cases++;
        CHECK(strstr(msg, "omptarget-mpi") != NULL,
              "print_device_info with device id %d prints no device; stderr: %s", id,
              first_line(msg));
        /* Nothing was queued on the async info by the failed calls. */
        CHECK(__tgt_rtl_synchronize(0, &ai) == OK && ai.Queue == NULL,
              "the async info passed to the failed calls (id %d) synchronizes", id);
#undef ID
    }
    CHECK(__tgt_rtl_destroy_event(0, ev) == OK, "the event survives the failed calls");
    CHECK(__tgt_rtl_data_delete(0, p0) == OK, "the allocation survives the failed calls");
}

static void bad_pointers_and_sizes(void)
{
    int d = mt.ndev - 1;
    void *p = __tgt_rtl_data_alloc(d, 100, NULL, TARGET_ALLOC_DEFAULT);
    void *q = __tgt_rtl_data_alloc(0, 100, NULL, TARGET_ALLOC_DEFAULT);
    void *k = mt.fx[d][MT_FX_ADD];
    uint8_t host[256];
    __tgt_async_info ai = {0};
    void *ev = NULL;
    __tgt_rtl_create_event(d, &ev);
    void *args[2] = {p, p};

    /* NULL pointers */
    BAD("data_submit to a NULL device pointer", __tgt_rtl_data_submit(d, NULL, host, 8) == FAIL);
    BAD("data_submit from a NULL host pointer", __tgt_rtl_data_submit(d, p, NULL, 8) == FAIL);
    BAD("data_retrieve from a NULL device pointer",
        __tgt_rtl_data_retrieve(d, host, NULL, 8) == FAIL);
    BAD("data_retrieve into a NULL host pointer", __tgt_rtl_data_retrieve(d, NULL, p, 8) == FAIL);
    BAD("data_submit_async to a NULL device pointer",
        __tgt_rtl_data_submit_async(d, NULL, host, 8, &ai) == FAIL);
    BAD("data_retrieve_async into a NULL host pointer",
        __tgt_rtl_data_retrieve_async(d, NULL, p, 8, &ai) == FAIL);
    BAD("data_submit_async with a NULL async info",
        __tgt_rtl_data_submit_async(d, p, host, 8, NULL) == FAIL);
    BAD("data_retrieve_async with a NULL async info",
        __tgt_rtl_data_retrieve_async(d, host, p, 8, NULL) == FAIL);
    BAD("data_exchange from a NULL pointer", __tgt_rtl_data_exchange(0, NULL, d, p, 8) == FAIL);
    BAD("data_exchange to a NULL pointer", __tgt_rtl_data_exchange(0, q, d, NULL, 8) == FAIL);
    BAD("data_delete of NULL", __tgt_rtl_data_delete(d, NULL) == FAIL);
    BAD("load_binary of a NULL image", __tgt_rtl_load_binary(d, NULL) == NULL);
    /* An image is known by where its bytes lie (libomptarget 16 passes a
     * copy of the record, pointing into the descriptor's image): the same
     * bytes at another address are not the registered image. */
    __tgt_device_image stranger = mt.images[0];
    char *elsewhere = malloc(mt.image_size);
    if (elsewhere) {
        memcpy(elsewhere, mt.images[0].ImageStart, mt.image_size);
        stranger.ImageStart = elsewhere;
        stranger.ImageEnd = elsewhere + mt.image_size;
    }
    BAD("load_binary of an image not in the registered descriptor (a copy of its bytes)",
        elsewhere && __tgt_rtl_load_binary(d, &stranger) == NULL);
    free(elsewhere);
    BAD("run_target_region with a NULL kernel",
        __tgt_rtl_run_target_region(d, NULL, args, NULL, 2) == FAIL);
    BAD("run_target_region with 2 arguments and NULL args",
        __tgt_rtl_run_target_region(d, k, NULL, NULL, 2) == FAIL);
    BAD("create_event into NULL", __tgt_rtl_create_event(d, NULL) == FAIL);
    BAD("record_event of a NULL event", __tgt_rtl_record_event(d, NULL, &ai) == FAIL);
    BAD("record_event with a NULL async info", __tgt_rtl_record_event(d, ev, NULL) == FAIL);
    BAD("wait_event of a NULL event", __tgt_rtl_wait_event(d, NULL, &ai) == FAIL);
    BAD("wait_event with a NULL async info", __tgt_rtl_wait_event(d, ev, NULL) == FAIL);
    BAD("sync_event of a NULL event", __tgt_rtl_sync_event(d, NULL) == FAIL);
    BAD("destroy_event of a NULL event", __tgt_rtl_destroy_event(d, NULL) == FAIL);
    BAD("synchronize with a NULL async info", __tgt_rtl_synchronize(d, NULL) == FAIL);

    /* negative sizes */
    BAD("data_alloc of -1 bytes", __tgt_rtl_data_alloc(d, -1, NULL, TARGET_ALLOC_DEFAULT) == NULL);
    BAD("data_alloc HOST of -1 bytes", __tgt_rtl_data_alloc(d, -1, NULL, TARGET_ALLOC_HOST) == NULL);
    BAD("data_submit of -1 bytes", __tgt_rtl_data_submit(d, p, host, -1) == FAIL);
    BAD("data_retrieve of -8 bytes", __tgt_rtl_data_retrieve(d, host, p, -8) == FAIL);
    BAD("data_submit_async of INT64_MIN bytes",
        __tgt_rtl_data_submit_async(d, p, host, INT64_MIN, &ai) == FAIL);
    BAD("data_retrieve_async of -1 bytes",
        __tgt_rtl_data_retrieve_async(d, host, p, -1, &ai) == FAIL);
    BAD("data_exchange of -1 bytes", __tgt_rtl_data_exchange(0, q, d, p, -1) == FAIL);
    BAD("run_target_region with -1 arguments",
        __tgt_rtl_run_target_region(d, k, args, NULL, -1) == FAIL);
    /* A size no device can hold. */
    BAD("data_alloc of 2^62 bytes",
        __tgt_rtl_data_alloc(d, INT64_C(1) << 62, NULL, TARGET_ALLOC_DEFAULT) == NULL);

    /* unknown kernel entries */
    BAD("run_target_region of a data pointer (not a kernel)",
        __tgt_rtl_run_target_region(d, p, args, NULL, 2) == FAIL);
    BAD("run_target_region of the image's global (not a kernel)",
        __tgt_rtl_run_target_region(d, mt.fx[d][MT_FX_GLOBAL], NULL, NULL, 0) == FAIL);
    BAD("run_target_region of a host function's address",
        __tgt_rtl_run_target_region(d, (void *)(uintptr_t)&mt_roundtrip, NULL, NULL, 0) == FAIL);
    BAD("run_target_team_region of address 0x1234",
        __tgt_rtl_run_target_team_region(d, (void *)0x1234, NULL, NULL, 0, 1, 1, 1) == FAIL);
    BAD("run_target_region of a kernel address + 1",
        __tgt_rtl_run_target_region(d, (char *)k + 1, args, NULL, 2) == FAIL);
    /* Queued: the failure shows at synchronize. */
    BAD("run_target_region_async of a data pointer, then synchronize",
        __tgt_rtl_run_target_region_async(d, p, args, NULL, 2, &ai) != OK ||
            __tgt_rtl_synchronize(d, &ai) == FAIL);
    CHECK(ai.Queue == NULL, "the async info is reset after the failed synchronize");

    /* pointers outside any allocation */
    BAD("data_submit to a host stack address",
        __tgt_rtl_data_submit(d, host, host, 8) == FAIL);
    BAD("data_submit to address 0x1000", __tgt_rtl_data_submit(d, (void *)0x1000, host, 8) == FAIL);
    BAD("data_retrieve from just past the end of an allocation",
        __tgt_rtl_data_retrieve(d, host, (char *)p + 100, 1) == FAIL);
    BAD("data_submit to device 0's allocation on another device",
        mt.ndev < 2 || __tgt_rtl_data_submit(d, q, host, 8) == FAIL);
    BAD("data_exchange from a pointer outside any allocation",
        __tgt_rtl_data_exchange(0, (char *)q - 4096, d, p, 8) == FAIL);
    BAD("data_delete of an interior pointer",
        __tgt_rtl_data_delete(d, (char *)p + 8) == FAIL);
    BAD("data_delete of a pointer never allocated",
        __tgt_rtl_data_delete(d, (void *)0x1000) == FAIL);

    /* transfers past the end of an allocation: the host buffer must stay
     * untouched by a failed retrieve */
    memset(host, 0x3c, sizeof host);
    BAD("data_submit of 101 bytes to a 100-byte allocation (inline)",
        __tgt_rtl_data_submit(d, p, host, 101) == FAIL);
    BAD("data_submit of 51 bytes at offset 50 of 100",
        __tgt_rtl_data_submit(d, (char *)p + 50, host, 51) == FAIL);
    BAD("data_retrieve of 101 bytes from a 100-byte allocation",
        __tgt_rtl_data_retrieve(d, host, p, 101) == FAIL);
    int untouched = 1;
    for (size_t i = 0; i < sizeof host; i++)
        untouched &= host[i] == 0x3c;
    CHECK(untouched, "the failed retrieve left the host buffer untouched");
    BAD("data_exchange of 101 bytes into a 100-byte allocation",
        __tgt_rtl_data_exchange(0, q, d, p, 101) == FAIL);
    size_t bsz = 100000;
    uint8_t *bin = malloc(3 * bsz), *bout = malloc(3 * bsz);
    void *b = __tgt_rtl_data_alloc(d, (int64_t)bsz, NULL, TARGET_ALLOC_DEFAULT);
    mt_fill(bin, 3 * bsz, 9);
    memset(bout, 0x3c, 3 * bsz);
    BAD("data_submit of 3x the size of a 100000-byte allocation (payload in fragments)",
        __tgt_rtl_data_submit(d, b, bin, (int64_t)(3 * bsz)) == FAIL);
    BAD("data_retrieve of 100001 bytes from a 100000-byte allocation",
        __tgt_rtl_data_retrieve(d, bout, b, (int64_t)bsz + 1) == FAIL);
    BAD("data_submit_async past the end, then synchronize",
        __tgt_rtl_data_submit_async(d, (char *)b + 1, bin, (int64_t)bsz, &ai) != OK ||
            __tgt_rtl_synchronize(d, &ai) == FAIL);
    /* The retrieve has ended when it returns, with its own error, said
     * once: the queue's synchronize does not say it again. */
    int32_t retrieved = OK;
    BAD("data_retrieve_async past the end, then synchronize",
        (retrieved = __tgt_rtl_data_retrieve_async(d, bout, (char *)b + 1, (int64_t)bsz, &ai),
         __tgt_rtl_synchronize(d, &ai) == OK && retrieved != OK));
    untouched = 1;
    for (size_t i = 0; i < 3 * bsz; i++)
        untouched &= bout[i] == 0x3c;
    CHECK(untouched, "the failed large retrieves left the host buffer untouched");
    /* The allocation itself is intact. */
    int ok = __tgt_rtl_data_submit(d, b, bin, (int64_t)bsz) == OK &&
             __tgt_rtl_data_retrieve(d, bout, b, (int64_t)bsz) == OK &&
             mt_verify(bout, bsz, 9) == (size_t)-1;
    CHECK(ok, "the 100000-byte allocation still works after the failed transfers");
    /* An async info whose queue failed is usable again. */
    memset(bout, 0, bsz);
    ok = __tgt_rtl_data_submit_async(d, b, bin, (int64_t)bsz, &ai) == OK &&
         __tgt_rtl_data_retrieve_async(d, bout, b, (int64_t)bsz, &ai) == OK &&
         __tgt_rtl_synchronize(d, &ai) == OK && mt_verify(bout, bsz, 9) == (size_t)-1;
    CHECK(ok, "the async info works again after its failed synchronize");
    __tgt_rtl_data_delete(d, b);
    free(bin);
    free(bout);
    __tgt_rtl_destroy_event(d, ev);
    CHECK(__tgt_rtl_data_delete(d, p) == OK && __tgt_rtl_data_delete(0, q) == OK,
          "the allocations survive the failed calls");
}

/* data_delete twice: the second one fails, and the allocator is not
 * corrupted (an allocation of the same size afterwards works). */
static void double_free(void)
{
    int d = 0;
    long long pool_max = mt_pool_max();
    /* Sizes nothing else here allocates: the first data_alloc is a fresh
     * one, not taken from the pool. */
    size_t sizes[] = {536, (size_t)pool_max + 8};
    for (int i = 0; i < 2; i++) {
        size_t sz = sizes[i];
        char what[160];
        void *p = __tgt_rtl_data_alloc(d, (int64_t)sz, NULL, TARGET_ALLOC_DEFAULT);
        int first = p && __tgt_rtl_data_delete(d, p) == OK;
        snprintf(what, sizeof what, "data_delete twice of %zu bytes (%s)", sz,
                 i == 0 ? "a size the pool keeps" : "above the pool's max");
        BAD(what, first && __tgt_rtl_data_delete(d, p) == FAIL);
        /* Two live allocations of that size must be distinct and hold
         * their own data. */
        void *x = __tgt_rtl_data_alloc(d, (int64_t)sz, NULL, TARGET_ALLOC_DEFAULT);
        void *y = __tgt_rtl_data_alloc(d, (int64_t)sz, NULL, TARGET_ALLOC_DEFAULT);
        int64_t vx = 111, vy = 222, gx = 0, gy = 0;
        int ok = x && y && x != y && __tgt_rtl_data_submit(d, x, &vx, 8) == OK &&
                 __tgt_rtl_data_submit(d, y, &vy, 8) == OK &&
                 __tgt_rtl_data_retrieve(d, &gx, x, 8) == OK &&
                 __tgt_rtl_data_retrieve(d, &gy, y, 8) == OK && gx == vx && gy == vy;
        CHECK(ok, "after the double free, two new allocations of %zu bytes work (%p, %p)", sz,
              x, y);
        if (x)
            __tgt_rtl_data_delete(d, x);
        if (y)
            __tgt_rtl_data_delete(d, y);
    }
    void *h = __tgt_rtl_data_alloc(d, 64, NULL, TARGET_ALLOC_HOST);
    int first = h && __tgt_rtl_data_delete(d, h) == OK;
    BAD("data_delete twice of HOST memory", first && __tgt_rtl_data_delete(d, h) == FAIL);
}

/* The pool holds at most 16 allocations of the largest size it keeps per
 * device (OMPTARGET_MPI_POOL_MAX; on by default): of 17 of that size
 * freed, the first stays allocated on the device, so a transfer to it
 * works, and the last was deleted there, so a transfer to it fails. */
static void pool_bound(void)
{
    enum { N = 17 };
    int d = 0;
    if (!mt_pool_on()) {
        mt_note("pool off: its bound is not checked here");
        return;
    }
    size_t sz = (size_t)mt_pool_max();
    void *p[N];
    int64_t x = 7;
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= (p[i] = __tgt_rtl_data_alloc(d, (int64_t)sz, NULL, TARGET_ALLOC_DEFAULT)) != NULL;
    for (int i = 0; i < N && ok; i++)
        ok &= __tgt_rtl_data_delete(d, p[i]) == OK;
    CHECK(ok && __tgt_rtl_data_submit(d, p[0], &x, 8) == OK,
          "%d allocations of %zu bytes freed: the first stays in the pool", N, sz);
    BAD("a transfer to the 17th allocation of the pool's largest size freed (the pool "
        "holds at most 16: it was deleted on the device)",
        ok && __tgt_rtl_data_submit(d, p[N - 1], &x, 8) == FAIL);
}

/* Last: a program that requires unified shared memory, in a job where it
 * is off (OMPTARGET_MPI_USM=off, the test's setting), gets no device. */
static void usm(void)
{
    __tgt_rtl_init_requires(OMP_REQ_UNIFIED_SHARED_MEMORY);
    BAD("init_device after init_requires(unified shared memory)",
        __tgt_rtl_init_device(0) == FAIL);
}

int main(int argc, char **argv)
{
    (void)argc;
    mt_start(argv[0], 1);
    double t0 = mt_now();
    bad_ids();
    bad_pointers_and_sizes();
    double_free();
    pool_bound();
    usm();
    mt_note("%d bad calls, each followed by a valid round trip on each of %d devices; "
            "%.2f s", cases, mt.ndev, mt_now() - t0);
    return mt_finish();
}
