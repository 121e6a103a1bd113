/*
 * accel_plugin.c - libomptarget.rtl.otmaccel.so, a libomptarget plugin
 * (the classic C ABI of LLVM 14 to 16) that behaves like an accelerator,
 * for the tests of the devices a worker rank proxies (otm/proxy.h,
 * src/plugin/units.c). It runs x86_64 images in this process, as the host
 * plugin does, but:
 *
 *  - its memory is not the caller's: each device owns an arena (a memfd
 *    mapped PROT_NONE, named "otmaccel-arena-D" in /proc/self/maps) that is
 *    readable and writable only while this plugin copies into or out of it
 *    and while a kernel of that device runs. Code of the caller that takes a
 *    device address for its own memory faults at once;
 *  - a declare-target global lives in the arena too: load_binary gives the
 *    arena copy's address, and the copy the image's code uses is refreshed
 *    from it when the device's first running kernel starts and written back
 *    when its last one ends (a GPU's globals are device memory as well);
 *  - it has OTM_ACCEL_DEVICES devices (default 3, 0..16), each with an
 *    arena of OTM_ACCEL_MEMORY MiB (default 64, 1..4096);
 *  - it takes x86_64 shared objects as its images, or none with
 *    OTM_ACCEL_IMAGES=none (a GPU's plugin given a program built only for
 *    the host);
 *  - the _async entry points only record an operation in the queue of the
 *    __tgt_async_info; synchronize performs them in order (a GPU stream
 *    completes later than asked);
 *  - OTM_ACCEL_FAIL="what:n[,what:n...]" fails the nth call of `what` of
 *    this process (all devices together, a sync call and its _async twin
 *    counted as one kind, the count taken when the call is made):
 *    init_device, load_binary, data_alloc, data_submit, data_retrieve,
 *    data_delete, data_exchange, run (any run entry point) and synchronize
 *    return the failure value, doing nothing; trap:n makes the nth kernel
 *    that starts (from a run call, or from synchronize for an _async one)
 *    fail without running, as a GPU kernel that traps;
 *  - OTM_ACCEL_RENDEZVOUS=k[:s] makes each kernel wait, s seconds at most
 *    (default 60), until k kernels of this process run at once (any
 *    devices), then run: a test proves regions overlap without timing;
 *    past s the kernel fails.
 *
 * Every failure writes one line on stderr, "otmaccel: device D: OP: why".
 * A bad value of a variable is a line on stderr and 0 devices, never a
 * crash. The configuration is read at init_plugin (libomptarget 16), or at
 * the first call (14 calls no init_plugin); deinit_plugin drops it, so the
 * next init_plugin reads the environment again with the counts at 0.
 *
 * The ABI's types are transcribed from LLVM 14's omptarget.h here, not
 * taken from the project's otm/tgt.h: the test checks the project against
 * LLVM's layout, not against itself. Only the __tgt_rtl_* functions are
 * exported (accel_plugin.map).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <ffi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define OFFLOAD_SUCCESS 0
#define OFFLOAD_FAIL (~0)

/* ---- the ABI (LLVM 14 omptarget.h) --------------------------------------- */

typedef struct accel_entry {           /* __tgt_offload_entry */
    void *addr;
    char *name;
    size_t size;
    int32_t flags;
    int32_t reserved;
} accel_entry;

typedef struct accel_image {           /* __tgt_device_image */
    void *start, *end;
    accel_entry *entries_begin, *entries_end;
} accel_image;

typedef struct accel_table {           /* __tgt_target_table */
    accel_entry *begin, *end;
} accel_table;

typedef struct accel_async {           /* __tgt_async_info */
    void *queue;
} accel_async;

#define EXPORT __attribute__((visibility("default")))

EXPORT int32_t __tgt_rtl_init_plugin(void);
EXPORT int32_t __tgt_rtl_deinit_plugin(void);
EXPORT int32_t __tgt_rtl_is_valid_binary(accel_image *image);
EXPORT int32_t __tgt_rtl_number_of_devices(void);
EXPORT int64_t __tgt_rtl_init_requires(int64_t flags);
EXPORT int32_t __tgt_rtl_init_device(int32_t id);
EXPORT accel_table *__tgt_rtl_load_binary(int32_t id, accel_image *image);
EXPORT void *__tgt_rtl_data_alloc(int32_t id, int64_t size, void *host, int32_t kind);
EXPORT int32_t __tgt_rtl_data_submit(int32_t id, void *tgt, void *host, int64_t size);
EXPORT int32_t __tgt_rtl_data_submit_async(int32_t id, void *tgt, void *host, int64_t size,
                                           accel_async *ai);
EXPORT int32_t __tgt_rtl_data_retrieve(int32_t id, void *host, void *tgt, int64_t size);
EXPORT int32_t __tgt_rtl_data_retrieve_async(int32_t id, void *host, void *tgt, int64_t size,
                                             accel_async *ai);
EXPORT int32_t __tgt_rtl_data_delete(int32_t id, void *tgt);
EXPORT int32_t __tgt_rtl_is_data_exchangable(int32_t src, int32_t dst);
EXPORT int32_t __tgt_rtl_data_exchange(int32_t src, void *sp, int32_t dst, void *dp,
                                       int64_t size);
EXPORT int32_t __tgt_rtl_data_exchange_async(int32_t src, void *sp, int32_t dst, void *dp,
                                             int64_t size, accel_async *ai);
EXPORT int32_t __tgt_rtl_run_target_team_region(int32_t id, void *entry, void **args,
                                                ptrdiff_t *offsets, int32_t nargs,
                                                int32_t teams, int32_t threads,
                                                uint64_t tripcount);
EXPORT int32_t __tgt_rtl_run_target_team_region_async(int32_t id, void *entry, void **args,
                                                      ptrdiff_t *offsets, int32_t nargs,
                                                      int32_t teams, int32_t threads,
                                                      uint64_t tripcount, accel_async *ai);
EXPORT int32_t __tgt_rtl_run_target_region(int32_t id, void *entry, void **args,
                                           ptrdiff_t *offsets, int32_t nargs);
EXPORT int32_t __tgt_rtl_run_target_region_async(int32_t id, void *entry, void **args,
                                                 ptrdiff_t *offsets, int32_t nargs,
                                                 accel_async *ai);
EXPORT int32_t __tgt_rtl_synchronize(int32_t id, accel_async *ai);

/* ---- configuration --------------------------------------------------------- */

#define ACCEL_DEVICES_MAX 16
#define ACCEL_ALIGN 256u
#define ACCEL_FAILS_MAX 16
#define ACCEL_RENDEZVOUS_S 60

/* The kinds of OTM_ACCEL_FAIL, in the order of accel_kind_names. */
typedef enum accel_kind {
    K_INIT_DEVICE, K_LOAD_BINARY, K_DATA_ALLOC, K_DATA_SUBMIT, K_DATA_RETRIEVE,
    K_DATA_DELETE, K_DATA_EXCHANGE, K_RUN, K_SYNCHRONIZE, K_TRAP, K_KINDS
} accel_kind;

static const char *const accel_kind_names[K_KINDS] = {
    "init_device", "load_binary", "data_alloc", "data_submit", "data_retrieve",
    "data_delete", "data_exchange", "run", "synchronize", "trap"};

typedef struct accel_fail {
    accel_kind kind;
    unsigned long n;
} accel_fail;

/* A device's block: [off, off + len) of its arena, of which a live one
 * holds `size` bytes (what was asked: a copy beyond it is refused). */
typedef enum accel_use { USE_FREE, USE_ALLOC, USE_GLOBAL } accel_use;
typedef struct accel_block {
    uint64_t off, len, size;
    accel_use use;
} accel_block;

/* A declare-target global: the image's own copy and the arena's. */
typedef struct accel_global {
    void *lib;
    uint64_t dev, size;
} accel_global;

/* One load_binary: the image's handle and the table handed out. */
typedef struct accel_load {
    struct accel_load *next;
    void *handle;
    accel_table table;
    accel_entry *entries;
    size_t nentries;
    accel_global *globals;
    size_t nglobals;
} accel_load;

typedef struct accel_device {
    pthread_mutex_t lock;       /* all below */
    int ready;                  /* init_device succeeded */
    int fd;
    unsigned char *arena;
    uint64_t size;
    int opens;                  /* copies and kernels with the arena open */
    int running;                /* kernels running on it */
    accel_block *blocks;        /* sorted by offset, covering [0, top) */
    size_t nblocks, capblocks;
    uint64_t top;
    accel_load *loads;
} accel_device;

static struct {
    pthread_mutex_t lock;       /* the configuration, the rendezvous */
    pthread_cond_t changed;     /* a kernel joined the rendezvous */
    int configured, ok;
    int ndevices;
    int no_images;              /* OTM_ACCEL_IMAGES=none */
    uint64_t arena_size;
    accel_fail fails[ACCEL_FAILS_MAX];
    size_t nfails;
    unsigned long counts[K_KINDS];
    int rendezvous;             /* k, 0: off */
    int rendezvous_s;
    int waiting;                /* kernels in the rendezvous or past it, running */
    unsigned long generation;   /* a rendezvous reached */
    accel_device devices[ACCEL_DEVICES_MAX];
} accel = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};

/* One line on stderr, in one write so that lines of threads and ranks do
 * not mix. */
static void accel_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void accel_say(const char *fmt, ...)
{
    char line[512];
    int n = snprintf(line, sizeof line, "otmaccel: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = strlen(line);
    line[len++] = '\n';
    ssize_t w = write(2, line, len);
    (void)w;
}

/* A whole decimal number in [lo, hi], or -1. */
static long accel_number(const char *s, size_t len, long lo, long hi)
{
    long v = 0;
    if (!len || len > 9)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v >= lo && v <= hi ? v : -1;
}

static long accel_env_number(const char *name, long dflt, long lo, long hi, int *ok)
{
    const char *s = getenv(name);
    if (!s)
        return dflt;
    long v = accel_number(s, strlen(s), lo, hi);
    if (v < 0) {
        accel_say("%s=%s: expected a whole number in %ld..%ld; the plugin reports 0 devices",
                  name, s, lo, hi);
        *ok = 0;
    }
    return v;
}

/* One "what:n" of OTM_ACCEL_FAIL; 0 when it is not one. */
static int accel_parse_fail(const char *s, size_t len, accel_fail *f)
{
    const char *colon = memchr(s, ':', len);
    if (!colon)
        return 0;
    size_t wlen = (size_t)(colon - s);
    for (int k = 0; k < K_KINDS; k++) {
        if (strlen(accel_kind_names[k]) != wlen || memcmp(s, accel_kind_names[k], wlen))
            continue;
        long n = accel_number(colon + 1, len - wlen - 1, 1, 999999999);
        if (n < 0)
            return 0;
        *f = (accel_fail){(accel_kind)k, (unsigned long)n};
        return 1;
    }
    return 0;
}

static int accel_parse_fails(void)
{
    const char *s = getenv("OTM_ACCEL_FAIL");
    if (!s)
        return 1;
    const char *at = s;
    do {
        size_t len = strcspn(at, ",");
        if (accel.nfails == ACCEL_FAILS_MAX ||
            !accel_parse_fail(at, len, &accel.fails[accel.nfails])) {
            accel_say("OTM_ACCEL_FAIL=%s: '%.*s' is not what:n (what: init_device, "
                      "load_binary, data_alloc, data_submit, data_retrieve, data_delete, "
                      "data_exchange, run, synchronize or trap; n >= 1; at most %d of them); "
                      "the plugin reports 0 devices", s, (int)len, at, ACCEL_FAILS_MAX);
            return 0;
        }
        accel.nfails++;
        at += len;
    } while (*at++ == ',');
    return 1;
}

/* OTM_ACCEL_RENDEZVOUS=k or k:s. */
static int accel_parse_rendezvous(void)
{
    const char *s = getenv("OTM_ACCEL_RENDEZVOUS");
    accel.rendezvous = 0, accel.rendezvous_s = ACCEL_RENDEZVOUS_S;
    if (!s)
        return 1;
    size_t klen = strcspn(s, ":");
    long k = accel_number(s, klen, 1, 64);
    long secs = s[klen] ? accel_number(s + klen + 1, strlen(s + klen + 1), 1, 600)
                        : ACCEL_RENDEZVOUS_S;
    if (k < 0 || secs < 0) {
        accel_say("OTM_ACCEL_RENDEZVOUS=%s: expected k or k:s (k kernels in 1..64, s "
                  "seconds in 1..600); the plugin reports 0 devices", s);
        return 0;
    }
    accel.rendezvous = (int)k, accel.rendezvous_s = (int)secs;
    return 1;
}

/* OTM_ACCEL_IMAGES=x86_64 (the default) or none. */
static int accel_parse_images(void)
{
    const char *s = getenv("OTM_ACCEL_IMAGES");
    accel.no_images = s && !strcmp(s, "none");
    if (!s || accel.no_images || !strcmp(s, "x86_64"))
        return 1;
    accel_say("OTM_ACCEL_IMAGES=%s: expected x86_64 or none; the plugin reports 0 devices", s);
    return 0;
}

/* Reads the environment once per plugin lifetime; called with accel.lock. */
static void accel_configure_locked(void)
{
    if (accel.configured)
        return;
    accel.configured = 1;
    accel.nfails = 0;
    memset(accel.counts, 0, sizeof accel.counts);
    accel.waiting = 0;
    int ok = 1;
    long n = accel_env_number("OTM_ACCEL_DEVICES", 3, 0, ACCEL_DEVICES_MAX, &ok);
    long mib = accel_env_number("OTM_ACCEL_MEMORY", 64, 1, 4096, &ok);
    ok = ok && accel_parse_fails() && accel_parse_rendezvous() && accel_parse_images();
    accel.ok = ok;
    accel.ndevices = ok ? (int)n : 0;
    accel.arena_size = ok ? (uint64_t)mib << 20 : 0;
    for (int i = 0; i < ACCEL_DEVICES_MAX; i++) {
        accel_device *d = &accel.devices[i];
        memset(d, 0, sizeof *d);
        pthread_mutex_init(&d->lock, NULL);
        d->fd = -1;
    }
}

static void accel_configure(void)
{
    pthread_mutex_lock(&accel.lock);
    accel_configure_locked();
    pthread_mutex_unlock(&accel.lock);
}

/* 1 when this call of `kind` is one OTM_ACCEL_FAIL names (and counts it). */
static int accel_fails(accel_kind kind)
{
    unsigned long n = __atomic_add_fetch(&accel.counts[kind], 1, __ATOMIC_RELAXED);
    for (size_t i = 0; i < accel.nfails; i++)
        if (accel.fails[i].kind == kind && accel.fails[i].n == n)
            return 1;
    return 0;
}

/* The failure OTM_ACCEL_FAIL asked for, said. */
static int accel_injected(int32_t id, const char *op, accel_kind kind)
{
    if (!accel_fails(kind))
        return 0;
    accel_say("device %d: %s: failed on request (OTM_ACCEL_FAIL=%s:%lu)", id, op,
              accel_kind_names[kind], __atomic_load_n(&accel.counts[kind], __ATOMIC_RELAXED));
    return 1;
}

/* Device id, initialised (unless `any`), or NULL with a line. */
static accel_device *accel_device_of(int32_t id, const char *op, int any)
{
    accel_configure();
    if (id < 0 || id >= accel.ndevices) {
        accel_say("device %d: %s: no such device (%d devices)", id, op, accel.ndevices);
        return NULL;
    }
    accel_device *d = &accel.devices[id];
    if (!any && !__atomic_load_n(&d->ready, __ATOMIC_ACQUIRE)) {
        accel_say("device %d: %s: the device was not initialised (init_device)", id, op);
        return NULL;
    }
    return d;
}

/* ---- the arena --------------------------------------------------------------- */

/* The arena opens for the first user and closes behind the last (d->lock). */
static int accel_open(accel_device *d)
{
    if (d->opens == 0 && mprotect(d->arena, d->size, PROT_READ | PROT_WRITE))
        return -1;
    d->opens++;
    return 0;
}

static void accel_close(accel_device *d)
{
    if (--d->opens == 0 && mprotect(d->arena, d->size, PROT_NONE))
        accel_say("mprotect(PROT_NONE) of an arena failed: %s", strerror(errno));
}

/* A memfd, so that /proc/self/maps names the device's memory. */
static int accel_arena_create(accel_device *d, int32_t id)
{
    char name[32];
    snprintf(name, sizeof name, "otmaccel-arena-%d", id);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)accel.arena_size)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    void *p = mmap(NULL, accel.arena_size, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (p == MAP_FAILED) {
        close(fd);
        return -1;
    }
    d->fd = fd, d->arena = p, d->size = accel.arena_size;
    return 0;
}

static int accel_blocks_insert(accel_device *d, size_t at, accel_block b)
{
    if (d->nblocks == d->capblocks) {
        size_t cap = d->capblocks ? 2 * d->capblocks : 64;
        accel_block *nb = realloc(d->blocks, cap * sizeof *nb);
        if (!nb)
            return -1;
        d->blocks = nb, d->capblocks = cap;
    }
    memmove(&d->blocks[at + 1], &d->blocks[at], (d->nblocks - at) * sizeof *d->blocks);
    d->blocks[at] = b;
    d->nblocks++;
    return 0;
}

/* First fit among freed blocks, else the top; 0 for none (offset 0 is
 * never handed out, so a device address is never the arena's start). */
static uint64_t accel_alloc_locked(accel_device *d, uint64_t size, accel_use use)
{
    uint64_t len = (size + ACCEL_ALIGN - 1) / ACCEL_ALIGN * ACCEL_ALIGN;
    if (!len)
        len = ACCEL_ALIGN;
    for (size_t i = 0; i < d->nblocks; i++) {
        accel_block *b = &d->blocks[i];
        if (b->use != USE_FREE || b->len < len)
            continue;
        if (b->len > len &&
            accel_blocks_insert(d, i + 1, (accel_block){b->off + len, b->len - len, 0, USE_FREE}))
            return 0;
        b = &d->blocks[i];
        b->len = len, b->size = size, b->use = use;
        return b->off;
    }
    if (!d->top)
        d->top = ACCEL_ALIGN;
    if (len > d->size - d->top ||
        accel_blocks_insert(d, d->nblocks, (accel_block){d->top, len, size, use}))
        return 0;
    d->top += len;
    return d->top - len;
}

/* The block that starts at off, or -1. */
static long accel_block_at(const accel_device *d, uint64_t off)
{
    for (size_t i = 0; i < d->nblocks; i++)
        if (d->blocks[i].off == off)
            return (long)i;
    return -1;
}

static void accel_free_block(accel_device *d, size_t i)
{
    d->blocks[i].use = USE_FREE;
    if (i + 1 < d->nblocks && d->blocks[i + 1].use == USE_FREE) {
        d->blocks[i].len += d->blocks[i + 1].len;
        memmove(&d->blocks[i + 1], &d->blocks[i + 2], (d->nblocks - i - 2) * sizeof *d->blocks);
        d->nblocks--;
    }
    if (i > 0 && d->blocks[i - 1].use == USE_FREE) {
        d->blocks[i - 1].len += d->blocks[i].len;
        memmove(&d->blocks[i], &d->blocks[i + 1], (d->nblocks - i - 1) * sizeof *d->blocks);
        d->nblocks--;
    }
}

/* 1 when [p, p + len) lies in one live allocation or global of d. */
static int accel_range_ok(const accel_device *d, const void *p, uint64_t len)
{
    uintptr_t a = (uintptr_t)p, base = (uintptr_t)d->arena;
    if (!d->arena || a < base || a - base >= d->size)
        return 0;
    uint64_t off = a - base;
    for (size_t i = 0; i < d->nblocks; i++) {
        const accel_block *b = &d->blocks[i];
        if (off >= b->off && off < b->off + b->len)
            return b->use != USE_FREE && off - b->off < b->size &&
                   len <= b->off + b->size - off;
    }
    return 0;
}

/* ---- the operations, performed (the sync calls and synchronize) ------------ */

static int32_t accel_copy_in(int32_t id, void *tgt, const void *host, int64_t size)
{
    accel_device *d = accel_device_of(id, "data_submit", 0);
    if (!d)
        return OFFLOAD_FAIL;
    if (size <= 0 || !host) {
        if (size < 0 || (size && !host))
            accel_say("device %d: data_submit: bad %s", id,
                      size < 0 ? "size" : "host pointer (NULL)");
        return size == 0 ? OFFLOAD_SUCCESS : OFFLOAD_FAIL;
    }
    pthread_mutex_lock(&d->lock);
    int ok = accel_range_ok(d, tgt, (uint64_t)size) && !accel_open(d);
    if (ok) {
        memcpy(tgt, host, (size_t)size);
        accel_close(d);
    }
    pthread_mutex_unlock(&d->lock);
    if (!ok)
        accel_say("device %d: data_submit of %lld bytes to %p: not inside a live allocation "
                  "of the device", id, (long long)size, tgt);
    return ok ? OFFLOAD_SUCCESS : OFFLOAD_FAIL;
}

static int32_t accel_copy_out(int32_t id, void *host, const void *tgt, int64_t size)
{
    accel_device *d = accel_device_of(id, "data_retrieve", 0);
    if (!d)
        return OFFLOAD_FAIL;
    if (size <= 0 || !host) {
        if (size < 0 || (size && !host))
            accel_say("device %d: data_retrieve: bad %s", id,
                      size < 0 ? "size" : "host pointer (NULL)");
        return size == 0 ? OFFLOAD_SUCCESS : OFFLOAD_FAIL;
    }
    pthread_mutex_lock(&d->lock);
    int ok = accel_range_ok(d, tgt, (uint64_t)size) && !accel_open(d);
    if (ok) {
        memcpy(host, tgt, (size_t)size);
        accel_close(d);
    }
    pthread_mutex_unlock(&d->lock);
    if (!ok)
        accel_say("device %d: data_retrieve of %lld bytes from %p: not inside a live "
                  "allocation of the device", id, (long long)size, tgt);
    return ok ? OFFLOAD_SUCCESS : OFFLOAD_FAIL;
}

/* Device to device: both arenas open at once, locked in the order of their
 * ids (two exchanges the other way round must not deadlock). */
static int32_t accel_copy_across(int32_t sid, void *sp, int32_t did, void *dp, int64_t size)
{
    accel_device *s = accel_device_of(sid, "data_exchange", 0);
    accel_device *d = s ? accel_device_of(did, "data_exchange", 0) : NULL;
    if (!d)
        return OFFLOAD_FAIL;
    if (size <= 0)
        return size == 0 ? OFFLOAD_SUCCESS : OFFLOAD_FAIL;
    accel_device *first = sid <= did ? s : d, *second = sid <= did ? d : s;
    pthread_mutex_lock(&first->lock);
    if (second != first)
        pthread_mutex_lock(&second->lock);
    int ok = accel_range_ok(s, sp, (uint64_t)size) && accel_range_ok(d, dp, (uint64_t)size);
    int opened_s = ok && !accel_open(s);
    int opened_d = opened_s && !accel_open(d);
    if (opened_d)
        memmove(dp, sp, (size_t)size);
    if (opened_d)
        accel_close(d);
    if (opened_s)
        accel_close(s);
    if (second != first)
        pthread_mutex_unlock(&second->lock);
    pthread_mutex_unlock(&first->lock);
    if (!opened_d)
        accel_say("device %d: data_exchange of %lld bytes from %p to device %d at %p: %s",
                  sid, (long long)size, sp, did, dp,
                  ok ? "the arenas could not be opened"
                     : "a range is not inside a live allocation of its device");
    return opened_d ? OFFLOAD_SUCCESS : OFFLOAD_FAIL;
}

/* ---- kernels ----------------------------------------------------------------- */

/* The name of the kernel at `entry` among d's loads, or NULL (d->lock). */
static const char *accel_kernel_name(const accel_device *d, const void *entry)
{
    for (const accel_load *l = d->loads; l; l = l->next)
        for (size_t i = 0; i < l->nentries; i++)
            if (l->entries[i].size == 0 && l->entries[i].addr == entry)
                return l->entries[i].name ? l->entries[i].name : "(unnamed)";
    return NULL;
}

/* The image's copies of d's globals from the arena, and back (d->lock,
 * the arena open). */
static void accel_mirror(accel_device *d, int to_image)
{
    for (accel_load *l = d->loads; l; l = l->next)
        for (size_t i = 0; i < l->nglobals; i++) {
            accel_global *g = &l->globals[i];
            if (to_image)
                memcpy(g->lib, (void *)(uintptr_t)g->dev, g->size);
            else
                memcpy((void *)(uintptr_t)g->dev, g->lib, g->size);
        }
}

/* Waits until accel.rendezvous kernels are in at once; -1 past the limit. */
static int accel_rendezvous_enter(int32_t id)
{
    if (!accel.rendezvous)
        return 0;
    pthread_mutex_lock(&accel.lock);
    accel.waiting++;
    unsigned long gen = accel.generation;
    int rc = 0, most = accel.waiting;
    if (accel.waiting >= accel.rendezvous) {
        accel.generation++;
        pthread_cond_broadcast(&accel.changed);
    } else {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += accel.rendezvous_s;
        while (accel.generation == gen && rc != ETIMEDOUT) {
            rc = pthread_cond_timedwait(&accel.changed, &accel.lock, &until);
            most = accel.waiting > most ? accel.waiting : most;
        }
        rc = accel.generation == gen;
        if (rc)
            accel.waiting--;
    }
    pthread_mutex_unlock(&accel.lock);
    if (rc)
        accel_say("device %d: run: the rendezvous of %d kernels was not reached within %d s "
                  "(OTM_ACCEL_RENDEZVOUS; at most %d ran at once)", id, accel.rendezvous,
                  accel.rendezvous_s, most);
    return rc ? -1 : 0;
}

static void accel_rendezvous_leave(void)
{
    if (!accel.rendezvous)
        return;
    pthread_mutex_lock(&accel.lock);
    accel.waiting--;
    pthread_mutex_unlock(&accel.lock);
}

/* The outlined function with every argument pointer-sized, as the host
 * plugin calls it (libffi: any number of arguments). */
static int accel_call(void *entry, void **args, const ptrdiff_t *offsets, int32_t nargs)
{
    size_t n = (size_t)nargs;
    ffi_type **types = calloc(n ? n : 1, sizeof *types);
    void **ptrs = calloc(n ? n : 1, sizeof *ptrs), **vals = calloc(n ? n : 1, sizeof *vals);
    ffi_cif cif;
    int ok = types && ptrs && vals;
    for (size_t i = 0; ok && i < n; i++) {
        ptrs[i] = (char *)args[i] + (offsets ? offsets[i] : 0);
        vals[i] = &ptrs[i];
        types[i] = &ffi_type_pointer;
    }
    ok = ok && ffi_prep_cif(&cif, FFI_DEFAULT_ABI, (unsigned)n, &ffi_type_void, types) == FFI_OK;
    if (ok)
        ffi_call(&cif, FFI_FN(entry), NULL, vals);
    free(types), free(ptrs), free(vals);
    return ok ? 0 : -1;
}

/* A kernel, now: the trap of OTM_ACCEL_FAIL, the rendezvous, the arena
 * open and the globals in the image while it runs. A kernel that faults
 * never returns here (the caller's guard jumps out): its device keeps the
 * arena open, as a GPU that faulted is of no more use. */
static int32_t accel_run_now(int32_t id, void *entry, void **args, const ptrdiff_t *offsets,
                             int32_t nargs)
{
    accel_device *d = accel_device_of(id, "run", 0);
    if (!d)
        return OFFLOAD_FAIL;
    pthread_mutex_lock(&d->lock);
    const char *name = accel_kernel_name(d, entry);
    pthread_mutex_unlock(&d->lock);
    if (!name || nargs < 0 || (nargs && !args)) {
        accel_say("device %d: run: %s", id, !name ? "the entry is no kernel of an image "
                  "loaded on the device" : "bad arguments");
        return OFFLOAD_FAIL;
    }
    if (accel_fails(K_TRAP)) {
        accel_say("device %d: run: kernel %s trapped (OTM_ACCEL_FAIL=trap:%lu)", id, name,
                  __atomic_load_n(&accel.counts[K_TRAP], __ATOMIC_RELAXED));
        return OFFLOAD_FAIL;
    }
    if (accel_rendezvous_enter(id))
        return OFFLOAD_FAIL;
    pthread_mutex_lock(&d->lock);
    int open = !accel_open(d);
    if (open && d->running++ == 0)
        accel_mirror(d, 1);
    pthread_mutex_unlock(&d->lock);
    int rc = open ? accel_call(entry, args, offsets, nargs) : -1;
    pthread_mutex_lock(&d->lock);
    if (open && --d->running == 0)
        accel_mirror(d, 0);
    if (open)
        accel_close(d);
    pthread_mutex_unlock(&d->lock);
    accel_rendezvous_leave();
    if (rc)
        accel_say("device %d: run: kernel %s could not be called (%s)", id, name,
                  open ? "libffi refused its arguments" : "the arena could not be opened");
    return rc ? OFFLOAD_FAIL : OFFLOAD_SUCCESS;
}

/* ---- the queue of __tgt_async_info ------------------------------------------------ */

typedef enum accel_op_kind { OP_SUBMIT, OP_RETRIEVE, OP_EXCHANGE, OP_RUN } accel_op_kind;

typedef struct accel_op {
    struct accel_op *next;
    accel_op_kind kind;
    int32_t id, id2;            /* the device; an exchange's destination */
    void *dst, *src;
    int64_t size;
    void *entry;                /* a kernel, with its own copies of the arrays */
    void **args;
    ptrdiff_t *offsets;
    int32_t nargs;
} accel_op;

typedef struct accel_queue {
    accel_op *head, **tail;
    size_t n;
} accel_queue;

static void accel_op_free(accel_op *op)
{
    free(op->args), free(op->offsets), free(op);
}

/* A kernel's arrays are the caller's until the call returns: copied. */
static int accel_op_keep_args(accel_op *op, void **args, const ptrdiff_t *offsets)
{
    size_t n = op->nargs > 0 ? (size_t)op->nargs : 1;
    op->args = calloc(n, sizeof *op->args);
    op->offsets = calloc(n, sizeof *op->offsets);
    if (!op->args || !op->offsets)
        return -1;
    for (int32_t i = 0; i < op->nargs; i++)
        op->args[i] = args[i], op->offsets[i] = offsets ? offsets[i] : 0;
    return 0;
}

/* Appends a copy of *tmpl to ai's queue (created on the first). */
static int32_t accel_record(accel_async *ai, const accel_op *tmpl, void **args,
                            const ptrdiff_t *offsets, const char *what)
{
    if (!ai) {
        accel_say("device %d: %s: no __tgt_async_info", tmpl->id, what);
        return OFFLOAD_FAIL;
    }
    accel_queue *q = ai->queue;
    accel_op *op = malloc(sizeof *op);
    if (op)
        *op = *tmpl, op->next = NULL, op->args = NULL, op->offsets = NULL;
    if (!q && op && (q = calloc(1, sizeof *q)))
        q->tail = &q->head, ai->queue = q;
    if (!op || !q || (op->kind == OP_RUN && accel_op_keep_args(op, args, offsets))) {
        if (op)
            accel_op_free(op);
        accel_say("device %d: %s: out of memory for the queue", tmpl->id, what);
        return OFFLOAD_FAIL;
    }
    *q->tail = op, q->tail = &op->next, q->n++;
    return OFFLOAD_SUCCESS;
}

static int32_t accel_perform(const accel_op *op)
{
    switch (op->kind) {
    case OP_SUBMIT:
        return accel_copy_in(op->id, op->dst, op->src, op->size);
    case OP_RETRIEVE:
        return accel_copy_out(op->id, op->dst, op->src, op->size);
    case OP_EXCHANGE:
        return accel_copy_across(op->id, op->src, op->id2, op->dst, op->size);
    case OP_RUN:
        return accel_run_now(op->id, op->entry, op->args, op->offsets, op->nargs);
    }
    return OFFLOAD_FAIL;
}

/* ---- images ---------------------------------------------------------------------- */

/* The image in a file of its own, opened, the file removed at once (the
 * mapping keeps its inode, so a later image never gets the same one and
 * each device has its own copy of every global). */
static void *accel_dlopen_image(int32_t id, const void *start, size_t size)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/otmaccel-image-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        accel_say("device %d: load_binary: mkstemp(%s): %s", id, path, strerror(errno));
        return NULL;
    }
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, (const char *)start + done, size - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    close(fd);
    void *h = done == size ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    const char *why = done < size ? "the image could not be written" : h ? "" : dlerror();
    if (!h)
        accel_say("device %d: load_binary: %s: %s", id, path, why ? why : "dlopen failed");
    unlink(path);
    return h;
}

/* A global's arena copy, its initial bytes from the image; 0 for none. */
static uint64_t accel_global_place(accel_device *d, const void *sym, uint64_t size)
{
    pthread_mutex_lock(&d->lock);
    uint64_t off = accel_alloc_locked(d, size, USE_GLOBAL);
    if (off && accel_open(d)) {
        accel_free_block(d, (size_t)accel_block_at(d, off));
        off = 0;
    } else if (off) {
        memcpy(d->arena + off, sym, size);
        accel_close(d);
    }
    pthread_mutex_unlock(&d->lock);
    return off ? (uint64_t)(uintptr_t)(d->arena + off) : 0;
}

static void accel_load_free(accel_device *d, accel_load *l, int blocks)
{
    for (size_t i = 0; blocks && i < l->nglobals; i++) {
        long b = accel_block_at(d, l->globals[i].dev - (uint64_t)(uintptr_t)d->arena);
        if (b >= 0)
            accel_free_block(d, (size_t)b);
    }
    free(l->entries), free(l->globals), free(l);
}

/* The table of the host's entries, each looked up by name in the image
 * (as the host plugin does); -1 with a line when one is not there. */
static int accel_load_entries(int32_t id, accel_device *d, accel_load *l,
                              const accel_image *image)
{
    for (const accel_entry *e = image->entries_begin; e < image->entries_end; e++) {
        accel_entry *mine = &l->entries[l->nentries++];
        *mine = *e;
        void *sym = e->name ? dlsym(l->handle, e->name) : NULL;
        if (!sym) {
            accel_say("device %d: load_binary: entry %s is not in the image", id,
                      e->name ? e->name : "(unnamed)");
            return -1;
        }
        mine->addr = sym;
        if (!e->size)
            continue;
        uint64_t at = accel_global_place(d, sym, e->size);
        if (!at) {
            accel_say("device %d: load_binary: no device memory for global %s (%zu bytes)",
                      id, e->name, e->size);
            return -1;
        }
        l->globals[l->nglobals++] = (accel_global){sym, at, e->size};
        mine->addr = (void *)(uintptr_t)at;
    }
    return 0;
}

/* ---- the entry points --------------------------------------------------------------- */

int32_t __tgt_rtl_init_plugin(void)
{
    accel_configure();
    return OFFLOAD_SUCCESS;
}

/* Every device's memory and records dropped; the images stay loaded (a
 * thread of an OpenMP team may still be in their code, and the host plugin
 * never unloads its images either). */
int32_t __tgt_rtl_deinit_plugin(void)
{
    pthread_mutex_lock(&accel.lock);
    for (int i = 0; accel.configured && i < ACCEL_DEVICES_MAX; i++) {
        accel_device *d = &accel.devices[i];
        pthread_mutex_lock(&d->lock);
        while (d->loads) {
            accel_load *l = d->loads;
            d->loads = l->next;
            accel_load_free(d, l, 0);
        }
        if (d->arena)
            munmap(d->arena, d->size);
        if (d->fd >= 0)
            close(d->fd);
        free(d->blocks);
        pthread_mutex_unlock(&d->lock);
        pthread_mutex_destroy(&d->lock);
    }
    accel.configured = 0;
    pthread_mutex_unlock(&accel.lock);
    return OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_is_valid_binary(accel_image *image)
{
    accel_configure();
    if (accel.no_images || !image || !image->start || image->end <= image->start)
        return 0;
    size_t size = (size_t)((char *)image->end - (char *)image->start);
    Elf64_Ehdr h;
    if (size < sizeof h)
        return 0;
    memcpy(&h, image->start, sizeof h);     /* the image may be unaligned */
    return !memcmp(h.e_ident, ELFMAG, SELFMAG) && h.e_ident[EI_CLASS] == ELFCLASS64 &&
           h.e_machine == EM_X86_64 && h.e_type == ET_DYN;
}

int32_t __tgt_rtl_number_of_devices(void)
{
    accel_configure();
    return accel.ndevices;
}

int64_t __tgt_rtl_init_requires(int64_t flags)
{
    return flags;
}

int32_t __tgt_rtl_init_device(int32_t id)
{
    accel_device *d = accel_device_of(id, "init_device", 1);
    if (!d || accel_injected(id, "init_device", K_INIT_DEVICE))
        return OFFLOAD_FAIL;
    pthread_mutex_lock(&d->lock);
    int ok = d->arena || !accel_arena_create(d, id);
    if (ok)
        __atomic_store_n(&d->ready, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&d->lock);
    if (!ok)
        accel_say("device %d: init_device: its memory (%llu MiB) could not be mapped: %s", id,
                  (unsigned long long)(accel.arena_size >> 20), strerror(errno));
    return ok ? OFFLOAD_SUCCESS : OFFLOAD_FAIL;
}

accel_table *__tgt_rtl_load_binary(int32_t id, accel_image *image)
{
    accel_device *d = accel_device_of(id, "load_binary", 0);
    if (!d || accel_injected(id, "load_binary", K_LOAD_BINARY))
        return NULL;
    if (!__tgt_rtl_is_valid_binary(image)) {
        accel_say("device %d: load_binary: not an x86_64 shared object", id);
        return NULL;
    }
    size_t n = image->entries_end > image->entries_begin
                   ? (size_t)(image->entries_end - image->entries_begin) : 0;
    accel_load *l = calloc(1, sizeof *l);
    if (l) {
        l->entries = calloc(n ? n : 1, sizeof *l->entries);
        l->globals = calloc(n ? n : 1, sizeof *l->globals);
    }
    if (!l || !l->entries || !l->globals) {
        accel_say("device %d: load_binary: out of memory", id);
        if (l)
            free(l->entries), free(l->globals), free(l);
        return NULL;
    }
    l->handle = accel_dlopen_image(id, image->start,
                                   (size_t)((char *)image->end - (char *)image->start));
    int ok = l->handle && !accel_load_entries(id, d, l, image);
    pthread_mutex_lock(&d->lock);
    if (ok) {
        l->table = (accel_table){l->entries, l->entries + l->nentries};
        l->next = d->loads, d->loads = l;
    } else {
        accel_load_free(d, l, 1);
    }
    pthread_mutex_unlock(&d->lock);
    return ok ? &l->table : NULL;
}

void *__tgt_rtl_data_alloc(int32_t id, int64_t size, void *host, int32_t kind)
{
    accel_device *d = accel_device_of(id, "data_alloc", 0);
    if (!d || accel_injected(id, "data_alloc", K_DATA_ALLOC))
        return NULL;
    if (kind < 0 || kind > 3 || size < 0) {
        accel_say("device %d: data_alloc: bad %s (%lld)", id, size < 0 ? "size" : "kind",
                  size < 0 ? (long long)size : (long long)kind);
        return NULL;
    }
    pthread_mutex_lock(&d->lock);
    uint64_t off = accel_alloc_locked(d, (uint64_t)size, USE_ALLOC);
    pthread_mutex_unlock(&d->lock);
    if (!off)
        accel_say("device %d: data_alloc: out of device memory (%lld bytes asked; %llu MiB "
                  "in all, OTM_ACCEL_MEMORY)", id, (long long)size,
                  (unsigned long long)(d->size >> 20));
    return off ? d->arena + off : NULL;
}

int32_t __tgt_rtl_data_delete(int32_t id, void *tgt)
{
    accel_device *d = accel_device_of(id, "data_delete", 0);
    if (!d || accel_injected(id, "data_delete", K_DATA_DELETE))
        return OFFLOAD_FAIL;
    uintptr_t a = (uintptr_t)tgt, base = (uintptr_t)d->arena;
    pthread_mutex_lock(&d->lock);
    long b = a > base && a - base < d->size ? accel_block_at(d, a - base) : -1;
    int ok = b >= 0 && d->blocks[b].use == USE_ALLOC;
    if (ok)
        accel_free_block(d, (size_t)b);
    pthread_mutex_unlock(&d->lock);
    if (!ok)
        accel_say("device %d: data_delete of %p: not an address data_alloc returned (or "
                  "freed already)", id, tgt);
    return ok ? OFFLOAD_SUCCESS : OFFLOAD_FAIL;
}

int32_t __tgt_rtl_data_submit(int32_t id, void *tgt, void *host, int64_t size)
{
    if (!accel_device_of(id, "data_submit", 0) ||
        accel_injected(id, "data_submit", K_DATA_SUBMIT))
        return OFFLOAD_FAIL;
    return accel_copy_in(id, tgt, host, size);
}

int32_t __tgt_rtl_data_submit_async(int32_t id, void *tgt, void *host, int64_t size,
                                    accel_async *ai)
{
    if (!accel_device_of(id, "data_submit_async", 0) ||
        accel_injected(id, "data_submit_async", K_DATA_SUBMIT))
        return OFFLOAD_FAIL;
    accel_op op = {.kind = OP_SUBMIT, .id = id, .dst = tgt, .src = host, .size = size};
    return accel_record(ai, &op, NULL, NULL, "data_submit_async");
}

int32_t __tgt_rtl_data_retrieve(int32_t id, void *host, void *tgt, int64_t size)
{
    if (!accel_device_of(id, "data_retrieve", 0) ||
        accel_injected(id, "data_retrieve", K_DATA_RETRIEVE))
        return OFFLOAD_FAIL;
    return accel_copy_out(id, host, tgt, size);
}

int32_t __tgt_rtl_data_retrieve_async(int32_t id, void *host, void *tgt, int64_t size,
                                      accel_async *ai)
{
    if (!accel_device_of(id, "data_retrieve_async", 0) ||
        accel_injected(id, "data_retrieve_async", K_DATA_RETRIEVE))
        return OFFLOAD_FAIL;
    accel_op op = {.kind = OP_RETRIEVE, .id = id, .dst = host, .src = tgt, .size = size};
    return accel_record(ai, &op, NULL, NULL, "data_retrieve_async");
}

int32_t __tgt_rtl_is_data_exchangable(int32_t src, int32_t dst)
{
    accel_configure();
    return src >= 0 && dst >= 0 && src < accel.ndevices && dst < accel.ndevices;
}

int32_t __tgt_rtl_data_exchange(int32_t src, void *sp, int32_t dst, void *dp, int64_t size)
{
    if (!accel_device_of(src, "data_exchange", 0) ||
        accel_injected(src, "data_exchange", K_DATA_EXCHANGE))
        return OFFLOAD_FAIL;
    return accel_copy_across(src, sp, dst, dp, size);
}

int32_t __tgt_rtl_data_exchange_async(int32_t src, void *sp, int32_t dst, void *dp,
                                      int64_t size, accel_async *ai)
{
    if (!accel_device_of(src, "data_exchange_async", 0) ||
        accel_injected(src, "data_exchange_async", K_DATA_EXCHANGE))
        return OFFLOAD_FAIL;
    accel_op op = {.kind = OP_EXCHANGE, .id = src, .id2 = dst, .src = sp, .dst = dp,
                   .size = size};
    return accel_record(ai, &op, NULL, NULL, "data_exchange_async");
}

int32_t __tgt_rtl_run_target_team_region(int32_t id, void *entry, void **args,
                                         ptrdiff_t *offsets, int32_t nargs, int32_t teams,
                                         int32_t threads, uint64_t tripcount)
{
    if (!accel_device_of(id, "run", 0) || accel_injected(id, "run", K_RUN))
        return OFFLOAD_FAIL;
    return accel_run_now(id, entry, args, offsets, nargs);
}

int32_t __tgt_rtl_run_target_team_region_async(int32_t id, void *entry, void **args,
                                               ptrdiff_t *offsets, int32_t nargs,
                                               int32_t teams, int32_t threads,
                                               uint64_t tripcount, accel_async *ai)
{
    if (!accel_device_of(id, "run_async", 0) || accel_injected(id, "run_async", K_RUN))
        return OFFLOAD_FAIL;
    if (nargs < 0 || (nargs && !args)) {
        accel_say("device %d: run_async: bad arguments", id);
        return OFFLOAD_FAIL;
    }
    accel_op op = {.kind = OP_RUN, .id = id, .entry = entry, .nargs = nargs};
    return accel_record(ai, &op, args, offsets, "run_async");
}

int32_t __tgt_rtl_run_target_region(int32_t id, void *entry, void **args, ptrdiff_t *offsets,
                                    int32_t nargs)
{
    return __tgt_rtl_run_target_team_region(id, entry, args, offsets, nargs, 1, 1, 0);
}

int32_t __tgt_rtl_run_target_region_async(int32_t id, void *entry, void **args,
                                          ptrdiff_t *offsets, int32_t nargs, accel_async *ai)
{
    return __tgt_rtl_run_target_team_region_async(id, entry, args, offsets, nargs, 1, 1, 0,
                                                  ai);
}

/* The queue's operations in order; the first failure drops the rest (a
 * stream stops at its first error), and the queue is gone either way. */
int32_t __tgt_rtl_synchronize(int32_t id, accel_async *ai)
{
    if (!accel_device_of(id, "synchronize", 0))
        return OFFLOAD_FAIL;
    if (!ai) {
        accel_say("device %d: synchronize: no __tgt_async_info", id);
        return OFFLOAD_FAIL;
    }
    accel_queue *q = ai->queue;
    ai->queue = NULL;
    size_t n = q ? q->n : 0;
    int32_t rc = OFFLOAD_SUCCESS;
    if (accel_fails(K_SYNCHRONIZE)) {
        accel_say("device %d: synchronize: failed on request (OTM_ACCEL_FAIL=synchronize:%lu); "
                  "its %zu queued operation(s) dropped", id,
                  __atomic_load_n(&accel.counts[K_SYNCHRONIZE], __ATOMIC_RELAXED), n);
        rc = OFFLOAD_FAIL;
    }
    for (accel_op *op = q ? q->head : NULL, *next; op; op = next) {
        next = op->next;
        if (rc == OFFLOAD_SUCCESS)
            rc = accel_perform(op);
        accel_op_free(op);
    }
    free(q);
    return rc;
}
