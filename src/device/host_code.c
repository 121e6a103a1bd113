/*
 * host_code.c - rank 0's program and libraries at rank 0's addresses in a
 * device rank (otm/host_code.h).
 *
 * The description's layout is in the header.
 *
 * The redirect table is read by a signal handler: fixed-size, filled
 * before its count is published (release), never changed while published.
 */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "device_internal.h"
#include "otm/host_code.h"

#define MAGIC 0x4348544fu    /* "OTHC" */
#define VERSION 1u
#define HEAD 32u
#define RECORD 20u           /* before the build-id and the name */
#define ID_MAX 64u
#define REDIRECTS_MAX 256u
#define PLACED_MAX 1024u
/* How far below its current bottom rank 0's stack is guarded, at most. */
#define STACK_GUARD_MAX (256ull << 20)

typedef struct redirect {
    uint64_t lo, hi;         /* rank 0's code */
    int64_t delta;           /* this process's copy minus rank 0's */
} redirect;

static redirect redirects[REDIRECTS_MAX];
static _Atomic size_t nredirects;
static otd_range placed[PLACED_MAX];
static size_t nplaced;
static otd_range guard;
static int in_use;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t page_size(void) { return (uint64_t)sysconf(_SC_PAGESIZE); }
static uint64_t page_down(uint64_t a) { return a & ~(page_size() - 1); }
static uint64_t page_up(uint64_t a) { return page_down(a + page_size() - 1); }

/* ---- an object's identity ------------------------------------------------ */

typedef struct identity {
    uint64_t hash;                /* of the PT_LOAD and PT_GNU_RELRO headers */
    uint8_t id[ID_MAX];           /* the GNU build-id */
    uint8_t idlen;
    const char *name;             /* the base name ("" for the program) */
    uint8_t namelen;
} identity;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* The build-id in a loaded PT_NOTE segment, if it holds one. */
static void build_id(const struct dl_phdr_info *info, const ElfW(Phdr) *ph, identity *id)
{
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
    const uint8_t *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        ElfW(Nhdr) n;
        memcpy(&n, p, sizeof n);
        size_t name = (n.n_namesz + 3) & ~3u, desc = (n.n_descsz + 3) & ~3u;
        const uint8_t *at = p + sizeof n;
        if (name > (size_t)(end - at) || desc > (size_t)(end - at) - name)
            return;
        if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && !memcmp(at, "GNU", 4) &&
            n.n_descsz <= ID_MAX) {
            memcpy(id->id, at + name, n.n_descsz);
            id->idlen = (uint8_t)n.n_descsz;
            return;
        }
        p = at + name + desc;
    }
}

static void identify(const struct dl_phdr_info *info, identity *id)
{
    memset(id, 0, sizeof *id);
    id->hash = 0xcbf29ce484222325ull;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD || ph->p_type == PT_GNU_RELRO) {
            uint64_t f[6] = {ph->p_type, ph->p_flags, ph->p_offset, ph->p_vaddr,
                             ph->p_filesz, ph->p_memsz};
            id->hash = fnv(id->hash, f, sizeof f);
        } else if (ph->p_type == PT_NOTE && !id->idlen) {
            build_id(info, ph, id);
        }
    }
    const char *path = info->dlpi_name ? info->dlpi_name : "";
    const char *slash = strrchr(path, '/');
    id->name = slash ? slash + 1 : path;
    size_t n = strlen(id->name);
    id->namelen = (uint8_t)(n > 255 ? 255 : n);
}

/* The kernel's vDSO is no file, and each rank's is its own. */
static int describable(const struct dl_phdr_info *info)
{
    return info->dlpi_phnum > 0 && (!info->dlpi_name || !strstr(info->dlpi_name, "linux-vdso"));
}

/* ---- rank 0: the description --------------------------------------------- */

typedef struct writer {
    uint8_t *buf;
    size_t len, cap;
    uint32_t count;
    int nomem, full;
} writer;

static void put(writer *w, const void *p, size_t n)
{
    if (w->nomem)
        return;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *grown = realloc(w->buf, cap);
        if (!grown) {
            w->nomem = 1;
            return;
        }
        w->buf = grown, w->cap = cap;
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static int describe_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    writer *w = arg;
    identity id;
    (void)size;
    if (!describable(info))
        return 0;
    if (w->count == OTD_HOST_CODE_MAX_OBJECTS) {
        w->full = 1;
        return 1;
    }
    identify(info, &id);
    uint64_t base = info->dlpi_addr;
    uint8_t lens[4] = {id.idlen, id.namelen, 0, 0};
    put(w, &base, 8);
    put(w, &id.hash, 8);
    put(w, lens, 4);
    put(w, id.id, id.idlen);
    put(w, id.name, id.namelen);
    w->count++;
    return 0;
}

/* This process's main stack, as far down as it may grow. */
static void stack_range(uint64_t *lo, uint64_t *hi)
{
    char line[512];
    *lo = *hi = 0;
    FILE *f = fopen("/proc/self/maps", "re");
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long a, b;
        if (strstr(line, "[stack]") && sscanf(line, "%llx-%llx", &a, &b) == 2) {
            *lo = a, *hi = b;
            break;
        }
    }
    if (f)
        fclose(f);
    struct rlimit rl;
    uint64_t grow = STACK_GUARD_MAX;
    if (!getrlimit(RLIMIT_STACK, &rl) && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < grow)
        grow = rl.rlim_cur;
    if (*hi && *hi - *lo < grow && *hi > grow)
        *lo = page_down(*hi - grow);
}

otm_status otd_host_code_describe(uint8_t **out, size_t *len, char *err, size_t errlen)
{
    writer w = {0};
    uint32_t head[4] = {MAGIC, VERSION, 0, 0};
    uint64_t stack[2];
    *out = NULL, *len = 0;
    stack_range(&stack[0], &stack[1]);
    put(&w, head, sizeof head);
    put(&w, stack, sizeof stack);
    dl_iterate_phdr(describe_one, &w);
    if (w.nomem) {
        free(w.buf);
        return otd_device_fail(OTM_ERR_NOMEM, err, errlen, "out of memory");
    }
    memcpy(w.buf + 8, &w.count, 4);
    *out = w.buf, *len = w.len;
    if (w.full)
        return otd_device_fail(OTM_ERR_BAD_SIZE, err, errlen, "more than %u loaded objects: "
                               "the first %u are described", OTD_HOST_CODE_MAX_OBJECTS,
                               OTD_HOST_CODE_MAX_OBJECTS);
    return OTM_OK;
}

/* ---- a device rank: the description read ------------------------------- */

typedef struct host_object {
    uint64_t base;
    identity id;
} host_object;

/* The description's objects into *objs (malloc'd). */
static otm_status parse(const uint8_t *d, size_t len, host_object **objs, uint32_t *n,
                        otd_range *stack, char *err, size_t errlen)
{
    uint32_t head[4];
    *objs = NULL, *n = 0;
    if (!d || len < HEAD || len > OTD_HOST_CODE_MAX_BYTES)
        return otd_device_fail(OTM_ERR_BAD_MESSAGE, err, errlen, "a description of %zu "
                               "bytes (%u to %u)", len, HEAD, OTD_HOST_CODE_MAX_BYTES);
    memcpy(head, d, sizeof head);
    memcpy(&stack->start, d + 16, 8);
    memcpy(&stack->end, d + 24, 8);
    if (head[0] != MAGIC || head[1] != VERSION)
        return otd_device_fail(OTM_ERR_BAD_MESSAGE, err, errlen, "not a description of "
                               "version %u (magic 0x%x, version %u)", VERSION, head[0],
                               head[1]);
    if (head[2] > OTD_HOST_CODE_MAX_OBJECTS)
        return otd_device_fail(OTM_ERR_BAD_MESSAGE, err, errlen, "%u objects (at most %u)",
                               head[2], OTD_HOST_CODE_MAX_OBJECTS);
    host_object *o = calloc(head[2] ? head[2] : 1, sizeof *o);
    if (!o)
        return otd_device_fail(OTM_ERR_NOMEM, err, errlen, "out of memory");
    size_t at = HEAD;
    for (uint32_t i = 0; i < head[2]; i++) {
        if (len - at < RECORD)
            goto short_;
        memcpy(&o[i].base, d + at, 8);
        memcpy(&o[i].id.hash, d + at + 8, 8);
        o[i].id.idlen = d[at + 16];
        o[i].id.namelen = d[at + 17];
        at += RECORD;
        if (o[i].id.idlen > ID_MAX)
            goto short_;
        if (len - at < (size_t)o[i].id.idlen + o[i].id.namelen)
            goto short_;
        memcpy(o[i].id.id, d + at, o[i].id.idlen);
        o[i].id.name = (const char *)d + at + o[i].id.idlen;
        at += (size_t)o[i].id.idlen + o[i].id.namelen;
    }
    if (at != len)
        goto short_;
    *objs = o, *n = head[2];
    return OTM_OK;
short_:
    free(o);
    return otd_device_fail(OTM_ERR_BAD_MESSAGE, err, errlen, "a description whose %u "
                           "objects do not fill its %zu bytes", head[2], len);
}

static int same_object(const identity *a, const identity *b)
{
    if (a->hash != b->hash || a->idlen != b->idlen || memcmp(a->id, b->id, a->idlen))
        return 0;
    return a->idlen || (a->namelen == b->namelen && !memcmp(a->name, b->name, a->namelen));
}

/* ---- a device rank: placing ---------------------------------------------- */

typedef struct placer {
    const host_object *objs;
    uint32_t n;
    otd_host_code_counts *c;
    int nomem;
} placer;

static void note_placed(placer *pl, uint64_t s, uint64_t e)
{
    if (nplaced == PLACED_MAX) {
        pl->nomem = 1;
        munmap((void *)(uintptr_t)s, e - s);
        return;
    }
    size_t i = nplaced++;
    while (i > 0 && placed[i - 1].start > s) {
        placed[i] = placed[i - 1];
        i--;
    }
    placed[i] = (otd_range){s, e};
    pl->c->placed++;
}

/* A mapping at exactly [s, e), never over one of this process's. */
static void *map_at(uint64_t s, uint64_t e, int prot, int flags, int fd, uint64_t off)
{
    void *want = (void *)(uintptr_t)s;
    void *p = mmap(want, e - s, prot, flags | MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd,
                   (off_t)off);
    if (p != MAP_FAILED && p != want) {
        munmap(p, e - s);      /* a kernel older than MAP_FIXED_NOREPLACE */
        return MAP_FAILED;
    }
    return p;
}

/* Rank 0's copy of a read-only or code segment: this object's file, read
 * only (code is not executable there: see otd_host_code_redirect). */
static void place_file(placer *pl, int fd, uint64_t s, uint64_t e, uint64_t off)
{
    void *p = fd >= 0 ? map_at(s, e, PROT_READ, 0, fd, off)
                      : map_at(s, e, PROT_NONE, MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        pl->c->taken++;
    else
        note_placed(pl, s, e);
}

/* Rank 0's RELRO pages: a copy of this process's own, relocated here. */
static void place_copy(placer *pl, uint64_t s, uint64_t e, const void *mine)
{
    void *p = map_at(s, e, PROT_READ | PROT_WRITE, MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        pl->c->taken++;
        return;
    }
    memcpy(p, mine, e - s);
    mprotect(p, e - s, PROT_READ);
    note_placed(pl, s, e);
}

static void add_redirect(placer *pl, uint64_t lo, uint64_t hi, int64_t delta)
{
    size_t n = atomic_load_explicit(&nredirects, memory_order_relaxed);
    if (n == REDIRECTS_MAX) {
        pl->nomem = 1;
        return;
    }
    redirects[n] = (redirect){lo, hi, delta};
    atomic_store_explicit(&nredirects, n + 1, memory_order_release);
}

static int open_object(const struct dl_phdr_info *info)
{
    const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* Each segment of one of this process's objects, at rank 0's base. */
static void place_object(placer *pl, const struct dl_phdr_info *info, uint64_t host)
{
    uint64_t mine = info->dlpi_addr, relro_lo = 0, relro_hi = 0;
    int64_t delta = (int64_t)(mine - host);
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            relro_lo = page_down(info->dlpi_phdr[i].p_vaddr);
            relro_hi = page_down(info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz);
        }
    int fd = open_object(info);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !ph->p_memsz)
            continue;
        uint64_t lo = page_down(ph->p_vaddr), hi = page_up(ph->p_vaddr + ph->p_memsz);
        if (ph->p_flags & PF_X)
            add_redirect(pl, host + ph->p_vaddr, host + ph->p_vaddr + ph->p_memsz, delta);
        if (!(ph->p_flags & PF_W)) {
            place_file(pl, fd, host + lo, host + hi, page_down(ph->p_offset));
        } else {
            uint64_t s = lo > relro_lo ? lo : relro_lo, e = hi < relro_hi ? hi : relro_hi;
            if (s < e)
                place_copy(pl, host + s, host + e, (const void *)(uintptr_t)(mine + s));
        }
    }
    if (fd >= 0)
        close(fd);
}

static int place_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    placer *pl = arg;
    identity mine;
    (void)size;
    if (!describable(info))
        return 0;
    identify(info, &mine);
    for (uint32_t i = 0; i < pl->n; i++) {
        if (!same_object(&pl->objs[i].id, &mine))
            continue;
        pl->c->matched++;
        if (pl->objs[i].base == info->dlpi_addr)
            pl->c->same++;
        else
            place_object(pl, info, pl->objs[i].base);
        break;
    }
    return 0;
}

/* Rank 0's stack range, unreachable here: its addresses then never reach
 * this process's own stack, which may grow down into them. */
static void place_guard(const otd_range *stack, otd_host_code_counts *c)
{
    uint64_t s = page_down(stack->start), e = page_up(stack->end);
    if (!stack->end || s >= e)
        return;
    if (map_at(s, e, PROT_NONE, MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) != MAP_FAILED) {
        guard = (otd_range){s, e};
        c->stack_guard = 1;
    }
}

otm_status otd_host_code_place(const uint8_t *desc, size_t len, otd_host_code_counts *counts,
                               char *err, size_t errlen)
{
    otd_host_code_counts ignored;
    otd_range stack = {0, 0};
    host_object *objs;
    uint32_t n;
    placer pl = {.c = counts ? counts : &ignored};
    memset(pl.c, 0, sizeof *pl.c);
    otm_status st = parse(desc, len, &objs, &n, &stack, err, errlen);
    if (st)
        return st;
    pthread_mutex_lock(&lock);
    if (in_use) {
        pthread_mutex_unlock(&lock);
        free(objs);
        return otd_device_fail(OTM_ERR_BUSY, err, errlen, "rank 0's objects are placed "
                               "already");
    }
    in_use = 1;
    pl.objs = objs, pl.n = n;
    pl.c->objects = n;
    dl_iterate_phdr(place_one, &pl);
    place_guard(&stack, pl.c);
    pthread_mutex_unlock(&lock);
    free(objs);
    if (pl.nomem)
        return otd_device_fail(OTM_ERR_NOMEM, err, errlen, "more ranges than the %u "
                               "the table holds", PLACED_MAX);
    return OTM_OK;
}

const otd_range *otd_host_code_ranges(size_t *n)
{
    *n = nplaced;
    return placed;
}

void otd_host_code_unguard(void)
{
    pthread_mutex_lock(&lock);
    if (guard.end)
        munmap((void *)(uintptr_t)guard.start, guard.end - guard.start);
    guard = (otd_range){0, 0};
    pthread_mutex_unlock(&lock);
}

void otd_host_code_clear(void)
{
    otd_host_code_unguard();
    pthread_mutex_lock(&lock);
    atomic_store(&nredirects, 0);
    for (size_t i = 0; i < nplaced; i++)
        munmap((void *)(uintptr_t)placed[i].start, placed[i].end - placed[i].start);
    nplaced = 0;
    in_use = 0;
    pthread_mutex_unlock(&lock);
}

uint64_t otd_host_code_redirect(uint64_t pc)
{
    size_t n = atomic_load_explicit(&nredirects, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (pc >= redirects[i].lo && pc < redirects[i].hi)
            return pc + (uint64_t)redirects[i].delta;
    return 0;
}
