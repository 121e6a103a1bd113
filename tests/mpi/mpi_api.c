/*
 * mpi_api.c - every exported entry point of the plugin, driven directly as
 * libomptarget would: images and tables, the kinds of data_alloc, transfers
 * (sync and async), kernels with arguments and offsets, the image's global,
 * device-to-device exchange, events across queues, the allocation pool
 * (on or off, from OMPTARGET_MPI_POOL), and LLVM 16's launch_kernel,
 * query_async, data_lock/unlock and deinit_device (MT_LLVM16=1 also runs
 * the job as libomptarget 16 does: see mpi_common.c).
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "mpi_common.h"

#define OK OFFLOAD_SUCCESS

static void *dalloc(int d, size_t size)
{
    return __tgt_rtl_data_alloc(d, (int64_t)size, NULL, TARGET_ALLOC_DEFAULT);
}

static int64_t get64(int d, void *tgt)
{
    int64_t v = -12345;
    if (__tgt_rtl_data_retrieve(d, &v, tgt, 8) != OK)
        return -12345;
    return v;
}

static int put64(int d, void *tgt, int64_t v)
{
    return __tgt_rtl_data_submit(d, tgt, &v, 8) == OK;
}

/* ---- plain entry points ---- */

static void test_basics(void)
{
    int n = mt.ndev;
    CHECK(__tgt_rtl_number_of_devices() == n,
          "number_of_devices is stable: %d on rank 0", n);
    CHECK(__tgt_rtl_is_valid_binary(&mt.images[0]) == 1,
          "is_valid_binary: the fixture image (%zu bytes) is valid", mt.image_size);
    char junk[256];
    memset(junk, 0x5a, sizeof junk);
    __tgt_device_image bad = {junk, junk + sizeof junk, NULL, NULL};
    CHECK(__tgt_rtl_is_valid_binary(&bad) == 0, "is_valid_binary: 256 junk bytes are not");
    /* A truncated copy of the real image: its headers point past the end. */
    __tgt_device_image cut = mt.images[0];
    cut.ImageEnd = (char *)cut.ImageStart + 100;
    CHECK(__tgt_rtl_is_valid_binary(&cut) == 0, "is_valid_binary: the image cut to 100 bytes is not");
    CHECK(__tgt_rtl_is_valid_binary(NULL) == 0, "is_valid_binary(NULL) is 0");
    CHECK(__tgt_rtl_init_requires(0) == 0, "init_requires(0) returns the flags");
    CHECK(__tgt_rtl_supports_empty_images() == 0, "supports_empty_images is 0");
    __tgt_rtl_set_info_flag(0);
    __tgt_rtl_set_info_flag(0xffffffffu);
    CHECK(1, "set_info_flag(0) and (~0) return");
    fflush(stdout);
    for (int d = 0; d < n; d++)
        __tgt_rtl_print_device_info(d);
    fflush(stdout);
    CHECK(1, "print_device_info for each of the %d devices", n);
    for (int d = 0; d < n; d++)
        CHECK(__tgt_rtl_init_device(d) == OK, "init_device(%d) again succeeds", d);
    int all = 1;
    for (int s = 0; s < n; s++)
        for (int d = 0; d < n; d++)
            all &= __tgt_rtl_is_data_exchangable(s, d) == 1;
    CHECK(all, "is_data_exchangable(s, d) is 1 for every pair of the %d devices", n);
    CHECK(__tgt_rtl_is_data_exchangable(0, n) == 0 && __tgt_rtl_is_data_exchangable(-1, 0) == 0,
          "is_data_exchangable is 0 with a device out of range");
}

/* ---- images and tables ---- */

static void test_tables(void)
{
    static const char *const want[MT_FX_COUNT] = {
        "fx_tick", "fx_add", "fx_global_sum", "fx_sum20", "fx_sum40",
        "fx_getpid", "fx_which", "fx_global"};
    for (int d = 0; d < mt.ndev; d++) {
        __tgt_target_table *t = mt.table[d];
        int names = 1, addrs = 1;
        for (int i = 0; i < MT_FX_COUNT; i++) {
            names &= strcmp(t->EntriesBegin[i].name, want[i]) == 0 &&
                     t->EntriesBegin[i].size == (i == MT_FX_GLOBAL ? 64u : 0u);
            addrs &= t->EntriesBegin[i].addr != NULL &&
                     t->EntriesBegin[i].addr != mt.desc.HostEntriesBegin[i].addr;
        }
        CHECK(names && addrs, "load_binary(%d): table of %d entries, same names and sizes, "
              "device addresses", d, MT_FX_COUNT);
        void *kernel0 = mt.fx[d][MT_FX_ADD], *global0 = mt.fx[d][MT_FX_GLOBAL];
        __tgt_target_table *again = __tgt_rtl_load_binary(d, &mt.images[0]);
        CHECK(again && again->EntriesBegin[MT_FX_ADD].addr == kernel0 &&
              again->EntriesBegin[MT_FX_GLOBAL].addr == global0,
              "load_binary(%d) of the same image again: same addresses", d);
        if (again)
            for (int i = 0; i < MT_FX_COUNT; i++)
                mt.fx[d][i] = again->EntriesBegin[i].addr;
        mt.table[d] = again;
    }
}

/* The second image is a separate copy: its global is its own. */
static void test_second_image(void)
{
    for (int d = 0; d < mt.ndev; d++) {
        __tgt_target_table *t1 = __tgt_rtl_load_binary(d, &mt.images[1]);
        if (!CHECK(t1 && t1->EntriesEnd - t1->EntriesBegin == 3,
                   "load_binary(%d) of image 1 (3 entries)", d))
            continue;
        void *g1 = t1->EntriesBegin[0].addr, *sum1 = t1->EntriesBegin[1].addr;
        void *tick1 = t1->EntriesBegin[2].addr;
        CHECK(g1 != mt.fx[d][MT_FX_GLOBAL] && tick1 != mt.fx[d][MT_FX_TICK],
              "device %d: image 1's fx_global %p and fx_tick %p differ from image 0's", d, g1,
              tick1);
        int zeros[16] = {0}, ones[16], got[16];
        for (int i = 0; i < 16; i++)
            ones[i] = 1000 + i;
        int ok = __tgt_rtl_data_submit(d, g1, zeros, sizeof zeros) == OK &&
                 __tgt_rtl_data_submit(d, mt.fx[d][MT_FX_GLOBAL], ones, sizeof ones) == OK &&
                 __tgt_rtl_run_target_region(d, tick1, NULL, NULL, 0) == OK &&
                 __tgt_rtl_data_retrieve(d, got, g1, sizeof got) == OK;
        CHECK(ok && got[0] == 1 && got[1] == 0 && got[15] == 0,
              "device %d: image 1's fx_tick ticks its own fx_global (got[0] = %d)", d, got[0]);
        void *out = dalloc(d, 8);
        void *args[1] = {out};
        ok = __tgt_rtl_run_target_region(d, sum1, args, NULL, 1) == OK;
        int64_t r = get64(d, out);
        CHECK(ok && r == 1, "device %d: image 1's fx_global_sum sums its own global: %lld", d,
              (long long)r);
        ok = __tgt_rtl_run_target_region(d, mt.fx[d][MT_FX_GLOBAL_SUM], args, NULL, 1) == OK;
        int64_t want = 16 * 1000 + 120;
        r = get64(d, out);
        CHECK(ok && r == want, "device %d: image 0's fx_global_sum sees its global untouched: "
              "%lld", d, (long long)r);
        __tgt_rtl_data_delete(d, out);
    }
}

/* ---- data_alloc kinds ---- */

static void test_alloc_kinds(void)
{
    for (int d = 0; d < mt.ndev; d++) {
        void *a = __tgt_rtl_data_alloc(d, 1000, NULL, TARGET_ALLOC_DEFAULT);
        void *b = __tgt_rtl_data_alloc(d, 1000, NULL, TARGET_ALLOC_DEVICE);
        CHECK(a && b && a != b, "device %d: data_alloc DEFAULT %p and DEVICE %p", d, a, b);
        /* Host memory: the program may use it directly. */
        uint8_t *h = __tgt_rtl_data_alloc(d, 1000, NULL, TARGET_ALLOC_HOST);
        if (CHECK(h != NULL, "device %d: data_alloc HOST returns host memory %p", d,
                  (void *)h)) {
            mt_fill(h, 1000, 7);
            CHECK(mt_verify(h, 1000, 7) == (size_t)-1, "device %d: HOST memory written and "
                  "read directly", d);
            int ok = __tgt_rtl_data_submit(d, a, h, 1000) == OK;
            memset(h, 0, 1000);
            ok = ok && __tgt_rtl_data_retrieve(d, h, a, 1000) == OK;
            CHECK(ok && mt_verify(h, 1000, 7) == (size_t)-1,
                  "device %d: HOST memory as the host side of submit and retrieve", d);
            CHECK(__tgt_rtl_data_delete(d, h) == OK, "device %d: data_delete of HOST memory", d);
        }
        uint8_t *h0 = __tgt_rtl_data_alloc(d, 0, NULL, TARGET_ALLOC_HOST);
        CHECK(h0 && __tgt_rtl_data_delete(d, h0) == OK, "device %d: HOST alloc of 0 bytes", d);
        mt_capture_begin();
        void *s = __tgt_rtl_data_alloc(d, 1000, NULL, TARGET_ALLOC_SHARED);
        const char *msg = mt_capture_end();
        CHECK(s == NULL && strstr(msg, "omptarget-mpi:"),
              "device %d: data_alloc SHARED is NULL, with a message", d);
        void *z = __tgt_rtl_data_alloc(d, 0, NULL, TARGET_ALLOC_DEFAULT);
        CHECK(z != NULL, "device %d: data_alloc of 0 bytes gives a pointer", d);
        CHECK(__tgt_rtl_data_submit(d, z, &d, 0) == OK &&
              __tgt_rtl_data_retrieve(d, &d, z, 0) == OK,
              "device %d: 0-byte submit and retrieve on it", d);
        CHECK(__tgt_rtl_data_delete(d, z) == OK, "device %d: data_delete of it", d);
        CHECK(__tgt_rtl_data_delete(d, a) == OK && __tgt_rtl_data_delete(d, b) == OK,
              "device %d: data_delete DEFAULT and DEVICE", d);
    }
}

/* ---- kernels ---- */

static void test_kernels(void)
{
    int64_t host_pids[MT_MAX_DEV];
    for (int d = 0; d < mt.ndev; d++) {
        void **fx = mt.fx[d];
        void *a = dalloc(d, 8), *b = dalloc(d, 8);
        put64(d, a, 5);
        put64(d, b, 37);
        void *args[2] = {a, b};
        int ok = __tgt_rtl_run_target_region(d, fx[MT_FX_ADD], args, NULL, 2) == OK;
        int64_t r = get64(d, a);
        CHECK(ok && r == 42, "device %d: run_target_region fx_add(a, b): 5 + 37 = %lld", d,
              (long long)r);
        ptrdiff_t zero[2] = {0, 0};
        ok = __tgt_rtl_run_target_team_region(d, fx[MT_FX_ADD], args, zero, 2, 4, 8, 1000) == OK;
        r = get64(d, a);
        CHECK(ok && r == 79, "device %d: run_target_team_region (4 teams, 8 threads, trip "
              "count 1000) fx_add: 42 + 37 = %lld", d, (long long)r);

        /* Offsets: the kernel gets args[i] + offsets[i]. */
        int64_t arr[8] = {0, 10, 20, 30, 40, 50, 60, 70}, got[8];
        void *v = dalloc(d, sizeof arr);
        __tgt_rtl_data_submit(d, v, arr, sizeof arr);
        void *oargs[2] = {v, v};
        ptrdiff_t offs[2] = {3 * 8, 6 * 8};
        ok = __tgt_rtl_run_target_region(d, fx[MT_FX_ADD], oargs, offs, 2) == OK;
        ok = ok && __tgt_rtl_data_retrieve(d, got, v, sizeof got) == OK;
        CHECK(ok && got[3] == 90 && got[6] == 60 && got[2] == 20 && got[4] == 40,
              "device %d: fx_add(v + 24, v + 48) via offsets: v[3] = %lld", d,
              (long long)got[3]);
        /* A negative offset from a pointer past the base. */
        void *nargs[2] = {(char *)v + 64, v};
        ptrdiff_t noffs[2] = {-8, 8};
        ok = __tgt_rtl_run_target_team_region(d, fx[MT_FX_ADD], nargs, noffs, 2, 1, 1, 0) == OK;
        r = get64(d, (char *)v + 56);
        CHECK(ok && r == 80, "device %d: team region with a negative offset: v[7] += v[1] -> "
              "%lld", d, (long long)r);

        /* Scalars by value, 20 and 40 arguments, some with offsets. */
        void *s20[20];
        ptrdiff_t o20[20] = {0};
        int64_t want = 0;
        s20[0] = a;
        for (int i = 1; i < 20; i++) {
            s20[i] = (void *)(intptr_t)(i * 3 - 7);
            o20[i] = i % 4 == 0 ? 100 : 0;
            want += i * (i * 3 - 7 + o20[i]);
        }
        ok = __tgt_rtl_run_target_region(d, fx[MT_FX_SUM20], s20, o20, 20) == OK;
        r = get64(d, a);
        CHECK(ok && r == want, "device %d: fx_sum20 with 19 scalars (some offset): "
              "%lld == %lld", d, (long long)r, (long long)want);
        void *s40[40];
        want = 0;
        s40[0] = b;
        for (int i = 1; i < 40; i++) {
            s40[i] = (void *)(intptr_t)(1000 - i * i);
            want += i * (1000 - i * i);
        }
        ok = __tgt_rtl_run_target_team_region(d, fx[MT_FX_SUM40], s40, NULL, 40, 2, 2, 40) == OK;
        r = get64(d, b);
        CHECK(ok && r == want, "device %d: fx_sum40 team region, 39 scalars, NULL "
              "offsets: %lld == %lld", d, (long long)r, (long long)want);

        /* Async kernels on one queue, in order. */
        __tgt_async_info ai = {0};
        put64(d, a, 1);
        put64(d, b, 2);
        ok = 1;
        for (int i = 0; i < 5; i++)
            ok &= __tgt_rtl_run_target_region_async(d, fx[MT_FX_ADD], args, NULL, 2, &ai) == OK;
        void *rev[2] = {b, a};
        for (int i = 0; i < 3; i++)
            ok &= __tgt_rtl_run_target_team_region_async(d, fx[MT_FX_ADD], rev, NULL, 2, 2, 4,
                                                         10, &ai) == OK;
        int64_t ra = 0, rb = 0;
        ok &= __tgt_rtl_data_retrieve_async(d, &ra, a, 8, &ai) == OK;
        ok &= __tgt_rtl_data_retrieve_async(d, &rb, b, 8, &ai) == OK;
        ok &= __tgt_rtl_synchronize(d, &ai) == OK;
        /* a = 1 + 5*2 = 11; then b += a three times: 2 + 33 = 35. */
        CHECK(ok && ra == 11 && rb == 35 && ai.Queue == NULL,
              "device %d: 5 run_target_region_async + 3 team_region_async + 2 retrieve_async, "
              "synchronize: a = %lld, b = %lld, queue released", d, (long long)ra,
              (long long)rb);

        /* The kernel runs in the worker's process. */
        void *pargs[1] = {a};
        ok = __tgt_rtl_run_target_region(d, fx[MT_FX_GETPID], pargs, NULL, 1) == OK;
        host_pids[d] = get64(d, a);
        CHECK(ok && host_pids[d] > 0 && host_pids[d] != getpid(),
              "device %d: fx_getpid runs in process %lld, not rank 0's %d", d,
              (long long)host_pids[d], (int)getpid());
        CHECK(__tgt_rtl_run_target_region(d, fx[MT_FX_WHICH], NULL, NULL, 0) == OK,
              "device %d: a kernel of 0 arguments with NULL args (fx_which)", d);
        __tgt_rtl_data_delete(d, a);
        __tgt_rtl_data_delete(d, b);
        __tgt_rtl_data_delete(d, v);
    }
    int distinct = 1;
    for (int i = 0; i < mt.ndev; i++)
        for (int j = 0; j < i; j++)
            distinct &= host_pids[i] != host_pids[j];
    CHECK(distinct, "the %d devices are %d different processes", mt.ndev, mt.ndev);
}

/* ---- LLVM 16's entry points ---- */

static __tgt_kernel_arguments kargs(uint32_t nargs, uint32_t teams, uint32_t threads)
{
    __tgt_kernel_arguments k = {.Version = 2, .NumArgs = nargs, .Tripcount = 100};
    k.NumTeams[0] = teams;
    k.ThreadLimit[0] = threads;
    return k;
}

static void test_llvm16(void)
{
    for (int d = 0; d < mt.ndev; d++) {
        void **fx = mt.fx[d];
        void *a = dalloc(d, 8), *b = dalloc(d, 8);
        put64(d, a, 5);
        put64(d, b, 37);
        void *args[2] = {a, b};
        ptrdiff_t zero[2] = {0, 0};
        __tgt_kernel_arguments k = kargs(2, 4, 8);
        __tgt_async_info ai = {0};
        /* As libomptarget 16 runs a synchronous target region. */
        int ok = __tgt_rtl_launch_kernel(d, fx[MT_FX_ADD], args, zero, &k, &ai) == OK &&
                 __tgt_rtl_synchronize(d, &ai) == OK;
        int64_t r = get64(d, a);
        CHECK(ok && r == 42 && ai.Queue == NULL,
              "device %d: launch_kernel fx_add(a, b) (4 teams, 8 threads), synchronize: "
              "5 + 37 = %lld", d, (long long)r);

        /* Offsets: the kernel gets base + offset. */
        int64_t arr[4] = {0, 100, 0, 23};
        void *v = dalloc(d, sizeof arr);
        __tgt_rtl_data_submit(d, v, arr, sizeof arr);
        void *oargs[2] = {v, v};
        ptrdiff_t offs[2] = {8, 24};
        __tgt_kernel_arguments k1 = kargs(2, 0, 0);
        ok = __tgt_rtl_launch_kernel(d, fx[MT_FX_ADD], oargs, offs, &k1, &ai) == OK &&
             __tgt_rtl_synchronize(d, &ai) == OK &&
             __tgt_rtl_data_retrieve(d, arr, v, sizeof arr) == OK;
        CHECK(ok && arr[1] == 123 && arr[3] == 23,
              "device %d: launch_kernel with offsets 8 and 24 (0 teams, 0 threads): %lld",
              d, (long long)arr[1]);

        /* The kernel's arity comes from NumArgs: 20 arguments. */
        void *s20[20];
        s20[0] = a;
        int64_t want = 0;
        for (int i = 1; i < 20; i++) {
            s20[i] = (void *)(intptr_t)(i + 1);
            want += (int64_t)i * (i + 1);
        }
        __tgt_kernel_arguments k20 = kargs(20, 1, 1);
        ok = __tgt_rtl_launch_kernel(d, fx[MT_FX_SUM20], s20, NULL, &k20, &ai) == OK &&
             __tgt_rtl_synchronize(d, &ai) == OK;
        r = get64(d, a);
        CHECK(ok && r == want, "device %d: launch_kernel of fx_sum20 with NumArgs 20: %lld "
              "(want %lld)", d, (long long)r, (long long)want);

        /* query_async until the queue is released, as libomptarget 16 does
         * for nowait regions. */
        put64(d, a, 1);
        put64(d, b, 2);
        ok = 1;
        for (int i = 0; i < 4; i++)
            ok &= __tgt_rtl_launch_kernel(d, fx[MT_FX_ADD], args, NULL, &k, &ai) == OK;
        int64_t ra = 0;
        ok &= __tgt_rtl_data_retrieve_async(d, &ra, a, 8, &ai) == OK;
        long queries = 0;
        while (ok && ai.Queue) {
            ok &= __tgt_rtl_query_async(d, &ai) == OK;
            queries++;
        }
        CHECK(ok && ra == 9 && ai.Queue == NULL,
              "device %d: 4 launch_kernel + retrieve_async, query_async until released "
              "(%ld queries): a = %lld", d, queries, (long long)ra);
        CHECK(__tgt_rtl_query_async(d, &ai) == OK,
              "device %d: query_async of a released queue succeeds", d);
        /* A queue whose operation fails: query_async says so when it
         * releases the queue. */
        mt_capture_begin();
        int queued = __tgt_rtl_data_submit_async(d, (char *)a + (1 << 20), &ra, 8, &ai) == OK;
        int32_t last = OK;
        while (queued && ai.Queue)
            last = __tgt_rtl_query_async(d, &ai);
        const char *qerr = mt_capture_end();
        CHECK(queued && last != OK && ai.Queue == NULL && strstr(qerr, "omptarget-mpi"),
              "device %d: a submit outside every allocation, queued; query_async fails "
              "once it releases the queue, with a message", d);

        /* Bad input fails with a message, nothing is queued. */
        mt_capture_begin();
        int bad = __tgt_rtl_launch_kernel(d, fx[MT_FX_ADD], args, NULL, NULL, &ai) != OK &&
                  __tgt_rtl_query_async(d, NULL) != OK &&
                  __tgt_rtl_query_async(mt.ndev, &ai) != OK &&
                  __tgt_rtl_data_lock(d, a, 8, NULL) != OK &&
                  __tgt_rtl_data_lock(d, NULL, 8, (void **)&v) != OK &&
                  __tgt_rtl_data_unlock(d, NULL) != OK &&
                  __tgt_rtl_deinit_device(-1) != OK;
        const char *err = mt_capture_end();
        CHECK(bad && ai.Queue == NULL && strstr(err, "launch_kernel") &&
                  strstr(err, "query_async") && strstr(err, "data_lock"),
              "device %d: launch_kernel without kernel arguments, query_async, data_lock, "
              "data_unlock and deinit_device with bad arguments fail with a message", d);

        /* data_lock: host memory needs no locking; the locked pointer is the
         * host pointer and transfers through it work. */
        int64_t host = 77, back = 0;
        void *locked = NULL;
        ok = __tgt_rtl_data_lock(d, &host, 8, &locked) == OK && locked == &host &&
             __tgt_rtl_data_submit(d, a, locked, 8) == OK &&
             __tgt_rtl_data_retrieve(d, &back, a, 8) == OK &&
             __tgt_rtl_data_unlock(d, &host) == OK;
        CHECK(ok && back == 77, "device %d: data_lock gives the host pointer, a transfer "
              "through it, data_unlock", d);

        /* deinit_device, then the device is initialised again and serves. */
        ok = __tgt_rtl_deinit_device(d) == OK && __tgt_rtl_init_device(d) == OK &&
             mt_roundtrip(d, 4096, 7);
        CHECK(ok, "device %d: deinit_device, init_device again, a round trip", d);
        __tgt_rtl_data_delete(d, a);
        __tgt_rtl_data_delete(d, b);
        __tgt_rtl_data_delete(d, v);
    }
}

/* ---- the image's global, as a declare-target variable ---- */

static void test_global(void)
{
    for (int d = 0; d < mt.ndev; d++) {
        void *g = mt.fx[d][MT_FX_GLOBAL];
        int vals[16], got[16];
        for (int i = 0; i < 16; i++)
            vals[i] = (d + 1) * 100 + i;
        int ok = __tgt_rtl_data_submit(d, g, vals, sizeof vals) == OK &&
                 __tgt_rtl_data_retrieve(d, got, g, sizeof got) == OK;
        CHECK(ok && memcmp(vals, got, sizeof got) == 0,
              "device %d: data_submit/retrieve of fx_global (64 bytes) at its table address", d);
        for (int i = 0; i < 3; i++)
            ok &= __tgt_rtl_run_target_region(d, mt.fx[d][MT_FX_TICK], NULL, NULL, 0) == OK;
        ok &= __tgt_rtl_data_retrieve(d, got, g, 8) == OK;
        CHECK(ok && got[0] == vals[0] + 3 && got[1] == vals[1],
              "device %d: fx_tick x3 updates the global the host reads: %d", d, got[0]);
        int part[2] = {-1, -2};
        ok = __tgt_rtl_data_submit(d, (char *)g + 15 * sizeof(int) - 4, part, 8) == OK;
        void *out = dalloc(d, 8);
        void *args[1] = {out};
        ok = ok && __tgt_rtl_run_target_region(d, mt.fx[d][MT_FX_GLOBAL_SUM], args, NULL, 1) ==
                       OK;
        int64_t want = 0;
        for (int i = 0; i < 16; i++)
            want += i == 0 ? vals[0] + 3 : i == 14 ? -1 : i == 15 ? -2 : vals[i];
        int64_t r = get64(d, out);
        CHECK(ok && r == want,
              "device %d: partial submit to the global's last 8 bytes, fx_global_sum = %lld", d,
              (long long)r);
        __tgt_rtl_data_delete(d, out);
    }
    if (mt.ndev >= 2) {
        int g0[16], g1[16];
        __tgt_rtl_data_retrieve(0, g0, mt.fx[0][MT_FX_GLOBAL], 64);
        __tgt_rtl_data_retrieve(1, g1, mt.fx[1][MT_FX_GLOBAL], 64);
        CHECK(g0[5] == 105 && g1[5] == 205, "each device has its own fx_global (%d, %d)",
              g0[5], g1[5]);
    }
}

/* ---- async transfers ---- */

static void test_async(void)
{
    enum { N = 8, SZ = 100000 };
    for (int d = 0; d < mt.ndev; d++) {
        __tgt_async_info ai = {0};
        CHECK(__tgt_rtl_synchronize(d, &ai) == OK, "device %d: synchronize of an unused "
              "async info", d);
        void *t[N];
        uint8_t *in = malloc((size_t)N * SZ), *out = calloc(N, SZ);
        int ok = 1;
        for (int i = 0; i < N; i++) {
            t[i] = dalloc(d, SZ);
            mt_fill(in + (size_t)i * SZ, SZ, 100 + i);
            ok &= __tgt_rtl_data_submit_async(d, t[i], in + (size_t)i * SZ, SZ, &ai) == OK;
        }
        CHECK(ok && ai.Queue != NULL, "device %d: %d data_submit_async of %d bytes queued", d,
              N, SZ);
        for (int i = 0; i < N; i++)
            ok &= __tgt_rtl_data_retrieve_async(d, out + (size_t)i * SZ, t[N - 1 - i], SZ, &ai) ==
                  OK;
        ok &= __tgt_rtl_synchronize(d, &ai) == OK;
        int data = 1;
        for (int i = 0; i < N; i++)
            data &= mt_verify(out + (size_t)i * SZ, SZ, 100 + N - 1 - i) == (size_t)-1;
        CHECK(ok && data && ai.Queue == NULL,
              "device %d: %d data_retrieve_async (reversed) then synchronize: data checked", d,
              N);
        for (int i = 0; i < N; i++)
            __tgt_rtl_data_delete(d, t[i]);
        free(in);
        free(out);
    }
}

/* ---- device to device ---- */

static void test_exchange(void)
{
    enum { SZ = 3 << 20 };
    int n = mt.ndev, dst = n >= 2 ? 1 : 0;
    uint8_t *in = malloc(SZ), *out = malloc(SZ);
    void *s = dalloc(0, SZ), *t = dalloc(dst, SZ), *t2 = dalloc(dst, SZ);
    mt_fill(in, SZ, 31);
    __tgt_rtl_data_submit(0, s, in, SZ);
    memset(out, 0, SZ);
    int ok = __tgt_rtl_data_exchange(0, s, dst, t, SZ) == OK &&
             __tgt_rtl_data_retrieve(dst, out, t, SZ) == OK;
    CHECK(ok && mt_verify(out, SZ, 31) == (size_t)-1,
          "data_exchange device 0 -> device %d, %d bytes: data checked", dst, SZ);
    /* Async: a chain 0 -> dst -> (dst's second buffer), then back to 0. */
    __tgt_async_info ai = {0};
    mt_fill(in, SZ, 32);
    memset(out, 0, SZ);
    ok = __tgt_rtl_data_submit_async(0, s, in, SZ, &ai) == OK &&
         __tgt_rtl_data_exchange_async(0, s, dst, t, SZ, &ai) == OK &&
         __tgt_rtl_data_exchange_async(dst, t, dst, t2, SZ, &ai) == OK &&
         __tgt_rtl_data_retrieve_async(dst, out, t2, SZ, &ai) == OK &&
         __tgt_rtl_synchronize(0, &ai) == OK;
    CHECK(ok && mt_verify(out, SZ, 32) == (size_t)-1,
          "data_exchange_async 0 -> %d, then %d -> %d (same device), retrieve: data checked",
          dst, dst, dst);
    /* Parts of allocations: 1000 bytes from the middle of s to the end of t. */
    ok = __tgt_rtl_data_exchange(0, (char *)s + 5000, dst, (char *)t + SZ - 1000, 1000) == OK &&
         __tgt_rtl_data_retrieve(dst, out, (char *)t + SZ - 1000, 1000) == OK;
    int part = ok;
    for (int i = 0; i < 1000 && part; i++)
        part = out[i] == in[5000 + i];
    CHECK(part, "data_exchange of 1000 bytes between interior pointers");
    CHECK(__tgt_rtl_data_exchange(0, s, dst, t, 0) == OK, "data_exchange of 0 bytes");
    if (n >= 3) {
        mt_fill(in, SZ, 33);
        __tgt_rtl_data_submit(0, s, in, SZ);
        void *u = dalloc(2, SZ);
        __tgt_async_info a2 = {0};
        memset(out, 0, SZ);
        ok = __tgt_rtl_data_exchange_async(0, s, 2, u, SZ, &a2) == OK &&
             __tgt_rtl_data_exchange_async(2, u, 1, t, SZ, &a2) == OK &&
             __tgt_rtl_data_retrieve_async(1, out, t, SZ, &a2) == OK &&
             __tgt_rtl_synchronize(1, &a2) == OK;
        CHECK(ok && mt_verify(out, SZ, 33) == (size_t)-1,
              "data_exchange_async 0 -> 2 -> 1: data checked");
        __tgt_rtl_data_delete(2, u);
    }
    __tgt_rtl_data_delete(0, s);
    __tgt_rtl_data_delete(dst, t);
    __tgt_rtl_data_delete(dst, t2);
    free(in);
    free(out);
}

/* ---- events across queues ----
 * As libomptarget uses them: the queue an event is recorded on belongs to
 * another host thread, which synchronises it; this thread makes its own
 * queue wait for the event. */

typedef struct recorder {
    int dev;
    void *tgt, *host, *ev;
    size_t size;
    __tgt_async_info *ai;
    sem_t recorded;
    int ok;
} recorder;

/* Owner of queue A: submit, record, let the other thread go on, then (a
 * little later, so that the other queue's wait is really queued first)
 * synchronise A. */
static void *record_thread(void *arg)
{
    recorder *r = arg;
    r->ok = __tgt_rtl_data_submit_async(r->dev, r->tgt, r->host, (int64_t)r->size, r->ai) ==
                OK &&
            __tgt_rtl_record_event(r->dev, r->ev, r->ai) == OK;
    sem_post(&r->recorded);
    usleep(20000);
    r->ok &= __tgt_rtl_synchronize(r->dev, r->ai) == OK && r->ai->Queue == NULL;
    return NULL;
}

static void start_recorder(recorder *r, pthread_t *th)
{
    sem_init(&r->recorded, 0, 0);
    pthread_create(th, NULL, record_thread, r);
    sem_wait(&r->recorded);
}

static int join_recorder(recorder *r, pthread_t th)
{
    pthread_join(th, NULL);
    sem_destroy(&r->recorded);
    return r->ok;
}

static void test_events(void)
{
    enum { SZ = 16 << 20 };
    int n = mt.ndev, d1 = n >= 2 ? 1 : 0;
    uint8_t *in = malloc(SZ), *out = malloc(SZ), *old = malloc(SZ);
    void *buf = dalloc(0, SZ), *buf1 = dalloc(d1, SZ);
    mt_fill(old, SZ, 40);
    mt_fill(in, SZ, 41);
    __tgt_rtl_data_submit(0, buf, old, SZ);
    pthread_t th;

    void *ev = NULL;
    CHECK(__tgt_rtl_create_event(0, &ev) == OK && ev, "create_event");
    /* An event recorded on an empty queue is complete at once. */
    __tgt_async_info qa = {0}, qb = {0}, qc = {0};
    CHECK(__tgt_rtl_record_event(0, ev, &qa) == OK && __tgt_rtl_sync_event(0, ev) == OK &&
              __tgt_rtl_wait_event(0, ev, &qb) == OK && __tgt_rtl_synchronize(0, &qb) == OK,
          "record_event on an empty queue; sync_event, wait_event and synchronize return");
    __tgt_rtl_synchronize(0, &qa);

    /* Thread 2: submit 16 MiB on queue A, record. This thread: queue B
     * waits for the event, then retrieves. */
    recorder r = {.dev = 0, .tgt = buf, .host = in, .ev = ev, .size = SZ, .ai = &qa};
    memset(out, 0, SZ);
    start_recorder(&r, &th);
    int ok = __tgt_rtl_wait_event(0, ev, &qb) == OK &&
             __tgt_rtl_data_retrieve_async(0, out, buf, SZ, &qb) == OK &&
             __tgt_rtl_synchronize(0, &qb) == OK;
    ok &= join_recorder(&r, th);
    size_t bad = mt_verify(out, SZ, 41);
    CHECK(ok && bad == (size_t)-1,
          "submit on queue A + record_event (thread 2, which synchronises A); wait_event on B, "
          "retrieve on B, synchronize B: B saw A's data (first bad byte %zd)", (ssize_t)bad);
    CHECK(__tgt_rtl_sync_event(0, ev) == OK, "sync_event on the event after its queue ended");

    /* Across devices, and sync_event from the waiting thread while A is
     * still in flight: A submits to device 0; B waits, then exchanges to
     * device d1 and retrieves from there. */
    mt_fill(in, SZ, 42);
    memset(out, 0, SZ);
    void *ev2 = NULL;
    ok = __tgt_rtl_create_event(d1, &ev2) == OK;
    recorder r2 = {.dev = 0, .tgt = buf, .host = in, .ev = ev2, .size = SZ, .ai = &qa};
    start_recorder(&r2, &th);
    ok = ok && __tgt_rtl_sync_event(0, ev2) == OK;
    /* The submit is complete now: a synchronous retrieve sees it. */
    uint8_t probe[4096];
    ok = ok && __tgt_rtl_data_retrieve(0, probe, (char *)buf + SZ - sizeof probe,
                                       sizeof probe) == OK;
    int probe_ok = memcmp(probe, in + SZ - sizeof probe, sizeof probe) == 0;
    ok = ok && __tgt_rtl_wait_event(d1, ev2, &qb) == OK &&
         __tgt_rtl_data_exchange_async(0, buf, d1, buf1, SZ, &qb) == OK &&
         __tgt_rtl_data_retrieve_async(d1, out, buf1, SZ, &qb) == OK &&
         __tgt_rtl_synchronize(d1, &qb) == OK;
    ok &= join_recorder(&r2, th);
    CHECK(ok && probe_ok && mt_verify(out, SZ, 42) == (size_t)-1,
          "sync_event while A is in flight completes the submit; B waits, exchanges 0 -> %d "
          "and retrieves: data checked", d1);

    /* Re-record the first event on a new submit; queue C waits on two
     * events (one old, one new). */
    mt_fill(in, SZ, 43);
    memset(out, 0, SZ);
    recorder r3 = {.dev = 0, .tgt = buf, .host = in, .ev = ev, .size = SZ, .ai = &qa};
    start_recorder(&r3, &th);
    ok = __tgt_rtl_wait_event(0, ev2, &qc) == OK && __tgt_rtl_wait_event(0, ev, &qc) == OK &&
         __tgt_rtl_data_retrieve_async(0, out, buf, SZ, &qc) == OK &&
         __tgt_rtl_synchronize(0, &qc) == OK;
    ok &= join_recorder(&r3, th);
    CHECK(ok && mt_verify(out, SZ, 43) == (size_t)-1,
          "event re-recorded on a later submit; queue C waits on two events: data checked");
    CHECK(__tgt_rtl_destroy_event(0, ev) == OK && __tgt_rtl_destroy_event(d1, ev2) == OK,
          "destroy_event of both events");

    /* Destroying an event whose queue is still busy. */
    void *ev3 = NULL;
    mt_fill(in, SZ, 44);
    ok = __tgt_rtl_create_event(0, &ev3) == OK &&
         __tgt_rtl_data_submit_async(0, buf, in, SZ, &qa) == OK &&
         __tgt_rtl_record_event(0, ev3, &qa) == OK && __tgt_rtl_destroy_event(0, ev3) == OK;
    memset(out, 0, SZ);
    ok = ok && __tgt_rtl_data_retrieve_async(0, out, buf, SZ, &qa) == OK &&
         __tgt_rtl_synchronize(0, &qa) == OK;
    CHECK(ok && mt_verify(out, SZ, 44) == (size_t)-1,
          "destroy_event while its queue is busy; the queue still completes");
    __tgt_rtl_data_delete(0, buf);
    __tgt_rtl_data_delete(d1, buf1);
    free(in);
    free(out);
    free(old);
}

/* ---- the pool ---- */

static void test_pool(void)
{
    int pool = mt_pool_on();
    long long pool_max = mt_pool_max();
    mt_note("pool %s, pool max %lld", pool ? "on" : "off", pool_max);
    for (int d = 0; d < mt.ndev; d++) {
        /* Sizes no other test allocates, so the pool holds none of them. */
        size_t sizes[] = {72, 4104, 100008, (size_t)pool_max, (size_t)pool_max + 1};
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            size_t sz = sizes[k];
            int pooled = pool && sz <= (size_t)pool_max;
            uint32_t seed = 51 + (uint32_t)k;
            uint8_t *in = malloc(sz), *out = calloc(1, sz);
            mt_fill(in, sz, seed);
            void *p1 = dalloc(d, sz);
            int ok = p1 && __tgt_rtl_data_submit(d, p1, in, (int64_t)sz) == OK &&
                     __tgt_rtl_data_delete(d, p1) == OK;
            /* The pool keeps a freed allocation on the device: the device
             * still knows the address (a program must not use it, but a
             * transfer to it shows where it went). */
            if (pooled)
                CHECK(ok && __tgt_rtl_data_submit(d, p1, in, 8) == OK,
                      "device %d, pool on: freed %zu bytes at %p stay allocated on the device "
                      "(kept by the pool)", d, sz, p1);
            void *p2 = dalloc(d, sz);
            void *other = dalloc(d, sz);
            ok = ok && p2 && other && p2 != other;
            if (pooled)
                CHECK(ok && p2 == p1, "device %d, pool on: alloc/free/alloc of %zu bytes "
                      "reuses %p (got %p)", d, sz, p1, p2);
            else
                CHECK(ok, "device %d, pool %s: alloc/free/alloc of %zu bytes (%p then %p)", d,
                      pool ? "on, size above the pool's max" : "off", sz, p1, p2);
            mt_fill(in, sz, seed + 100);
            int data = ok && __tgt_rtl_data_submit(d, p2, in, (int64_t)sz) == OK &&
                       __tgt_rtl_data_submit(d, other, in, (int64_t)sz) == OK &&
                       __tgt_rtl_data_retrieve(d, out, p2, (int64_t)sz) == OK &&
                       mt_verify(out, sz, seed + 100) == (size_t)-1;
            CHECK(data, "device %d: data through the reallocated %zu bytes", d, sz);
            ok = __tgt_rtl_data_delete(d, p2) == OK;
            if (pooled)
                CHECK(ok && __tgt_rtl_data_submit(d, p2, in, 8) == OK,
                      "device %d, pool on: the allocation taken from the pool and freed again "
                      "stays allocated on the device (kept by the pool again)", d);
            /* Freed a second time, the same allocation is kept again. */
            void *p3 = dalloc(d, sz);
            ok = ok && p3;
            if (pooled)
                CHECK(ok && p3 == p1, "device %d, pool on: an allocation taken from the pool "
                      "is pooled again when freed: %p (got %p)", d, p1, p3);
            mt_fill(in, sz, seed + 200);
            memset(out, 0, sz);
            data = ok && __tgt_rtl_data_submit(d, p3, in, (int64_t)sz) == OK &&
                   __tgt_rtl_data_retrieve(d, out, p3, (int64_t)sz) == OK &&
                   mt_verify(out, sz, seed + 200) == (size_t)-1;
            CHECK(data, "device %d: data through the third allocation of %zu bytes", d, sz);
            CHECK(__tgt_rtl_data_delete(d, p3) == OK && __tgt_rtl_data_delete(d, other) == OK,
                  "device %d: data_delete of both", d);
            free(in);
            free(out);
        }
        /* Many allocations of mixed sizes, freed and taken again. */
        enum { M = 300 };
        void *p[M];
        int ok = 1;
        for (int i = 0; i < M; i++)
            ok &= (p[i] = dalloc(d, (size_t)(8 + i % 7 * 8))) != NULL;
        for (int i = 0; i < M; i += 2)
            ok &= __tgt_rtl_data_delete(d, p[i]) == OK;
        for (int i = 0; i < M; i += 2)
            ok &= (p[i] = dalloc(d, (size_t)(8 + i % 7 * 8))) != NULL;
        for (int i = 0; i < M; i++)
            ok &= put64(d, p[i], i * 11);
        int vals = 1;
        for (int i = 0; i < M; i++)
            vals &= get64(d, p[i]) == i * 11;
        for (int i = 0; i < M; i++)
            ok &= __tgt_rtl_data_delete(d, p[i]) == OK;
        CHECK(ok && vals, "device %d: %d allocations, half freed and taken again, each holds "
              "its own value", d, M);
    }
}

int main(int argc, char **argv)
{
    (void)argc;
    mt_start(argv[0], 1);
    double t0 = mt_now();
    test_basics();
    test_tables();
    test_second_image();
    test_alloc_kinds();
    test_kernels();
    test_llvm16();
    test_global();
    test_async();
    test_exchange();
    test_events();
    test_pool();
    for (int d = 0; d < mt.ndev; d++)
        CHECK(mt_roundtrip(d, 12345, 99), "device %d still answers at the end", d);
    mt_note("tests took %.2f s", mt_now() - t0);
    return mt_finish();
}
