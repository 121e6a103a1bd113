/*
 * fuzz_api.c - libFuzzer harness for the plugin's entry points.
 *
 * The input is a program of real __tgt_rtl_* calls (src/plugin/rtl.c and
 * host_ops.c, compiled unchanged) made by a host against a simulated job: this
 * file replaces the two pieces of the plugin that touch the process, so
 * that rank 0 is the simulator's:
 *   - startup.c, program.c and end.c (MPI start-up, the end of the job):
 *     the plugin instance is built here, its node being the world's rank 0
 *     (sim_config.host_node);
 *   - src/shell/idle.c (the idle policy of every wait): a wait steps the
 *     simulated world instead of sleeping, and virtual time passes only
 *     when nothing anywhere can move.
 * The workers are the world's actors with its device stub (image 0: the
 * kernels INC, which adds 1 to each byte of (buffer, length), FAIL and NOP,
 * and a 64-byte global).
 *
 * A shadow model follows every device's memory: a region per allocation
 * (and per loaded global), with each byte's value once it is known. Every
 * call's result must match the model: a retrieve returns the known bytes,
 * a submit, an exchange or a kernel writes what the model says, and every
 * error the model predicts (bad device id, NULL or negative arguments, a
 * range outside every allocation, a double delete, a use after delete, an
 * unloaded kernel) comes back as OFFLOAD_FAIL or NULL and changes nothing.
 *
 * Asynchronous calls go to one of LANES async infos. Until a lane is
 * synchronised (or an event recorded on it is synced) its operations may
 * run at any time, so the model marks a byte unknown when two operations
 * not ordered by a queue or an event touch it and one writes it. The
 * device's registry and kernels change only in ALLOC, DELETE and LOAD;
 * the harness synchronises every busy lane before those (as libomptarget
 * finishes a target region's transfers before it frees its buffers), so a
 * pending operation's validity never depends on timing.
 *
 * Byte coding (a byte past the end reads as 0):
 *   header, 5 bytes:
 *     h0  devices 1 + h0 % 3; pool on if bit 2; pool_max 32 << (h0 >> 3 & 3)
 *     h1  frag_size 1 + h1 % 16; window 1 + (h1 >> 4) % 4; ncomms 1 + (h1 >> 6) % 2
 *     h2  inline_max h2 % 24
 *     h3 h4  scheduler seed
 *   then operations, one opcode byte (% OPS) and its operands:
 *     0 ALLOC      dev size kind       data_alloc (size: 0..239, 4 KiB-ish,
 *                                      2^40 or -1; kind: device, host,
 *                                      shared, default)
 *     1 DELETE     dev handle          data_delete (handle: an address the
 *                                      model knows, pinned memory, or wild)
 *     2 SUBMIT     dev handle off len lane fill
 *     3 RETRIEVE   dev handle off len lane
 *     4 EXCHANGE   sdev shandle soff ddev dhandle doff len lane
 *     5 RUN        dev kernel handle off len lane   (run_target[_team]_region[_async])
 *     6 SYNCHRONIZE lane
 *     7 RECORD     event lane          (create_event first if needed)
 *     8 WAIT_EVENT event lane
 *     9 SYNC_EVENT event
 *    10 DESTROY    event
 *    11 LOAD       dev image           (the registered record, a copy, or
 *                                      an image from elsewhere)
 *    12 BAD        which dev           calls with NULL / negative / bad ids
 *    13 QUERY      lane                query_async (libomptarget 16's poll)
 *   dev: byte % (devices + 1), the last value standing for a bad id;
 *   lane: 0 synchronous, 1..LANES an async info.
 *
 * Any mismatch is an abort() with a line saying what; OTM_FUZZ_VERBOSE=1
 * also prints the plugin's log and the world's failure reports.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../shell/idle.h"
#include "plugin.h"
#include "world.h"

#define INPUT_MAX 1024
#define LANES 3
#define EVENTS 4
#define MAX_REGIONS 24      /* per device */
#define MAX_HANDLES 32      /* addresses remembered per device */
#define MAX_PENDING 128
#define MAX_PINNED 8
#define MAX_BUFS 160
#define SPAN 512            /* largest transfer */
#define IDLE_JUMPS 1000     /* a wait this long without any move hangs */
#define STEP_BUDGET 5000000u
#define TIMEOUT_NS 1000000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/* Huge ALLOC sizes must come back as NULL, not as a sanitizer report. */
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1:max_allocation_size_mb=1024:" OTM_FUZZ_ASAN_OPTIONS;
}

enum { R_GONE = 0, R_LIVE, R_POOLED, R_GLOBAL };
enum { ST_OK = 0, ST_FAIL = 1, ST_EITHER = 2 };
enum { OP_ALLOC, OP_DELETE, OP_SUBMIT, OP_RETRIEVE, OP_EXCHANGE, OP_RUN,
       OP_SYNCHRONIZE, OP_RECORD, OP_WAIT, OP_SYNC_EVENT, OP_DESTROY, OP_LOAD,
       OP_BAD, OP_QUERY, OPS };

typedef struct region {
    uint64_t base, size;
    int state;
    uint8_t *val, *known;   /* size bytes each */
} region;

typedef struct mdev {
    region r[MAX_REGIONS];
    int nr;
    uint64_t handles[MAX_HANDLES];
    int nh;
    int loaded;
    uint64_t kern[SIM_K_COUNT];
} mdev;

/* A byte range on a device. */
typedef struct span {
    int dev;
    uint64_t addr, len;
} span;

/* An asynchronous operation the model does not know to be complete. */
typedef struct pend {
    int lane;
    uint64_t seq;
    int st;                 /* ST_OK / ST_FAIL / ST_EITHER */
    int has_r, has_w;
    span r, w;              /* device bytes read, written (if it succeeds) */
    uint8_t *host, *want, *wknown;  /* RETRIEVE: where, what is expected */
    int target_lane;        /* SYNC: the lane and seq it waits for, or -1 */
    uint64_t target_seq;
} pend;

typedef struct lane {
    __tgt_async_info ai;
    uint64_t after[LANES];  /* ordered after these seqs of each lane */
    int ops;                /* operations since the last synchronize */
    int st;                 /* what synchronize must return */
    uint64_t last_seq;
} lane;

typedef struct mevent {
    void *handle;           /* NULL: not created */
    int none;               /* recorded on an empty queue */
    int lane;
    uint64_t seq;
    int st;
} mevent;

typedef struct harness {
    const uint8_t *p;
    size_t n;
    int ndev;
    mdev dev[SIM_MAX_WORKERS];
    lane lanes[LANES];
    mevent ev[EVENTS];
    pend pend[MAX_PENDING];
    int npend;
    uint64_t seq;
    void *pinned[MAX_PINNED];
    int npinned;
    void *bufs[MAX_BUFS];   /* host buffers of async operations */
    int nbufs;
    __tgt_offload_entry entries[SIM_K_COUNT + 1];
    __tgt_device_image image;
    __tgt_bin_desc desc;
} harness;

static sim_world *world;
static otp_plugin plugin;
static harness H;
static int verbose;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "fuzz_api: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    abort();
}

/* ---- the plugin's process-facing pieces, replaced (startup.c, program.c,
 * end.c, worker.c's entry, idle.c) and the one MPI call the simulator does
 * not serve ------------------------------------------------------------------ */

otp_plugin *otp_plugin_get(void)
{
    return plugin.role ? &plugin : NULL;
}

otp_plugin *otp_plugin_host(void)
{
    return plugin.role == OTM_ROLE_HOST ? &plugin : NULL;
}

void otp_plugin_log(int level, const char *fmt, ...)
{
    va_list ap;
    (void)level;
    if (!verbose)
        return;
    va_start(ap, fmt);
    fprintf(stderr, "omptarget-mpi: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* No trace recorder here (startup.c makes one under OMPTARGET_MPI_TRACE). */
void otp_plugin_trace_end(otp_plugin *p)
{
    if (p->trace)
        die("a trace recorder the harness never made");
}

/* Unified shared memory (usm.c) serves pages on a thread of its own, which
 * a simulated job cannot host: here it is never on, as under
 * OMPTARGET_MPI_USM=off. */
otm_status otp_usm_host_start(otp_plugin *p, char *why, size_t len)
{
    (void)p;
    snprintf(why, len, "not in this harness");
    return OTM_ERR_INVALID;
}

void otp_usm_release(otp_plugin *p)
{
    (void)p;
}

/* rank 0 is the host: register_lib never serves as a worker here. */
void otp_worker_main(otp_plugin *p)
{
    (void)p;
    die("register_lib made the host a worker");
}

/* unregister_lib ends the job this way when a worker did not acknowledge
 * the exit: in a fault-free world, a bug. */
/* program.c's end of the job without MPI_Finalize: EXIT to every worker,
 * then the host's state freed. A worker that did not acknowledge the exit
 * (the plugin would MPI_Abort) is, in a fault-free world, a bug. program.c
 * and end.c themselves cannot be compiled here: they end MPI and the
 * process. */
void otp_host_end(otp_plugin *p)
{
    ots_idle idle;
    if (!otm_host_end_claim(&p->node))
        return;
    ots_idle_init(&idle, &p->settings);
    otm_host_exit_begin(&p->node);
    while (p->node.life != OTM_LIFE_DONE)
        ots_idle_after(&idle, otm_host_exit_progress(&p->node), 0);
    if (p->node.exit_failures)
        die("unregister_lib: %d worker(s) missed the exit", p->node.exit_failures);
    otp_plugin_trace_end(p);
    otp_host_release(p);
    otm_node_fini(&p->node);
    otm_node_release(&p->node);
}

/* The world's own hooks take the regions' faults (region_fault is not
 * installed), so no region ends the program here. */
void otp_host_end_if_faulted(otp_plugin *p)
{
    if (__atomic_load_n(&p->end_status, __ATOMIC_ACQUIRE))
        die("a region ended the program in a harness without faults");
}

void ots_idle_init(ots_idle *idle, const otm_settings *s)
{
    (void)s;
    memset(idle, 0, sizeof *idle);
}

/* A wait of the plugin: the world moves one step; when neither the world
 * nor the caller moved, virtual time passes (timeouts may fire). */
void ots_idle_after(ots_idle *idle, int moved, int streaming)
{
    (void)streaming;
    /* Rounds of this wait (ots_idle_init starts each wait at 0): a count
     * kept across waits and inputs once ended a run of a million inputs. */
    if (++idle->polls == 50000000u)
        die("a host call spins without end (%u rounds)", idle->polls);
    if (moved)
        idle->idle_since = 0;
    if (sim_world_step(world)) {
        /* The step ran a worker's actor: the caller's MPI calls are rank 0's. */
        sim_world_act_as(world, 0);
        if (sim_world_failure(world))
            die("simulator invariant violated (%d)", (int)sim_world_failure(world));
        if (sim_world_steps(world) > STEP_BUDGET)
            die("the world keeps moving but the host call does not end");
        return;
    }
    if (moved)
        return;
    /* Every event times out after TIMEOUT_NS without progress: a wait that
     * sees time jump this often without the caller moving never ends. */
    sim_world_advance(world, TIMEOUT_NS);
    if (++idle->idle_since > IDLE_JUMPS)
        die("a host call waits for ever (virtual time jumped %d times)", IDLE_JUMPS);
}

uint64_t ots_clock_ns(void)
{
    return sim_world_time(world);
}

/* The scheduling slice is the real kernel's business, not the world's. */
void ots_slice_take(uint64_t ns)
{
    (void)ns;
}

/* ---- input ------------------------------------------------------------------------ */

static uint8_t take(void)
{
    if (!H.n)
        return 0;
    H.n--;
    return *H.p++;
}

/* A device id: valid, or (the last value) one of a few bad ones. */
static int32_t take_dev(int *valid)
{
    static const int32_t bad[] = {-1, 8, 1000, INT32_MIN, INT32_MAX};
    uint8_t b = take();
    int d = b % (H.ndev + 1);
    *valid = d < H.ndev;
    if (*valid)
        return d;
    int32_t id = bad[(b / (H.ndev + 1)) % 5];
    return id == 8 ? H.ndev : id;
}

static int take_lane(void)
{
    return take() % (LANES + 1) - 1;    /* -1: synchronous */
}

/* ---- the model's memory ------------------------------------------------------------ */

static region *find_region(int d, uint64_t addr, uint64_t len)
{
    mdev *m = &H.dev[d];
    for (int i = 0; i < m->nr; i++) {
        region *r = &m->r[i];
        if (r->state != R_GONE && addr >= r->base && addr - r->base <= r->size &&
            len <= r->size - (addr - r->base))
            return r;
    }
    return NULL;
}

/* What the device's registry says of [addr, addr + len). */
static int range_valid(int d, uint64_t addr, uint64_t len)
{
    return len > 0 && find_region(d, addr, len) != NULL;
}

static void add_handle(int d, uint64_t addr)
{
    mdev *m = &H.dev[d];
    for (int i = 0; i < m->nh; i++)
        if (m->handles[i] == addr)
            return;
    if (m->nh < MAX_HANDLES)
        m->handles[m->nh++] = addr;
}

/* An address to use on device d: one the model knows (often a live one),
 * or a wild one no allocation can contain. */
static uint64_t take_addr(int d)
{
    uint8_t b = take();
    if (d < 0 || b == 255 || H.dev[d].nh == 0)
        return b & 1 ? 0 : 0x40;
    return H.dev[d].handles[b % H.dev[d].nh];
}

static void byte_at(int d, uint64_t a, uint8_t **val, uint8_t **known)
{
    region *r = find_region(d, a, 1);
    if (!r)
        die("model: byte %#llx of device %d has no region", (unsigned long long)a, d);
    *val = &r->val[a - r->base];
    *known = &r->known[a - r->base];
}

static int in_span(const span *s, int d, uint64_t a)
{
    return s->dev == d && a >= s->addr && a - s->addr < s->len;
}

/* 1 when pending X and a new operation on lane l may run in either order. */
static int unordered(const pend *x, int l)
{
    if (l < 0)
        return 1;
    return x->lane != l && x->seq > H.lanes[l].after[x->lane];
}

static int unordered_writer(int l, int d, uint64_t a)
{
    for (int i = 0; i < H.npend; i++)
        if (H.pend[i].has_w && in_span(&H.pend[i].w, d, a) && unordered(&H.pend[i], l))
            return 1;
    return 0;
}

/* Forgets every byte pending X will write: it may read a byte before or
 * after a concurrent write. */
static void blur_writes(pend *x)
{
    for (uint64_t i = 0; x->has_w && i < x->w.len; i++) {
        uint8_t *v, *k;
        region *r = find_region(x->w.dev, x->w.addr + i, 1);
        if (!r)
            continue;
        byte_at(x->w.dev, x->w.addr + i, &v, &k);
        *k = 0;
    }
}

/* Reads span s as an operation of lane l sees it. */
static void model_read(int l, const span *s, uint8_t *val, uint8_t *known)
{
    for (uint64_t i = 0; i < s->len; i++) {
        uint8_t *v, *k;
        byte_at(s->dev, s->addr + i, &v, &k);
        val[i] = *v;
        known[i] = *k && !unordered_writer(l, s->dev, s->addr + i);
    }
}

/* Writes span s as an operation of lane l. */
static void model_write(int l, const span *s, const uint8_t *val, const uint8_t *known)
{
    for (uint64_t i = 0; i < s->len; i++) {
        uint64_t a = s->addr + i;
        int clash = 0;
        for (int j = 0; j < H.npend; j++) {
            pend *x = &H.pend[j];
            if (!unordered(x, l))
                continue;
            if (x->has_w && in_span(&x->w, s->dev, a))
                clash = 1;
            if (x->has_r && in_span(&x->r, s->dev, a)) {
                if (x->want)
                    x->wknown[a - x->r.addr] = 0;
                blur_writes(x);
            }
        }
        uint8_t *v, *k;
        byte_at(s->dev, a, &v, &k);
        *v = val[i];
        *k = known[i] && !clash;
    }
}

/* ---- pending operations ------------------------------------------------------------- */

static void check_retrieved(const pend *x, const char *when)
{
    for (uint64_t i = 0; i < x->r.len; i++)
        if (x->wknown[i] && x->host[i] != x->want[i])
            die("%s: byte %llu of a retrieve from device %d is %u, the model says %u",
                when, (unsigned long long)i, x->r.dev, x->host[i], x->want[i]);
}

static void drop_pend(int i)
{
    free(H.pend[i].want);
    free(H.pend[i].wknown);
    H.pend[i] = H.pend[--H.npend];
}

/* Everything of lane l up to seq has ended (and, through SYNC operations,
 * what they waited for). */
static void complete(int l, uint64_t seq)
{
    for (int i = 0; i < H.npend;) {
        pend *x = &H.pend[i];
        if (x->lane != l || x->seq > seq) {
            i++;
            continue;
        }
        if (x->want && x->st == ST_OK)
            check_retrieved(x, "after the operation ended");
        int tl = x->target_lane;
        uint64_t ts = x->target_seq;
        drop_pend(i);
        if (tl >= 0)
            complete(tl, ts);
        i = 0;
    }
}

static int combine(int a, int b)
{
    if (a == ST_FAIL || b == ST_FAIL)
        return ST_FAIL;
    return a == ST_EITHER || b == ST_EITHER ? ST_EITHER : ST_OK;
}

static pend *new_pend(int l, int st)
{
    if (H.npend == MAX_PENDING)
        die("harness: too many pending operations");
    pend *x = &H.pend[H.npend++];
    memset(x, 0, sizeof *x);
    x->lane = l;
    x->seq = ++H.seq;
    x->st = st;
    x->target_lane = -1;
    lane *ln = &H.lanes[l];
    ln->ops++;
    ln->st = combine(ln->st, st);
    ln->last_seq = x->seq;
    return x;
}

static void expect_rc(int32_t rc, int st, const char *what)
{
    if (st == ST_OK && rc != OFFLOAD_SUCCESS)
        die("%s failed where the model expects success", what);
    if (st == ST_FAIL && rc != OFFLOAD_FAIL)
        die("%s returned %d where the model expects OFFLOAD_FAIL", what, (int)rc);
}

static void synchronize(int l)
{
    lane *ln = &H.lanes[l];
    int32_t rc = __tgt_rtl_synchronize(0, &ln->ai);
    expect_rc(rc, ln->st, "synchronize");
    if (ln->ai.Queue)
        die("synchronize left the async info's queue");
    complete(l, UINT64_MAX);
    ln->ops = 0;
    ln->st = ST_OK;
}

/* query_async progresses once; when the queue ran empty it ends like
 * synchronize (the async info released, the first failure returned). */
static void query(int l)
{
    lane *ln = &H.lanes[l];
    int had = ln->ai.Queue != NULL;
    int32_t rc = __tgt_rtl_query_async(0, &ln->ai);
    if (had && ln->ai.Queue) {
        expect_rc(rc, ST_OK, "query_async of a queue still running");
        return;
    }
    expect_rc(rc, ln->st, "query_async of a drained queue");
    complete(l, UINT64_MAX);
    ln->ops = 0;
    ln->st = ST_OK;
}

static void synchronize_busy(void)
{
    for (int l = 0; l < LANES; l++)
        if (H.lanes[l].ai.Queue)
            synchronize(l);
}

/* A host buffer for a transfer of len <= SPAN bytes: a synchronous call is
 * done with it on return; an asynchronous one keeps it until the end. */
static uint8_t *host_buf(int l, uint64_t len)
{
    static uint8_t sync_buf[SPAN];
    if (l < 0)
        return sync_buf;
    uint8_t *b = malloc(len ? len : 1);
    if (!b)
        die("harness: out of memory");
    if (H.nbufs == MAX_BUFS)
        synchronize_busy();
    if (H.nbufs == MAX_BUFS) {
        for (int i = 0; i < H.nbufs; i++)
            free(H.bufs[i]);
        H.nbufs = 0;
    }
    H.bufs[H.nbufs++] = b;
    return b;
}

/* ---- operations -------------------------------------------------------------------- */

static int alloc_size(uint8_t b, int64_t *size)
{
    if (b < 240)
        *size = b;
    else if (b < 250)
        *size = 4000 + 8 * (int64_t)(b - 240);
    else if (b < 253)
        *size = (int64_t)1 << 40;
    else
        *size = -1 - (int64_t)(b - 253);
    return *size >= 0 && *size < (1 << 20);
}

static void new_region(int d, uint64_t addr, uint64_t size, int state, int known0)
{
    mdev *m = &H.dev[d];
    for (int i = 0; i < m->nr; i++) {
        region *r = &m->r[i];
        if (r->state == R_GONE)
            continue;
        if (addr < r->base + (r->size ? r->size : 1) && r->base < addr + (size ? size : 1))
            die("device %d: new region %#llx+%llu overlaps one the model holds (%#llx+%llu)",
                d, (unsigned long long)addr, (unsigned long long)size,
                (unsigned long long)r->base, (unsigned long long)r->size);
    }
    int slot = -1;
    for (int i = 0; i < m->nr && slot < 0; i++)
        if (m->r[i].state == R_GONE)
            slot = i;
    if (slot < 0)
        slot = m->nr++;
    region *r = &m->r[slot];
    free(r->val);
    free(r->known);
    r->base = addr;
    r->size = size;
    r->state = state;
    r->val = calloc(size ? size : 1, 1);
    r->known = malloc(size ? size : 1);
    if (!r->val || !r->known)
        die("harness: out of memory");
    memset(r->known, known0, size ? size : 1);
    add_handle(d, addr);
}

static int live_regions(int d)
{
    int n = 0;
    for (int i = 0; i < H.dev[d].nr; i++)
        n += H.dev[d].r[i].state != R_GONE;
    return n;
}

static void op_alloc(void)
{
    int valid;
    int32_t id = take_dev(&valid);
    int64_t size;
    int normal = alloc_size(take(), &size);
    int kind = take() % 4;
    if (valid && live_regions(id) >= MAX_REGIONS - 1)
        return;
    if (kind == TARGET_ALLOC_HOST && H.npinned == MAX_PINNED)
        return;
    synchronize_busy();
    void *p = __tgt_rtl_data_alloc(id, size, NULL, kind);
    if (!valid || size < 0 || kind == TARGET_ALLOC_SHARED) {
        if (p)
            die("data_alloc(%d, %lld, kind %d) gave memory", (int)id, (long long)size, kind);
        return;
    }
    if (kind == TARGET_ALLOC_HOST) {
        if (!p && normal)
            die("data_alloc of %lld host bytes failed", (long long)size);
        if (p)
            H.pinned[H.npinned++] = p;
        return;
    }
    if (!normal) {
        if (p)
            die("data_alloc of %lld bytes on device %d succeeded", (long long)size, (int)id);
        return;
    }
    if (!p)
        die("data_alloc of %lld bytes on device %d failed", (long long)size, (int)id);
    uint64_t a = (uint64_t)(uintptr_t)p;
    mdev *m = &H.dev[id];
    int pooled_same = 0;
    for (int i = 0; i < m->nr; i++) {
        region *r = &m->r[i];
        if (r->state == R_POOLED && r->size == (uint64_t)size)
            pooled_same = 1;
        if (r->state == R_POOLED && r->base == a && r->size == (uint64_t)size) {
            r->state = R_LIVE;      /* reused from the pool, bytes as they were */
            return;
        }
    }
    if (pooled_same && plugin.settings.pool && (uint64_t)size <= plugin.settings.pool_max)
        die("data_alloc of %lld bytes ignored a pooled allocation of that size",
            (long long)size);
    new_region(id, a, (uint64_t)size, R_LIVE, 0);
}

static void op_delete(void)
{
    int valid;
    int32_t id = take_dev(&valid);
    uint8_t b = take();
    void *ptr;
    int pinned = -1;
    if (b >= 240 && H.npinned) {
        pinned = b % H.npinned;
        ptr = H.pinned[pinned];
    } else {
        ptr = (void *)(uintptr_t)take_addr(valid ? id : -1);
    }
    synchronize_busy();
    int32_t rc = __tgt_rtl_data_delete(id, ptr);
    if (!valid || !ptr) {
        expect_rc(rc, ST_FAIL, "data_delete with a bad device or NULL");
        return;
    }
    if (pinned >= 0) {
        expect_rc(rc, ST_OK, "data_delete of pinned host memory");
        H.pinned[pinned] = H.pinned[--H.npinned];
        return;
    }
    uint64_t a = (uint64_t)(uintptr_t)ptr;
    region *r = NULL;
    for (int i = 0; i < H.dev[id].nr; i++)
        if (H.dev[id].r[i].state != R_GONE && H.dev[id].r[i].base == a)
            r = &H.dev[id].r[i];
    if (!r || r->state != R_LIVE) {
        expect_rc(rc, ST_FAIL, "data_delete of an address that is not a live allocation");
        return;
    }
    expect_rc(rc, ST_OK, "data_delete");
    int pooled = plugin.settings.pool && r->size <= plugin.settings.pool_max;
    r->state = pooled ? R_POOLED : R_GONE;
}

/* A transfer length: mostly 0..71 (a few fragments), else up to 495. */
static uint64_t take_len(void)
{
    uint8_t b = take();
    return b < 200 ? b % 72 : (uint64_t)(b - 200) * 9;
}

static void run_transfer(int kind)
{
    int valid;
    int32_t id = take_dev(&valid);
    uint64_t base = take_addr(valid ? id : -1);
    uint64_t off = take() % 80, len = take_len();
    int l = take_lane();
    uint8_t fill = take();
    uint64_t addr = base ? base + off : 0;
    uint8_t *buf = host_buf(l, len);
    for (uint64_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(fill + 3 * i);
    int immediate_fail = !valid || (len > 0 && !addr);
    int ok = !immediate_fail && (len == 0 || range_valid(id, addr, len));
    void *tgt = (void *)(uintptr_t)addr;
    __tgt_async_info *ai = l >= 0 ? &H.lanes[l].ai : NULL;
    span s = {valid ? id : 0, addr, len};
    int32_t rc;
    uint8_t val[SPAN], known[SPAN];
    if (kind == OP_SUBMIT)
        rc = ai ? __tgt_rtl_data_submit_async(id, tgt, buf, (int64_t)len, ai)
                : __tgt_rtl_data_submit(id, tgt, buf, (int64_t)len);
    else
        rc = ai ? __tgt_rtl_data_retrieve_async(id, buf, tgt, (int64_t)len, ai)
                : __tgt_rtl_data_retrieve(id, buf, tgt, (int64_t)len);
    const char *what = kind == OP_SUBMIT ? "data_submit" : "data_retrieve";
    if (immediate_fail || len == 0 || !ai) {
        expect_rc(rc, immediate_fail ? ST_FAIL : ok ? ST_OK : ST_FAIL, what);
        if (!ok || len == 0)
            return;
        if (kind == OP_SUBMIT) {
            memset(known, 1, len);
            model_write(-1, &s, buf, known);
        } else {
            model_read(-1, &s, val, known);
            for (uint64_t i = 0; i < len; i++)
                if (known[i] && buf[i] != val[i])
                    die("data_retrieve: byte %llu from device %d is %u, the model says %u",
                        (unsigned long long)i, (int)id, buf[i], val[i]);
        }
        return;
    }
    /* Queued: errors come at synchronize; a retrieve has ended when its
     * call returns (the retrieve rule), so it says its own error, and
     * synchronize does not say it again. */
    expect_rc(rc, kind == OP_RETRIEVE && !ok ? ST_FAIL : ST_OK, what);
    if (ok && kind == OP_SUBMIT) {
        memset(known, 1, len);
        model_write(l, &s, buf, known);
    }
    pend *x = new_pend(l, ok || kind == OP_RETRIEVE ? ST_OK : ST_FAIL);
    if (!ok)
        return;
    if (kind == OP_SUBMIT) {
        x->has_w = 1;
        x->w = s;
        return;
    }
    x->has_r = 1;
    x->r = s;
    x->host = buf;
    x->want = malloc(len);
    x->wknown = malloc(len);
    if (!x->want || !x->wknown)
        die("harness: out of memory");
    model_read(l, &s, x->want, x->wknown);
}

static void op_exchange(void)
{
    int sv, dv;
    int32_t sid = take_dev(&sv);
    uint64_t sbase = take_addr(sv ? sid : -1), soff = take() % 80;
    int32_t did = take_dev(&dv);
    uint64_t dbase = take_addr(dv ? did : -1), doff = take() % 80;
    uint64_t len = take_len();
    int l = take_lane();
    uint64_t sa = sbase ? sbase + soff : 0, da = dbase ? dbase + doff : 0;
    __tgt_async_info *ai = l >= 0 ? &H.lanes[l].ai : NULL;
    int32_t rc = ai ? __tgt_rtl_data_exchange_async(sid, (void *)(uintptr_t)sa, did,
                                                    (void *)(uintptr_t)da, (int64_t)len, ai)
                    : __tgt_rtl_data_exchange(sid, (void *)(uintptr_t)sa, did,
                                              (void *)(uintptr_t)da, (int64_t)len);
    if (__tgt_rtl_is_data_exchangable(sid, did) != (sv && dv))
        die("is_data_exchangable(%d, %d) disagrees with the device count", (int)sid, (int)did);
    int immediate_fail = !sv || !dv || (len > 0 && (!sa || !da));
    int ok = !immediate_fail &&
             (len == 0 || (range_valid(sid, sa, len) && range_valid(did, da, len)));
    if (immediate_fail || len == 0) {
        expect_rc(rc, immediate_fail ? ST_FAIL : ST_OK, "data_exchange");
        return;
    }
    span s = {sid, sa, len}, d = {did, da, len};
    uint8_t val[SPAN], known[SPAN];
    /* An exchange ends before its call returns, queued or not: it says
     * its own error, and synchronize does not say it again. */
    expect_rc(rc, ok ? ST_OK : ST_FAIL, "data_exchange");
    if (ok) {
        model_read(l, &s, val, known);
        model_write(l, &d, val, known);
    }
    if (!ai)
        return;
    pend *x = new_pend(l, ST_OK);
    if (ok) {
        x->has_r = x->has_w = 1;
        x->r = s;
        x->w = d;
    }
}

/* Kernels trust their arguments (as OpenMP's do), so INC only ever gets a
 * range inside a live region; everything else about the launch varies. */
static void op_run(void)
{
    int valid;
    int32_t id = take_dev(&valid);
    uint8_t k = take(), hb = take(), ob = take(), lb = take();
    int l = take_lane();
    int team = k & 8;
    void *args[2] = {NULL, NULL};
    ptrdiff_t offs[2] = {0, 0};
    int32_t nargs = 0;
    void *entry;
    int st = ST_FAIL;
    span s = {valid ? id : 0, 0, 0};
    mdev *m = valid ? &H.dev[id] : NULL;
    uint64_t kaddr[SIM_K_COUNT];
    for (int i = 0; i < SIM_K_COUNT; i++)
        kaddr[i] = m && m->loaded ? m->kern[i] : sim_kernel_addr((sim_kernel)i);
    switch (k % 6) {
    case 0: case 1: {       /* INC on a live range */
        region *r = NULL;
        int n = 0;
        for (int i = 0; m && i < m->nr; i++)
            if ((m->r[i].state == R_LIVE || m->r[i].state == R_GLOBAL) && m->r[i].size &&
                n++ == hb % 8)
                r = &m->r[i];
        entry = (void *)(uintptr_t)kaddr[SIM_K_INC];
        if (r) {
            uint64_t off = ob % r->size, len = lb % (r->size - off + 1);
            args[0] = (void *)(uintptr_t)r->base;
            offs[0] = (ptrdiff_t)off;
            args[1] = (void *)(uintptr_t)len;
            nargs = 2;
            s.addr = r->base + off;
            s.len = len;
        }
        st = m && m->loaded && nargs == 2 ? ST_OK : ST_FAIL;
        break;
    }
    case 2: entry = (void *)(uintptr_t)kaddr[SIM_K_NOP]; st = m && m->loaded ? ST_OK : ST_FAIL; break;
    case 3: entry = (void *)(uintptr_t)kaddr[SIM_K_FAIL]; break;
    case 4: entry = (void *)(uintptr_t)0x1234; break;
    default: entry = NULL; break;
    }
    __tgt_async_info *ai = l >= 0 ? &H.lanes[l].ai : NULL;
    int32_t rc;
    if (team)
        rc = ai ? __tgt_rtl_run_target_team_region_async(id, entry, args, offs, nargs,
                                                         1 + k % 3, (k >> 4) % 5, 0, ai)
                : __tgt_rtl_run_target_team_region(id, entry, args, offs, nargs,
                                                   1 + k % 3, (k >> 4) % 5, 0);
    else
        rc = ai ? __tgt_rtl_run_target_region_async(id, entry, args, offs, nargs, ai)
                : __tgt_rtl_run_target_region(id, entry, args, offs, nargs);
    int immediate_fail = !valid || !entry;
    if (immediate_fail) {
        expect_rc(rc, ST_FAIL, "run_target_region with a bad device or no kernel");
        return;
    }
    expect_rc(rc, ai ? ST_OK : st, "run_target_region");
    uint8_t val[SPAN], known[SPAN];
    if (st == ST_OK && s.len) {
        model_read(l, &s, val, known);
        for (uint64_t i = 0; i < s.len; i++)
            val[i]++;
        model_write(l, &s, val, known);
    }
    if (!ai)
        return;
    pend *x = new_pend(l, st);
    if (st == ST_OK && s.len) {
        x->has_r = x->has_w = 1;
        x->r = x->w = s;
    }
}

static mevent *take_event(int create)
{
    mevent *e = &H.ev[take() % EVENTS];
    if (!e->handle && create) {
        if (__tgt_rtl_create_event(0, &e->handle) != OFFLOAD_SUCCESS || !e->handle)
            die("create_event failed");
        e->none = 1;
    }
    return e;
}

static void op_record(void)
{
    mevent *e = take_event(1);
    int l = take() % LANES;
    lane *ln = &H.lanes[l];
    if (__tgt_rtl_record_event(0, e->handle, &ln->ai) != OFFLOAD_SUCCESS)
        die("record_event failed");
    e->none = ln->ops == 0;
    e->lane = l;
    e->seq = ln->last_seq;
    /* The queue may have run dry (its events then are gone): a failure is
     * then not seen. And the event recorded is the queue's last one left,
     * which may be an earlier operation of the lane than the model's last:
     * a wait_event on an event whose queue had run dry enqueues nothing.
     * So any failure of the lane since its synchronize may be reported. */
    e->st = ln->st == ST_OK ? ST_OK : ST_EITHER;
}

static void op_wait(void)
{
    mevent *e = take_event(0);
    int l = take() % LANES;
    if (!e->handle)
        return;
    lane *ln = &H.lanes[l];
    int32_t rc = __tgt_rtl_wait_event(0, e->handle, &ln->ai);
    expect_rc(rc, ST_OK, "wait_event");
    if (e->none)
        return;
    pend *x = new_pend(l, e->st);
    x->target_lane = e->lane;
    x->target_seq = e->seq;
    if (ln->after[e->lane] < e->seq)
        ln->after[e->lane] = e->seq;
}

static void op_sync_event(void)
{
    mevent *e = take_event(0);
    if (!e->handle)
        return;
    int32_t rc = __tgt_rtl_sync_event(0, e->handle);
    if (e->none) {
        expect_rc(rc, ST_OK, "sync_event of an event recorded on an empty queue");
        return;
    }
    expect_rc(rc, e->st, "sync_event");
    complete(e->lane, e->seq);
}

static void op_destroy(void)
{
    mevent *e = take_event(0);
    if (!e->handle)
        return;
    if (__tgt_rtl_destroy_event(0, e->handle) != OFFLOAD_SUCCESS)
        die("destroy_event failed");
    memset(e, 0, sizeof *e);
}

static void op_load(void)
{
    int valid;
    int32_t id = take_dev(&valid);
    /* The registered record, a copy of it (libomptarget 16 passes one), or
     * an image whose bytes lie elsewhere (not the program's). */
    static const char elsewhere[8];
    uint8_t which = take() % 8;
    int bad_image = which == 0;
    __tgt_device_image other = H.image;
    if (bad_image) {
        other.ImageStart = (void *)elsewhere;
        other.ImageEnd = (void *)(elsewhere + sizeof elsewhere);
    }
    synchronize_busy();     /* loading adds kernels and a global */
    __tgt_target_table *t = __tgt_rtl_load_binary(id, which < 2 ? &other : &H.image);
    if (!valid || bad_image) {
        if (t)
            die("load_binary of an unknown image or device gave a table");
        return;
    }
    if (!t || t->EntriesEnd - t->EntriesBegin != SIM_K_COUNT + 1)
        die("load_binary on device %d failed", (int)id);
    mdev *m = &H.dev[id];
    for (int k = 0; k < SIM_K_COUNT; k++) {
        m->kern[k] = (uint64_t)(uintptr_t)t->EntriesBegin[k].addr;
        if (m->kern[k] != sim_kernel_addr((sim_kernel)k))
            die("load_binary: entry %d has the wrong address", k);
    }
    uint64_t g = (uint64_t)(uintptr_t)t->EntriesBegin[SIM_K_COUNT].addr;
    if (g != (uint64_t)(uintptr_t)sim_world_global(world, id + 1))
        die("load_binary: the global's address is wrong");
    if (!m->loaded)
        new_region(id, g, SIM_GLOBAL_SIZE, R_GLOBAL, 1);   /* zeroed by the world */
    m->loaded = 1;
}

/* Calls that plugin-level checks must refuse, changing nothing. */
static void op_bad(void)
{
    int valid;
    uint8_t which = take();
    int32_t id = take_dev(&valid);
    int32_t d = valid ? id : 0;
    __tgt_async_info empty = {0};
    void *ev = NULL;
    uint8_t b[4];
    int32_t rc = OFFLOAD_FAIL;
    switch (which % 10) {
    case 0: rc = __tgt_rtl_data_submit(d, (void *)0x40, b, -1); break;
    case 1: rc = __tgt_rtl_data_retrieve(d, NULL, (void *)0x40, 4); break;
    case 2: rc = __tgt_rtl_data_submit_async(d, (void *)0x40, b, 4, NULL); break;
    case 3: rc = __tgt_rtl_data_delete(d, NULL); break;
    case 4: rc = __tgt_rtl_synchronize(d, NULL); break;
    case 5: rc = __tgt_rtl_create_event(d, NULL); break;
    case 6: rc = __tgt_rtl_record_event(d, NULL, &empty); break;
    case 7: rc = __tgt_rtl_sync_event(d, NULL); break;
    case 8: rc = __tgt_rtl_data_exchange(d, (void *)0x40, d, (void *)0x40, -5); break;
    default:
        if (__tgt_rtl_init_device(id) != (valid ? OFFLOAD_SUCCESS : OFFLOAD_FAIL))
            die("init_device(%d)", (int)id);
        if (__tgt_rtl_create_event(id, &ev) != (valid ? OFFLOAD_SUCCESS : OFFLOAD_FAIL))
            die("create_event(%d)", (int)id);
        if (ev && __tgt_rtl_destroy_event(id, ev) != OFFLOAD_SUCCESS)
            die("destroy_event(%d)", (int)id);
        if (__tgt_rtl_synchronize(id, &empty) != (valid ? OFFLOAD_SUCCESS : OFFLOAD_FAIL))
            die("synchronize(%d) of an empty async info", (int)id);
        return;
    }
    if (rc != OFFLOAD_FAIL)
        die("bad call %d on device %d succeeded", which % 10, (int)id);
    if (empty.Queue)
        die("a refused call created a queue");
}

/* ---- one input ------------------------------------------------------------------ */

static void setup(void)
{
    uint8_t h0 = take(), h1 = take(), h2 = take(), h3 = take(), h4 = take();
    for (int k = 0; k <= SIM_K_COUNT; k++)
        H.entries[k] = (__tgt_offload_entry){.addr = &H.entries[k], .name = (char *)sim_entry_name(k),
                                             .size = k == SIM_K_COUNT ? SIM_GLOBAL_SIZE : 0};
    /* A pattern image of 8 bytes: the stub's workers hold it (a LOAD by
     * reference finds it), as they would an image registered at start-up. */
    static uint8_t image_bytes[8];
    for (uint64_t i = 0; i < sizeof image_bytes; i++)
        image_bytes[i] = sim_image_byte(i);
    H.image = (__tgt_device_image){(void *)image_bytes, (void *)(image_bytes + 8),
                                   H.entries, H.entries + SIM_K_COUNT + 1};
    H.desc = (__tgt_bin_desc){1, &H.image, H.entries, H.entries + SIM_K_COUNT + 1};
    H.ndev = 1 + h0 % 3;

    sim_config cfg = sim_config_default();
    cfg.workers = H.ndev;
    cfg.node.frag_size = 1 + h1 % 16;
    cfg.node.window = 1 + (h1 >> 4) % 4;
    cfg.node.ncomms = 1 + (h1 >> 6) % 2;
    cfg.node.inline_max = h2 % 24;
    cfg.node.timeout_ns = TIMEOUT_NS;
    cfg.node.kernel_timeout_ns = 5 * TIMEOUT_NS;
    cfg.seed = 1 + h3 + 256u * h4;
    cfg.quiet = !verbose;
    cfg.host_node = &plugin.node;

    memset(&plugin, 0, sizeof plugin);
    plugin.settings = otm_settings_default();
    plugin.settings.core = cfg.node;
    plugin.settings.pool = (h0 >> 2) & 1;
    plugin.settings.pool_max = 32u << ((h0 >> 3) & 3);
    pthread_mutex_init(&plugin.lock, NULL);
    pthread_mutex_init(&plugin.pool_lock, NULL);
    pthread_mutex_init(&plugin.wait_lock, NULL);
    world = sim_world_create(&cfg);
    if (!world)
        die("cannot build the world");
    sim_world_act_as(world, 0);
    plugin.role = OTM_ROLE_HOST;
    /* The start-up gather's cards: the world's workers, their CPUs alone. */
    plugin.cards = otp_plugin_calloc((size_t)plugin.node.size, sizeof *plugin.cards);
    if (!plugin.cards || otp_devices_build(&plugin))
        die("the device table");
    if (otp_host_start(&plugin))
        die("otp_host_start");
    if (__tgt_rtl_number_of_devices() != H.ndev)
        die("number_of_devices is %d, not %d", __tgt_rtl_number_of_devices(), H.ndev);
    if (__tgt_rtl_register_lib(&H.desc) != OFFLOAD_SUCCESS)
        die("register_lib");
}

static void teardown(void)
{
    for (int l = 0; l < LANES; l++)
        synchronize(l);
    if (H.npend)
        die("harness: %d operations never completed in the model", H.npend);
    for (int i = 0; i < EVENTS; i++)
        if (H.ev[i].handle && __tgt_rtl_destroy_event(0, H.ev[i].handle) != OFFLOAD_SUCCESS)
            die("destroy_event at the end");
    if (__tgt_rtl_unregister_lib(&H.desc) != OFFLOAD_SUCCESS)
        die("unregister_lib");
    sim_result res = sim_world_run(world);
    if (res != SIM_OK)
        die("the workers did not finish after unregister_lib (%d)", (int)res);
    if ((res = sim_world_teardown(world)) != SIM_OK)
        die("teardown found something left behind (%d)", (int)res);
    sim_world_destroy(world);
    world = NULL;
    pthread_mutex_destroy(&plugin.lock);
    pthread_mutex_destroy(&plugin.pool_lock);
    pthread_mutex_destroy(&plugin.wait_lock);
    memset(&plugin, 0, sizeof plugin);
    for (int d = 0; d < SIM_MAX_WORKERS; d++)
        for (int i = 0; i < H.dev[d].nr; i++) {
            free(H.dev[d].r[i].val);
            free(H.dev[d].r[i].known);
        }
    for (int i = 0; i < H.nbufs; i++)
        free(H.bufs[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > INPUT_MAX)
        return -1;
    verbose = getenv("OTM_FUZZ_VERBOSE") != NULL;
    memset(&H, 0, sizeof H);
    H.p = data;
    H.n = size;
    setup();
    while (H.n) {
        /* The model's record of pending operations is bounded: a long
         * program drains its lanes now and then (each operation adds at
         * most one). Every lane: a wait_event that enqueued nothing is
         * pending in the model on a lane without a queue. */
        for (int l = 0; H.npend == MAX_PENDING && l < LANES; l++)
            synchronize(l);
        int op = take() % OPS;
        if (verbose) {
            static const char *const names[OPS] = {
                "ALLOC", "DELETE", "SUBMIT", "RETRIEVE", "EXCHANGE", "RUN", "SYNCHRONIZE",
                "RECORD", "WAIT_EVENT", "SYNC_EVENT", "DESTROY", "LOAD", "BAD", "QUERY"};
            fprintf(stderr, "fuzz_api: %s\n", names[op]);
        }
        switch (op) {
        case OP_ALLOC: op_alloc(); break;
        case OP_DELETE: op_delete(); break;
        case OP_SUBMIT: run_transfer(OP_SUBMIT); break;
        case OP_RETRIEVE: run_transfer(OP_RETRIEVE); break;
        case OP_EXCHANGE: op_exchange(); break;
        case OP_RUN: op_run(); break;
        case OP_SYNCHRONIZE: synchronize(take() % LANES); break;
        case OP_RECORD: op_record(); break;
        case OP_WAIT: op_wait(); break;
        case OP_SYNC_EVENT: op_sync_event(); break;
        case OP_DESTROY: op_destroy(); break;
        case OP_LOAD: op_load(); break;
        case OP_BAD: op_bad(); break;
        default: query(take() % LANES); break;
        }
    }
    teardown();
    return 0;
}
