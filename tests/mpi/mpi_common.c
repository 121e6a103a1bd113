/*
 * mpi_common.c - see mpi_common.h.
 */
#include "mpi_common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef MT_FIXTURE_PATH
#error "MT_FIXTURE_PATH must name the fixture device image"
#endif

mt_env mt;

static int checks, failures;
static const char *prog = "mpi test";

static const char *const names[MT_FX_COUNT] = {
    "fx_tick", "fx_add", "fx_global_sum", "fx_sum20", "fx_sum40",
    "fx_getpid", "fx_which", "fx_global",
};
static __tgt_offload_entry entries0[MT_FX_COUNT];
/* The second image: the same bytes, a subset of the entries. */
static __tgt_offload_entry entries1[3];

static void *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = n > 0 ? malloc((size_t)n) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = buf ? (size_t)n : 0;
    return buf;
}

/* MT_LLVM16=1: the job runs as libomptarget 16 runs it. The descriptor's
 * images are wrapped as clang 16 wraps them (an LLVM offload binary,
 * version 1: 32-byte header, one 40-byte entry, the image), and the plugin
 * is given copies of the image records that point at the ELF inside;
 * init_plugin comes first, deinit_plugin before unregister_lib. */
static int llvm16;
static __tgt_device_image wrapped[2];

static char *offload_binary(const char *elf, size_t size, size_t *out_size)
{
    enum { HEADER = 32, ENTRY = 40, IMAGE = HEADER + ENTRY };
    char *b = calloc(1, IMAGE + size);
    if (!b)
        exit(2);
    uint32_t version = 1;
    uint64_t total = IMAGE + size, eoff = HEADER, esize = ENTRY, soff = IMAGE, nstr = 0,
             ioff = IMAGE, isize = size;
    uint16_t image_kind = 1, offload_kind = 1; /* an object, for OpenMP */
    memcpy(b, "\x10\xff\x10\xad", 4);
    memcpy(b + 4, &version, 4);
    memcpy(b + 8, &total, 8);
    memcpy(b + 16, &eoff, 8);
    memcpy(b + 24, &esize, 8);
    memcpy(b + HEADER, &image_kind, 2);
    memcpy(b + HEADER + 2, &offload_kind, 2);
    memcpy(b + HEADER + 8, &soff, 8);
    memcpy(b + HEADER + 16, &nstr, 8);
    memcpy(b + HEADER + 24, &ioff, 8);
    memcpy(b + HEADER + 32, &isize, 8);
    memcpy(b + IMAGE, elf, size);
    *out_size = total;
    return b;
}

static void wrap_images(void)
{
    for (int i = 0; i < 2; i++) {
        size_t size = 0, elf_size = mt.image_size;
        char *b = offload_binary(mt.images[i].ImageStart, elf_size, &size);
        free(mt.images[i].ImageStart);
        wrapped[i] = mt.images[i];
        wrapped[i].ImageStart = b;
        wrapped[i].ImageEnd = b + size;
        mt.images[i].ImageStart = b + size - elf_size;
        mt.images[i].ImageEnd = b + size;
    }
    mt.desc.DeviceImages = wrapped;
}

static void make_desc(void)
{
    size_t size = 0;
    char *bytes = read_file(MT_FIXTURE_PATH, &size);
    if (!bytes) {
        fprintf(stderr, "%s: cannot read the fixture image %s\n", prog, MT_FIXTURE_PATH);
        exit(2);
    }
    /* Host-side addresses only identify entries; libomptarget would put the
     * host's functions and variables here. */
    static char host_ids[MT_FX_COUNT];
    for (int i = 0; i < MT_FX_COUNT; i++)
        entries0[i] = (__tgt_offload_entry){.addr = &host_ids[i], .name = (char *)names[i],
                                            .size = i == MT_FX_GLOBAL ? 16 * sizeof(int) : 0};
    entries1[0] = entries0[MT_FX_GLOBAL];
    entries1[1] = entries0[MT_FX_GLOBAL_SUM];
    entries1[2] = entries0[MT_FX_TICK];
    /* Each image gets its own copy of the bytes, as two images of a
     * program would. */
    char *copy = malloc(size);
    if (!copy)
        exit(2);
    memcpy(copy, bytes, size);
    mt.images[0] = (__tgt_device_image){bytes, bytes + size, entries0, entries0 + MT_FX_COUNT};
    mt.images[1] = (__tgt_device_image){copy, copy + size, entries1, entries1 + 3};
    mt.desc = (__tgt_bin_desc){2, mt.images, entries0, entries0 + MT_FX_COUNT};
    mt.image_size = size;
    const char *v = getenv("MT_LLVM16");
    llvm16 = v && strcmp(v, "1") == 0;
    if (llvm16)
        wrap_images();
}

void mt_start(const char *name, int load)
{
    prog = name;
    setvbuf(stdout, NULL, _IOLBF, 0);
    make_desc();
    if (llvm16 && __tgt_rtl_init_plugin() != OFFLOAD_SUCCESS) {
        printf("not ok - init_plugin\n");
        exit(1);
    }
    int32_t n = __tgt_rtl_number_of_devices();
    mt.register_rc = __tgt_rtl_register_lib(&mt.desc);
    /* Only rank 0 gets here: a worker serves inside register_lib. */
    mt.ndev = n;
    printf("# %s: rank 0 (pid %d) with %d device(s)%s\n", prog, (int)getpid(), n,
           llvm16 ? ", as libomptarget 16 (wrapped images)" : "");
    if (n < 1 || n > MT_MAX_DEV) {
        printf("not ok - %s needs 1..%d devices, has %d\n", prog, MT_MAX_DEV, n);
        exit(1);
    }
    for (int d = 0; d < n; d++) {
        if (__tgt_rtl_init_device(d) != OFFLOAD_SUCCESS) {
            printf("not ok - init_device(%d)\n", d);
            exit(1);
        }
        if (!load)
            continue;
        __tgt_target_table *t = __tgt_rtl_load_binary(d, &mt.images[0]);
        if (!t || t->EntriesEnd - t->EntriesBegin != MT_FX_COUNT) {
            printf("not ok - load_binary(%d) of the fixture image\n", d);
            exit(1);
        }
        mt.table[d] = t;
        for (int i = 0; i < MT_FX_COUNT; i++)
            mt.fx[d][i] = t->EntriesBegin[i].addr;
    }
}

int mt_finish(void)
{
    if (llvm16) {
        CHECK(__tgt_rtl_deinit_plugin() == OFFLOAD_SUCCESS,
              "deinit_plugin: exit protocol and MPI_Finalize");
        /* libomptarget 16 may still release its devices afterwards. */
        int ok = 1;
        for (int d = 0; d < mt.ndev; d++)
            ok &= __tgt_rtl_deinit_device(d) == OFFLOAD_SUCCESS;
        CHECK(ok, "deinit_device of each device after deinit_plugin succeeds");
    }
    int32_t rc = __tgt_rtl_unregister_lib(&mt.desc);
    CHECK(rc == OFFLOAD_SUCCESS, "unregister_lib: exit protocol and MPI_Finalize");
    printf("# %s: %d checks, %d failed\n", prog, checks, failures);
    if (failures == 0)
        printf("# %s: PASS\n", prog);
    fflush(NULL);
    return failures ? 1 : 0;
}

static int vcheck(int cond, int quiet, const char *file, int line, const char *fmt,
                  va_list ap)
{
    checks++;
    if (cond && quiet)
        return cond;
    if (!cond)
        failures++;
    printf("%s %d - ", cond ? "ok" : "not ok", checks);
    vprintf(fmt, ap);
    if (!cond)
        printf("  [%s:%d]", file, line);
    putchar('\n');
    return cond;
}

int mt_check(int cond, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vcheck(cond, 0, file, line, fmt, ap);
    va_end(ap);
    return cond;
}

int mt_check_quiet(int cond, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vcheck(cond, 1, file, line, fmt, ap);
    va_end(ap);
    return cond;
}

void mt_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("# ", stdout);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

int mt_failures(void)
{
    return failures;
}

/* ---- data ---- */

static inline uint8_t pattern(size_t i, uint32_t seed)
{
    /* Changes with every byte and with the position of every 256-byte
     * block, so shifted or repeated fragments show up. */
    uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull;
    return (uint8_t)((x >> 56) ^ (i >> 8) ^ (i >> 20));
}

void mt_fill(void *buf, size_t size, uint32_t seed)
{
    uint8_t *b = buf;
    for (size_t i = 0; i < size; i++)
        b[i] = pattern(i, seed);
}

size_t mt_verify(const void *buf, size_t size, uint32_t seed)
{
    const uint8_t *b = buf;
    for (size_t i = 0; i < size; i++)
        if (b[i] != pattern(i, seed))
            return i;
    return (size_t)-1;
}

double mt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- stderr capture ---- */

static int saved_fd = -1;
static FILE *cap;

void mt_capture_begin(void)
{
    fflush(stderr);
    cap = tmpfile();
    saved_fd = dup(2);
    if (cap && saved_fd >= 0)
        dup2(fileno(cap), 2);
}

const char *mt_capture_end(void)
{
    static char text[4096];
    text[0] = 0;
    fflush(stderr);
    if (saved_fd >= 0) {
        dup2(saved_fd, 2);
        close(saved_fd);
        saved_fd = -1;
    }
    if (cap) {
        rewind(cap);
        size_t n = fread(text, 1, sizeof text - 1, cap);
        text[n] = 0;
        fclose(cap);
        cap = NULL;
    }
    fputs(text, stderr);
    return text;
}

int mt_roundtrip(int d, size_t size, uint32_t seed)
{
    uint8_t *in = malloc(size), *out = malloc(size);
    void *tgt = __tgt_rtl_data_alloc(d, (int64_t)size, NULL, TARGET_ALLOC_DEFAULT);
    int ok = in && out && tgt;
    if (ok) {
        mt_fill(in, size, seed);
        memset(out, 0, size);
        ok = __tgt_rtl_data_submit(d, tgt, in, (int64_t)size) == OFFLOAD_SUCCESS &&
             __tgt_rtl_data_retrieve(d, out, tgt, (int64_t)size) == OFFLOAD_SUCCESS &&
             mt_verify(out, size, seed) == (size_t)-1;
    }
    if (tgt && __tgt_rtl_data_delete(d, tgt) != OFFLOAD_SUCCESS)
        ok = 0;
    free(in);
    free(out);
    return ok;
}

long long mt_env_size(const char *name, long long def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long long n = strtoll(v, &end, 10);
    switch (*end) {
    case 'K': case 'k': n <<= 10; break;
    case 'M': case 'm': n <<= 20; break;
    case 'G': case 'g': n <<= 30; break;
    default: break;
    }
    return n;
}

int mt_pool_on(void)
{
    const char *v = getenv("OMPTARGET_MPI_POOL");
    return !(v && (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "false") ||
                   !strcmp(v, "no")));
}

long long mt_pool_max(void)
{
    return mt_env_size("OMPTARGET_MPI_POOL_MAX", 16 << 20);
}

/* ---- watchdog ---- */

/* Written by the program's threads, read by the watchdog: atomics. */
static _Atomic(const char *) wd_phase = "start";
static atomic_uint wd_count;
static int wd_limit;

static void *watchdog(void *arg)
{
    (void)arg;
    for (;;) {
        unsigned seen = wd_count;
        const char *what = wd_phase;
        for (int s = 0; s < wd_limit * 10 && seen == wd_count; s++)
            usleep(100000);
        if (seen == wd_count) {
            const char *t = getenv("OMPTARGET_MPI_TIMEOUT");
            printf("not ok - HANG: \"%s\" did not return within %d s "
                   "(OMPTARGET_MPI_TIMEOUT=%s)\n", what, wd_limit, t ? t : "default 60s");
            printf("# %s: %d checks before the hang, %d failed\n", prog, checks, failures);
            fflush(NULL);
            _exit(1);
        }
    }
    return NULL;
}

int mt_time_scale(void)
{
    long long s = mt_env_size("MT_TIME_SCALE", 1);
    return s >= 1 && s <= 1000 ? (int)s : 1;
}

void mt_watchdog_start(int seconds)
{
    pthread_t th;
    wd_limit = seconds * mt_time_scale();
    if (pthread_create(&th, NULL, watchdog, NULL) == 0)
        pthread_detach(th);
}

void mt_phase(const char *what)
{
    static char copies[4][512];
    static unsigned next;
    char *c = copies[next++ % 4];
    snprintf(c, sizeof copies[0], "%s", what);
    wd_phase = c;
    wd_count++;
}
