/*
 * sim/world.c - the world harness: ranks, actors, the scheduler and its
 * choices (replay, partial-order reduction), virtual time, the node hooks
 * and the checks. Each worker's device is sim/device.c; the walk over
 * every schedule that drives the choices is sim/explore.c.
 */
#include "world.h"

#include "oracle.h"
#include "pages.h"
#include "otm/wire.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ACTORS (SIM_MAX_QUEUES + 2 + 3 * SIM_MAX_WORKERS)
#define MAX_CHOICES (MAX_ACTORS + 256)

/* A_PAGES is rank 0's page server, A_PAGER a worker's pager (sim/pages.h),
 * both only in a world with pages. */
typedef enum actor_kind {
    A_QUEUE, A_EXIT, A_GATE, A_HANDLER, A_THREAD, A_PAGES, A_PAGER
} actor_kind;

/* A choice the scheduler can make: run an actor or deliver on a channel. */
typedef struct sim_move {
    int actor;              /* actor index, or -1 for a delivery */
    int eager;              /* delivery of an eager message */
    sim_chan ch;
} sim_move;

typedef struct actor {
    actor_kind kind;
    int rank;
    otm_queue *queue;
    sim_thread_fn step;     /* A_THREAD: the test's host thread */
    void *ctx;
    int finished;           /* A_THREAD: its step returned -1 */
    int idle;               /* ran without moving; wakes on news */
} actor;

#define PROGRESS_DEPTH 8

/* Per-rank context of the node hooks: memory accounting and faults. */
typedef struct rank_ctx {
    sim_world *w;
    int rank;
    /* The events otm_event_progress is moving on this rank, innermost
     * last (an event moves its probe): the owner of each MPI call. */
    const otm_event *moving[PROGRESS_DEPTH];
    uint64_t before[PROGRESS_DEPTH];    /* their progress_mark on entry */
    int depth;
    int locked;             /* the core holds its lock (lock hooks) */
    uint64_t allocs;        /* allocations made (for fail_alloc) */
    uint64_t fail_at;       /* fail the allocation with this number */
    int64_t live;           /* allocations not yet released */
    struct block { uintptr_t at; size_t size; } *blocks;   /* ... which */
    size_t nblocks, blocks_cap;
    sim_device dev;         /* the worker's device (sim/device.h) */
    uint64_t sleep_id;      /* the SIM_K_SLEEP event the handler waits on */
    uint64_t sleep_until;   /* ... until this virtual time */
} rank_ctx;

struct sim_world {
    sim_config cfg;
    sim_net *net;
    int nranks;
    otm_node own[SIM_MAX_WORKERS + 1];
    otm_node *nodes[SIM_MAX_WORKERS + 1];   /* own[r], or cfg.host_node */
    int node_up[SIM_MAX_WORKERS + 1];
    rank_ctx ctx[SIM_MAX_WORKERS + 1];
    otm_queue queues[SIM_MAX_QUEUES];
    int nqueues;
    int nthreads;           /* A_THREAD actors; with nqueues, at most
                             * SIM_MAX_QUEUES */
    actor actors[MAX_ACTORS];
    int nactors;
    int running;            /* actor being run, or -1 */
    uint64_t now, steps, rng, hash;
    uint64_t moves;                 /* steps in which something changed */
    uint64_t epoch[SIM_MAX_WORKERS + 1];
    sim_host_seen seen;
    uint16_t *taken, *options;
    size_t ntrace, trace_cap;
    size_t mark;                    /* trace index where set-up ended */
    int settled;                    /* sim_world_settle: no more branches */
    uint16_t *env_replay;           /* OTM_SIM_CHOICES, parsed */
    sim_move sleep[MAX_CHOICES];    /* sleep set of the partial-order reduction */
    size_t nsleep;
    char *choice_text;
    sim_oracle *oracle;             /* the host's tags, recorded apart */
    sim_pages *pages;               /* sim_config.pages, else NULL */
    int failed;
};

static int violation(sim_world *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- what the host saw of the devices -------------------------------------- */

static void host_output(void *ctx, int rank, int stream, const uint8_t *buf, size_t len)
{
    rank_ctx *rc = ctx;
    sim_host_seen *s = &rc->w->seen;
    (void)rank;
    if (stream == 2) {
        s->err_bytes += len;
        return;
    }
    /* Each worker's stdout restarts the pattern where it left off; the
     * tests print on one worker, so one running index is enough. */
    for (size_t i = 0; i < len; i++)
        s->out_wrong += buf[i] != sim_image_byte(s->out_bytes + i);
    s->out_bytes += len;
}

static void host_fault(void *ctx, int rank, uint16_t unit, uint64_t kernel,
                       const otm_region_fault *f)
{
    rank_ctx *rc = ctx;
    (void)rank, (void)unit, (void)kernel;
    rc->w->seen.faults++;
    rc->w->seen.last_signo = f->signo;
}

static void host_worker_lost(void *ctx, int rank, otm_status why)
{
    rank_ctx *rc = ctx;
    (void)why;
    if (rank >= 1 && rank <= SIM_MAX_WORKERS)
        rc->w->seen.lost[rank]++;
}

static void host_region_timeout(void *ctx, int rank, uint16_t unit, uint64_t kernel)
{
    rank_ctx *rc = ctx;
    (void)unit, (void)kernel;
    if (rank >= 1 && rank <= SIM_MAX_WORKERS)
        rc->w->seen.timeouts[rank]++;
}

const sim_host_seen *sim_world_host_seen(const sim_world *w)
{
    return &w->seen;
}

uint64_t sim_world_images_loaded(const sim_world *w, int rank)
{
    return (uint64_t)w->ctx[rank].dev.images;
}

/* ---- hooks ------------------------------------------------------------------ */

/* Every block the core allocates is followed by GUARD bytes of GUARD_BYTE,
 * checked when the block is released and at teardown: a write past the
 * end of a block, which nothing else in the world would see (memcheck
 * does, in the valgrind label only), is a violation. */
#define GUARD 16
#define GUARD_BYTE 0xfd

static void *h_alloc(void *ctx, size_t size)
{
    rank_ctx *rc = ctx;
    if (++rc->allocs == rc->fail_at)
        return NULL;
    if (rc->nblocks == rc->blocks_cap) {
        size_t cap = rc->blocks_cap ? 2 * rc->blocks_cap : 32;
        struct block *grown = realloc(rc->blocks, cap * sizeof *grown);
        if (!grown)
            return NULL;
        rc->blocks = grown;
        rc->blocks_cap = cap;
    }
    size_t n = size ? size : 1;
    uint8_t *p = n <= SIZE_MAX - GUARD ? malloc(n + GUARD) : NULL;
    if (!p)
        return NULL;
    memset(p + n, GUARD_BYTE, GUARD);
    rc->live++;
    rc->blocks[rc->nblocks++] = (struct block){(uintptr_t)p, n};
    return p;
}

/* 0 when block b's guard is intact, else a violation of rank rc's. */
static int check_guard(rank_ctx *rc, const struct block *b)
{
    const uint8_t *g = (const uint8_t *)b->at + b->size;
    for (int i = 0; i < GUARD; i++)
        if (g[i] != GUARD_BYTE)
            return violation(rc->w, "rank %d: a block of %zu bytes was written "
                             "%d bytes past its end", rc->rank, b->size, i + 1);
    return 0;
}

static void h_release(void *ctx, void *p)
{
    rank_ctx *rc = ctx;
    for (size_t i = 0; i < rc->nblocks; i++)
        if (rc->blocks[i].at == (uintptr_t)p) {
            check_guard(rc, &rc->blocks[i]);
            rc->blocks[i] = rc->blocks[--rc->nblocks];
            break;
        }
    rc->live--;
    free(p);
}

/* The core's lock is a plain mutex in the plugin: taking it twice would
 * hang a thread, releasing it unheld is undefined, and a call that returns
 * holding it stops every other thread. One thread runs here, so the lock
 * is a flag, checked on every use and after every step (check_rank). */
static void h_lock(void *ctx)
{
    rank_ctx *rc = ctx;
    if (rc->locked)
        violation(rc->w, "rank %d: the core took its lock while holding it", rc->rank);
    rc->locked = 1;
}

static void h_unlock(void *ctx)
{
    rank_ctx *rc = ctx;
    if (!rc->locked)
        violation(rc->w, "rank %d: the core released its lock without holding it",
                  rc->rank);
    rc->locked = 0;
}

static int inside(uintptr_t at, size_t len, const void *base, size_t size)
{
    uintptr_t b = (uintptr_t)base;
    return at >= b && at - b <= size && len <= size - (at - b);
}

/* sim_net_set_buffer_check's function: a worker's MPI buffers are its own
 * allocations, its node (the sink), its device's memory or its pager's
 * (sim/pages.h). Rank 0 is the test's host program, and a call made
 * outside every actor is the test playing a rank by hand: their buffers
 * are the test's. */
static int own_buffer(void *ctx, int rank, const void *buf, size_t len)
{
    sim_world *w = ctx;
    const rank_ctx *rc = &w->ctx[rank];
    uintptr_t at = (uintptr_t)buf;
    if (rank == 0 || w->running < 0 || inside(at, len, rc, sizeof *rc) ||
        inside(at, len, w->nodes[rank], sizeof *w->nodes[rank]) ||
        (w->pages && inside(at, len, &w->pages->pager[rank], sizeof w->pages->pager[rank])))
        return 1;
    for (size_t i = 0; i < rc->nblocks; i++)
        if (inside(at, len, (const void *)rc->blocks[i].at, rc->blocks[i].size))
            return 1;
    return 0;
}

static uint64_t h_now(void *ctx)
{
    return ((rank_ctx *)ctx)->w->now;
}

/* The other actors run under their own ranks: the blocking call resumes
 * as its own rank, also when it was made from outside any actor (a test's
 * host program in phases). */
static void h_idle(void *ctx)
{
    rank_ctx *rc = ctx;
    sim_world_step_others(rc->w);
    sim_net_set_rank(rc->w->net, rc->rank);
}

/* What a progress that moved nothing leaves as it was (otm/event.h:
 * otm_event_progress returns 1 when the step or state moved, a reply was
 * posted or a fragment completed): the idle policy trusts that answer. */
static uint64_t progress_mark(const otm_event *ev)
{
    return (uint64_t)ev->state | (uint64_t)ev->step << 8 |
           (uint64_t)ev->replied << 16 | ev->moved << 24;
}

static void h_progress(void *ctx, otm_event *ev, int moved)
{
    rank_ctx *rc = ctx;
    if (moved >= 0) {
        rc->depth--;
        if (!moved && progress_mark(ev) != rc->before[rc->depth])
            violation(rc->w, "rank %d: event %" PRIu64 " (%s) changed from step %s "
                      "to %s, state %s, but its progress said nothing moved", rc->rank,
                      ev->id, otm_kind_name(ev->kind),
                      otm_step_name((int)(rc->before[rc->depth] >> 8 & 0xff)),
                      otm_step_name(ev->step), otm_state_name(ev->state));
        return;
    }
    if (rc->depth == PROGRESS_DEPTH) {
        fprintf(stderr, "sim: events nested deeper than %d in progress\n", PROGRESS_DEPTH);
        abort();                /* the harness's own limit */
    }
    rc->before[rc->depth] = progress_mark(ev);
    rc->moving[rc->depth++] = ev;
}

/* The number both sides of an operation share: the host event's id, which
 * a worker's event reads in the notification that made it. */
static uint64_t operation_of(const otm_event *ev)
{
    otm_notify n;
    if (ev->side == OTM_ORIGIN)
        return ev->id;
    if (!ev->msg || otm_wire_get_notify(ev->msg, ev->msg_len, &n) == OTM_ERR_BAD_MESSAGE)
        return 0;
    return n.id;
}

/* sim_net_set_owner's function: the event making the current MPI call. */
static uint64_t call_owner(void *ctx, int rank)
{
    const rank_ctx *rc = &((sim_world *)ctx)->ctx[rank];
    return rc->depth ? operation_of(rc->moving[rc->depth - 1]) : 0;
}

static otm_hooks hooks_for(rank_ctx *rc)
{
    otm_hooks h = {
        .alloc = h_alloc, .release = h_release, .now = h_now,
        .lock = h_lock, .unlock = h_unlock,
        .idle = h_idle, .progress = h_progress, .ctx = rc,
        .region_output = host_output, .region_fault = host_fault,
        .worker_lost = host_worker_lost, .region_timeout = host_region_timeout,
        .device = sim_device_ops(&rc->dev),
    };
    return h;
}

/* ---- creation ------------------------------------------------------------------ */

sim_config sim_config_default(void)
{
    sim_config c = {
        .workers = 2, .tag_ub = 32767, .eager_limit = 8192, .eager_at_delivery = 1,
        .node = otm_config_default(), .mode = SIM_RANDOM, .seed = 1,
    };
    c.node.frag_size = 4;
    c.node.inline_max = 4;
    c.node.ncomms = 2;
    return c;
}

static void add_actor(sim_world *w, actor_kind kind, int rank, otm_queue *q)
{
    w->actors[w->nactors++] = (actor){.kind = kind, .rank = rank, .queue = q};
}

static int init_ranks(sim_world *w)
{
    for (int r = 0; r < w->nranks; r++) {
        rank_ctx *rc = &w->ctx[r];
        rc->w = w;
        rc->rank = r;
        rc->dev.units = r > 0 ? (uint16_t)w->cfg.units : 0;
        otm_hooks h = hooks_for(rc);
        sim_net_set_rank(w->net, r);
        int provided = 0;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
            return -1;
        otm_status st = otm_node_init(w->nodes[r], &w->cfg.node, &h);
        if (st) {
            fprintf(stderr, "sim: rank %d: otm_node_init: %s\n", r,
                    otm_status_name(st));
            return -1;
        }
        w->node_up[r] = 1;
        /* Without pages, a SIM_K_USM region has nobody to fetch its bytes. */
        rc->dev.usm_status = OTM_ERR_KERNEL;
        if (r > 0) {
            add_actor(w, A_GATE, r, NULL);
            add_actor(w, A_HANDLER, r, NULL);
            if (w->pages)
                add_actor(w, A_PAGER, r, NULL);
        }
    }
    add_actor(w, A_EXIT, 0, NULL);
    if (w->pages)
        add_actor(w, A_PAGES, 0, NULL);
    return 0;
}

/* OTM_SIM_SEED and OTM_SIM_CHOICES, as printed with a failure, override the
 * test's own schedule so that the failing run comes back. */
static void replay_from_env(sim_world *w)
{
    const char *seed = getenv("OTM_SIM_SEED");
    const char *choices = getenv("OTM_SIM_CHOICES");
    if (seed && w->cfg.mode == SIM_RANDOM)
        w->cfg.seed = strtoull(seed, NULL, 0);
    if (!choices)
        return;
    size_t max = strlen(choices) + 1;
    w->env_replay = malloc(max * sizeof *w->env_replay);
    long n = w->env_replay ? sim_choices_parse(choices, w->env_replay, max) : -1;
    if (n < 0) {
        fprintf(stderr, "sim: OTM_SIM_CHOICES is not a choice string\n");
        exit(2);
    }
    w->cfg.mode = SIM_REPLAY;
    w->cfg.replay = w->env_replay;
    w->cfg.nreplay = (size_t)n;
}

sim_world *sim_world_create(const sim_config *cfg)
{
    if (cfg->workers < 1 || cfg->workers > SIM_MAX_WORKERS || cfg->units < 0 ||
        cfg->units > SIM_MAX_UNITS)
        return NULL;
    sim_world *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->cfg = *cfg;
    replay_from_env(w);
    if (!w->cfg.max_steps)
        w->cfg.max_steps = 1000000;
    w->nranks = cfg->workers + 1;
    for (int r = 0; r < w->nranks; r++)
        w->nodes[r] = &w->own[r];
    if (cfg->host_node)
        w->nodes[0] = cfg->host_node;
    w->running = -1;
    w->rng = w->cfg.seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    w->hash = 0xcbf29ce484222325ull;
    sim_net_config nc = {w->nranks, cfg->tag_ub, cfg->eager_limit,
                         cfg->eager_at_delivery, cfg->link, cfg->late_send_tests};
    w->net = sim_net_create(&nc);
    w->oracle = sim_oracle_new();
    w->pages = cfg->pages ? calloc(1, sizeof *w->pages) : NULL;
    if (!w->net || !w->oracle || (cfg->pages && !w->pages)) {
        sim_net_destroy(w->net);
        sim_oracle_free(w->oracle);
        free(w->pages);
        free(w);
        return NULL;
    }
    sim_net_install(w->net);
    sim_net_set_owner(w->net, call_owner, w);
    sim_net_set_buffer_check(w->net, own_buffer, w);
    if (init_ranks(w)) {
        sim_world_destroy(w);
        return NULL;
    }
    return w;
}

/* Gives up the page calls in flight, each as its rank, on the ranks
 * still up. */
static void end_pages(sim_world *w)
{
    for (int r = 0; w->pages && r < w->nranks; r++) {
        if (!w->node_up[r])
            continue;
        sim_net_set_rank(w->net, r);
        if (r == 0)
            sim_pages_end_server(w->pages, w->nodes[0]);
        else
            sim_pages_end_pager(w->pages, w->nodes[r], r);
    }
}

void sim_world_destroy(sim_world *w)
{
    if (!w)
        return;
    end_pages(w);
    for (int r = 0; r < w->nranks; r++) {
        if (!w->node_up[r])
            continue;
        sim_net_set_rank(w->net, r);
        otm_node_fini(w->nodes[r]);
        otm_node_release(w->nodes[r]);
        w->node_up[r] = 0;
    }
    if (sim_net_installed() == w->net)
        sim_net_install(NULL);
    sim_net_destroy(w->net);
    sim_oracle_free(w->oracle);
    for (int r = 0; r < w->nranks; r++) {
        free(w->ctx[r].blocks);
        sim_device_fini(&w->ctx[r].dev);
    }
    free(w->taken);
    free(w->options);
    free(w->choice_text);
    free(w->env_replay);
    free(w->pages);
    free(w);
}

otm_node *sim_world_node(sim_world *w, int rank) { return w->nodes[rank]; }
uint8_t *sim_world_host_memory(sim_world *w) { return w->pages ? w->pages->host : NULL; }

const otm_page_server *sim_world_page_server(const sim_world *w)
{
    return w->pages ? &w->pages->server : NULL;
}
uint8_t *sim_world_global(sim_world *w, int rank) { return w->ctx[rank].dev.global; }
sim_device *sim_world_device(sim_world *w, int rank) { return &w->ctx[rank].dev; }
uint64_t sim_world_steps(const sim_world *w) { return w->steps; }
uint64_t sim_world_hash(const sim_world *w) { return w->hash; }
uint64_t sim_world_time(const sim_world *w) { return w->now; }

uint64_t sim_world_leaked_allocs(const sim_world *w, int rank)
{
    return (uint64_t)w->ctx[rank].live;
}

otm_queue *sim_world_queue(sim_world *w)
{
    if (w->nqueues + w->nthreads == SIM_MAX_QUEUES)
        return NULL;
    otm_queue *q = &w->queues[w->nqueues++];
    sim_net_set_rank(w->net, 0);
    otm_queue_init(w->nodes[0], q);
    add_actor(w, A_QUEUE, 0, q);
    return q;
}

int sim_world_thread(sim_world *w, sim_thread_fn step, void *ctx)
{
    if (w->nqueues + w->nthreads == SIM_MAX_QUEUES)
        return -1;
    w->nthreads++;
    w->actors[w->nactors++] = (actor){.kind = A_THREAD, .rank = 0, .step = step,
                                      .ctx = ctx};
    return 0;
}

uint64_t sim_world_wrapped_calls(const sim_world *w)
{
    uint64_t n = 0;
    for (int r = 0; r < w->nranks; r++)
        for (int f = 0; f < SIM_FN_COUNT; f++)
            n += sim_net_calls(w->net, r, (sim_fn)f);
    return n;
}

void sim_world_act_as(sim_world *w, int rank)
{
    sim_net_set_rank(w->net, rank);
}

/* ---- faults -------------------------------------------------------------------- */

void sim_world_fail_call(sim_world *w, int rank, sim_fn fn, uint64_t nth)
{
    sim_net_fail_call(w->net, rank, fn, nth);
}

void sim_world_fail_alloc(sim_world *w, int rank, uint64_t nth)
{
    w->ctx[rank].fail_at = w->ctx[rank].allocs + nth;
}

void sim_world_delay(sim_world *w, int rank, uint64_t nth_isend, uint64_t ns)
{
    sim_net_delay(w->net, rank, nth_isend, w->now + ns);
}

void sim_world_stop_rank(sim_world *w, int rank)
{
    sim_net_stop_rank(w->net, rank);
}

void sim_world_freeze_rank(sim_world *w, int rank)
{
    sim_net_freeze_rank(w->net, rank);
}

static void wake_rank(sim_world *w, int rank)
{
    for (int i = 0; i < w->nactors; i++)
        if (w->actors[i].rank == rank)
            w->actors[i].idle = 0;
}

/* 1 if a rank other than `rank` has unseen news (an epoch moved). */
static int foreign_news(const sim_world *w, int rank)
{
    for (int r = 0; r < w->nranks; r++)
        if (r != rank && sim_net_epoch(w->net, r) != w->epoch[r])
            return 1;
    return 0;
}

/* Wakes the actors of every rank that something outside it changed. */
static void wake_changed(sim_world *w)
{
    for (int r = 0; r < w->nranks; r++) {
        uint64_t e = sim_net_epoch(w->net, r);
        if (e != w->epoch[r]) {
            w->epoch[r] = e;
            wake_rank(w, r);
        }
    }
}

static void wake_all(sim_world *w)
{
    for (int i = 0; i < w->nactors; i++)
        w->actors[i].idle = 0;
}

void sim_world_advance(sim_world *w, uint64_t ns)
{
    w->now += ns;
    sim_net_set_time(w->net, w->now);
    wake_all(w);
}

/* ---- choices ------------------------------------------------------------------- */

static uint64_t next_rng(sim_world *w)
{
    /* splitmix64: tiny, fast, good enough to spread schedules. */
    uint64_t z = (w->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void record(sim_world *w, size_t c, size_t n)
{
    if (w->ntrace == w->trace_cap) {
        size_t cap = w->trace_cap ? 2 * w->trace_cap : 256;
        uint16_t *t = realloc(w->taken, cap * sizeof *t);
        uint16_t *o = t ? realloc(w->options, cap * sizeof *o) : NULL;
        if (!t || !o) {
            fprintf(stderr, "sim: out of memory recording the trace\n");
            abort();
        }
        w->taken = t;
        w->options = o;
        w->trace_cap = cap;
    }
    w->taken[w->ntrace] = (uint16_t)c;
    w->options[w->ntrace] = (uint16_t)n;
    w->ntrace++;
}

/* Picks one of n > 0 options. Single options are no choice: not recorded. */
static size_t choose(sim_world *w, size_t n)
{
    size_t c = 0, pos = w->ntrace;
    if (n == 1)
        return 0;
    switch (w->cfg.mode) {
    case SIM_RANDOM: c = (size_t)(next_rng(w) % n); break;
    case SIM_REPLAY: c = pos < w->cfg.nreplay ? w->cfg.replay[pos] : 0; break;
    case SIM_BYTES: c = pos < w->cfg.nbytes ? w->cfg.bytes[pos] : 0; break;
    }
    c %= n;
    record(w, c, n);
    return c;
}

static const char digits[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

const char *sim_world_choices(sim_world *w)
{
    free(w->choice_text);
    w->choice_text = malloc(w->ntrace * 8 + 1);
    if (!w->choice_text)
        return "";
    char *p = w->choice_text;
    for (size_t i = 0; i < w->ntrace; i++) {
        if (w->taken[i] < 62)
            *p++ = digits[w->taken[i]];
        else
            p += sprintf(p, "{%u}", (unsigned)w->taken[i]);
    }
    *p = '\0';
    return w->choice_text;
}

long sim_choices_parse(const char *text, uint16_t *out, size_t max)
{
    size_t n = 0;
    for (const char *p = text; *p; p++) {
        unsigned long v;
        if (*p == '{') {
            char *end;
            v = strtoul(p + 1, &end, 10);
            if (*end != '}' || v > UINT16_MAX)
                return -1;
            p = end;
        } else {
            const char *d = strchr(digits, *p);
            if (!d || !*p)
                return -1;
            v = (unsigned long)(d - digits);
        }
        if (n == max)
            return -1;
        out[n++] = (uint16_t)v;
    }
    return (long)n;
}

void sim_world_mark(sim_world *w)
{
    w->mark = w->ntrace;
}

void sim_world_settle(sim_world *w)
{
    w->settled = 1;
    w->nsleep = 0;
}

void sim_world_take_trace(sim_world *w, sim_trace *out)
{
    out->from = w->mark;
    out->taken = w->taken;
    out->options = w->options;
    out->len = w->ntrace;
    w->taken = w->options = NULL;
    w->ntrace = w->trace_cap = 0;
}

void sim_trace_free(sim_trace *t)
{
    free(t->taken);
    free(t->options);
    memset(t, 0, sizeof *t);
}

/* ---- actors ------------------------------------------------------------------ */

static int rank_alive(const sim_world *w, int rank)
{
    return w->node_up[rank] && !sim_net_rank_stopped(w->net, rank);
}

/* The host's exit runs once its queues drained, as unregister_lib does
 * after libomptarget synchronised everything. */
static int queues_empty(const sim_world *w)
{
    for (int i = 0; i < w->nqueues; i++)
        if (!otm_queue_empty(&w->queues[i]))
            return 0;
    return 1;
}

/* SIM_K_SLEEP runs for its first argument in virtual time: the handler of
 * its rank does not take it before then, as a handler thread inside a long
 * region takes nothing else. Returns the time it sleeps until, or 0. */
static uint64_t kernel_sleeping(const sim_world *w, int rank)
{
    const otm_event *ev = w->nodes[rank]->kern_head;
    rank_ctx *rc = (rank_ctx *)&w->ctx[rank];
    if (!ev || ev->claimed || ev->p.execute.kernel != sim_kernel_addr(SIM_K_SLEEP) ||
        ev->msg_len < OTM_WIRE_NOTIFY_SIZE + 8)
        return 0;
    if (rc->sleep_id != ev->id) {       /* first seen now: it starts now */
        uint64_t ns = 0;
        for (int i = 7; i >= 0; i--)
            ns = (ns << 8) | ev->msg[OTM_WIRE_NOTIFY_SIZE + i];
        rc->sleep_id = ev->id;
        rc->sleep_until = w->now + ns;
    }
    return rc->sleep_until > w->now ? rc->sleep_until : 0;
}

/* An actor worth offering: awake, alive, and with something to do. */
static int runnable(const sim_world *w, const actor *a)
{
    const otm_node *n = w->nodes[a->rank];
    if (a->idle || !rank_alive(w, a->rank))
        return 0;
    switch (a->kind) {
    case A_QUEUE: return !otm_queue_empty(a->queue);
    /* The world's own end (sim_world_run), unless a thread claimed the
     * end: then that thread runs the exit, as the plugin's does. */
    case A_EXIT:
        return n->life == OTM_LIFE_EXITING && queues_empty(w) && !n->end_claimed;
    case A_THREAD: return !a->finished;
    case A_GATE: return n->life != OTM_LIFE_DONE || n->data_head != NULL;
    case A_HANDLER:
        return n->kern_head != NULL && !kernel_sleeping(w, a->rank) &&
               !(w->pages && sim_pages_holding(w->pages, n, a->rank));
    /* The page server and a pager only when their step would move. */
    case A_PAGES: return sim_pages_server_ready(w->pages, n, w->net);
    case A_PAGER: return sim_pages_pager_ready(w->pages, n, a->rank, w->net);
    }
    return 0;
}

static int run_actor(sim_world *w, int i)
{
    actor *a = &w->actors[i];
    otm_node *n = w->nodes[a->rank];
    int prev = w->running, moved = 0;
    w->running = i;
    sim_net_set_rank(w->net, a->rank);
    switch (a->kind) {
    case A_QUEUE: moved = otm_queue_progress(n, a->queue); break;
    case A_EXIT: moved = otm_host_exit_progress(n); break;
    case A_GATE: moved = otm_gate_poll_once(n) | otm_handler_reply_once(n); break;
    case A_HANDLER: moved = otm_handler_run_once(n); break;
    case A_PAGES: moved = sim_pages_serve(w->pages, n); break;
    case A_PAGER:
        moved = sim_pages_step(w->pages, n, a->rank, &w->ctx[a->rank].dev);
        break;
    case A_THREAD:
        moved = a->step(w, a->ctx);
        a->finished = moved < 0;
        moved = moved != 0;
        break;
    }
    w->running = prev;
    if (prev >= 0)
        sim_net_set_rank(w->net, w->actors[prev].rank);
    if (moved)
        wake_rank(w, a->rank);
    else
        a->idle = 1;
    if (w->cfg.por && foreign_news(w, a->rank))
        violation(w, "an actor of rank %d changed another rank: the "
                  "reduction's independence does not hold", a->rank);
    wake_changed(w);
    return moved;
}

static void mix(sim_world *w, uint64_t v)
{
    w->hash ^= v + 0x9e3779b97f4a7c15ull + (w->hash << 6) + (w->hash >> 2);
}

/* ---- invariants ---------------------------------------------------------------- */

static void violation_v(sim_world *w, const char *fmt, va_list ap)
{
    if (!w->cfg.quiet) {
        fprintf(stderr, "sim: invariant violated at step %" PRIu64 ": ", w->steps);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    w->failed = SIM_VIOLATION;
}

static int violation(sim_world *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    violation_v(w, fmt, ap);
    va_end(ap);
    return -1;
}

void sim_world_violation(sim_world *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    violation_v(w, fmt, ap);
    va_end(ap);
}

/* The host's event tags are unique per communicator whatever the peer;
 * a worker's are unique per peer; EXIT's tag is shared across peers. */
static int same_key(const otm_event *a, const otm_event *b)
{
    return a->comm == b->comm && a->tag == b->tag &&
           ((a->side == OTM_ORIGIN && a->tag >= OTM_TAG_FIRST) || a->rank == b->rank);
}

static int check_event(sim_world *w, int r, const otm_event *ev)
{
    if (ev->state > OTM_FAILED || ev->step > OTM_AT_END)
        return violation(w, "rank %d event %" PRIu64 " has a bad state", r, ev->id);
    if (ev->state == OTM_FINISHED && ev->after && !otm_event_ended(ev->after))
        return violation(w, "event %" PRIu64 " finished before event %" PRIu64
                         ", which it was chained behind", ev->id, ev->after->id);
    if (otm_event_ended(ev)) {
        for (int s = 0; s < OTM_SLOTS; s++)
            if (ev->req[s] != MPI_REQUEST_NULL)
                return violation(w, "rank %d event %" PRIu64 " ended with a live request",
                                 r, ev->id);
        return 0;
    }
    if (ev->tag >= OTM_TAG_FIRST && ev->side == OTM_ORIGIN &&
        !otm_tags_is_live(&w->nodes[r]->tags[ev->comm], ev->tag))
        return violation(w, "event %" PRIu64 " holds tag %d that is not live", ev->id, ev->tag);
    return 0;
}

/* No two live events of a rank share (communicator, tag[, peer]). */
static int check_keys(sim_world *w, int r, const otm_event **held, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (held[i]->side == held[j]->side && same_key(held[i], held[j]))
                return violation(w, "rank %d: events %" PRIu64 " and %" PRIu64
                                 " share comm %d tag %d", r, held[i]->id,
                                 held[j]->id, held[i]->comm, held[i]->tag);
    return 0;
}

static int check_rank(sim_world *w, int r)
{
    const otm_event *held[256];
    size_t n = 0;
    if (w->ctx[r].locked)
        return violation(w, "rank %d: a call of the core returned holding its lock", r);
    for (const otm_event *ev = w->nodes[r]->all; ev; ev = ev->all_next) {
        if (check_event(w, r, ev))
            return -1;
        if (!otm_event_ended(ev) && ev->tag >= 0 && n < sizeof held / sizeof *held)
            held[n++] = ev;
    }
    return check_keys(w, r, held, n);
}

/* The oracle's record of the host's tags (sim/oracle.h). */
static int check_tags(sim_world *w)
{
    otm_node *workers[SIM_MAX_WORKERS + 1] = {NULL};
    char why[256];
    if (!w->node_up[0])
        return 0;
    for (int r = 1; r < w->nranks; r++)
        workers[r] = w->node_up[r] ? w->nodes[r] : NULL;
    if (sim_oracle_check(w->oracle, w->nodes[0], workers, w->nranks - 1, w->net, why,
                         sizeof why))
        return violation(w, "%s", why);
    return 0;
}

static int check_invariants(sim_world *w)
{
    const char *first;
    if (sim_net_misuse(w->net))
        return violation(w, "MPI misused (%" PRIu64 " times)", sim_net_misuse(w->net));
    if (sim_net_mismatches(w->net, &first))
        return violation(w, "%s", first);
    for (int r = 0; r < w->nranks; r++)
        if (w->node_up[r] && check_rank(w, r))
            return -1;
    return check_tags(w);
}

/* ---- partial-order reduction ---------------------------------------------------- */

/* Two moves commute when they touch disjoint ranks (or, with pages,
 * different sides of one: move_side below): an actor touches its
 * rank; a delivery touches its destination, and its source too when the
 * message is a rendezvous one (the send request completes there). Sends
 * only append to a channel's tail, which a delivery (taking its head) does
 * not see. */
static int ranks_conflict(const sim_world *w, const sim_move *a, const sim_move *b)
{
    int ra[2], rb[2], na = 0, nb = 0;
    if (a->actor >= 0) {
        ra[na++] = w->actors[a->actor].rank;
    } else {
        ra[na++] = a->ch.dst;
        if (!a->eager)
            ra[na++] = a->ch.src;
    }
    if (b->actor >= 0) {
        rb[nb++] = w->actors[b->actor].rank;
    } else {
        rb[nb++] = b->ch.dst;
        if (!b->eager)
            rb[nb++] = b->ch.src;
    }
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (ra[i] == rb[j])
                return 1;
    return 0;
}

/* Which side of a rank a move touches: SIDE_PAGES for the page actors
 * (rank 0's server, a worker's pager) and messages on the pages
 * communicator, SIDE_EVENTS for the queue and gate actors and the other
 * messages, SIDE_BOTH for the rest. The page code (src/core/page.c,
 * sim/pages.c) calls MPI on the pages communicator only and reads the
 * world's host memory and the pager's state, which neither the queues
 * nor the gate read; the handler reads what the pager leaves for the
 * region (dev->usm_status), a host thread writes the host memory and the
 * exit ends everything, so those three conflict with both. What the two
 * sides share (the rank's MPI call and allocation counts, request
 * handles' numbers) changes no behaviour but an injected fault's target,
 * so the exhaustive cases run with no faults. */
enum { SIDE_EVENTS = 1, SIDE_PAGES = 2, SIDE_BOTH = 3 };

static int move_side(const sim_world *w, const sim_move *m)
{
    if (!w->pages)
        return SIDE_BOTH;
    if (m->actor < 0)
        return m->ch.comm == w->nodes[m->ch.dst]->pages ? SIDE_PAGES : SIDE_EVENTS;
    switch (w->actors[m->actor].kind) {
    case A_PAGES: case A_PAGER: return SIDE_PAGES;
    case A_QUEUE: case A_GATE: return SIDE_EVENTS;
    default: return SIDE_BOTH;
    }
}

static int moves_conflict(const sim_world *w, const sim_move *a, const sim_move *b)
{
    return (move_side(w, a) & move_side(w, b)) && ranks_conflict(w, a, b);
}

static int same_move(const sim_move *a, const sim_move *b)
{
    if (a->actor != b->actor)
        return 0;
    return a->actor >= 0 || (a->ch.src == b->ch.src && a->ch.dst == b->ch.dst &&
                             a->ch.comm == b->ch.comm);
}

static int sleeping(const sim_world *w, const sim_move *m)
{
    for (size_t i = 0; i < w->nsleep; i++)
        if (same_move(&w->sleep[i], m))
            return 1;
    return 0;
}

/* Sleep sets: the moves already explored from an ancestor (or an earlier
 * sibling) and independent of everything since need not run again: any
 * schedule starting with them is a reordering of one already covered. */
static void update_sleep(sim_world *w, const sim_move *opts, const int *asleep,
                         size_t c)
{
    sim_move next[MAX_CHOICES];
    size_t n = 0;
    for (size_t i = 0; i < w->nsleep; i++)
        if (!moves_conflict(w, &w->sleep[i], &opts[c]))
            next[n++] = w->sleep[i];
    for (size_t i = 0; i < c && n < MAX_CHOICES; i++)
        if (!asleep[i] && !moves_conflict(w, &opts[i], &opts[c]))
            next[n++] = opts[i];
    memcpy(w->sleep, next, n * sizeof *next);
    w->nsleep = n;
}

/* The reduced choice: skips sleeping moves. -1 when the replayed choice is
 * asleep or every move is: this schedule is covered by another. */
static long pick_reduced(sim_world *w, const sim_move *opts, size_t n)
{
    int asleep[MAX_CHOICES];
    long c = -1;
    for (size_t i = 0; i < n; i++)
        asleep[i] = sleeping(w, &opts[i]);
    size_t pos = w->ntrace;
    if (n > 1 && pos < w->cfg.nreplay) {
        c = (long)(w->cfg.replay[pos] % n);
        if (asleep[c])
            return -1;
    } else {
        for (size_t i = 0; i < n && c < 0; i++)
            if (!asleep[i])
                c = (long)i;
        if (c < 0)
            return -1;
    }
    if (n > 1)
        record(w, (size_t)c, n);
    update_sleep(w, opts, asleep, (size_t)c);
    return c;
}

/* ---- stepping ---------------------------------------------------------------- */

static size_t gather(sim_world *w, int skip_rank, sim_move *opts)
{
    sim_chan ch[MAX_CHOICES - MAX_ACTORS];
    size_t n = 0;
    for (int i = 0; i < w->nactors; i++)
        if (w->actors[i].rank != skip_rank && runnable(w, &w->actors[i]))
            opts[n++] = (sim_move){.actor = i};
    size_t nc = sim_net_ready(w->net, ch, MAX_CHOICES - MAX_ACTORS);
    if (nc > MAX_CHOICES - MAX_ACTORS)
        nc = MAX_CHOICES - MAX_ACTORS;
    for (size_t i = 0; i < nc; i++)
        opts[n++] = (sim_move){.actor = -1, .ch = ch[i],
                               .eager = sim_net_head_eager(w->net, &ch[i])};
    return n;
}

/* One step: an actor runs or a message is delivered. Returns 0 when there
 * was nothing to choose. Actors of rank `skip_rank` are not offered. */
static int step(sim_world *w, int skip_rank)
{
    sim_move opts[MAX_CHOICES];
    size_t n = gather(w, skip_rank, opts);
    if (n == 0)
        return 0;
    long c = w->settled ? 0 : w->cfg.por ? pick_reduced(w, opts, n) : (long)choose(w, n);
    if (c < 0) {
        w->failed = SIM_PRUNED;
        return 1;
    }
    const sim_move *m = &opts[c];
    w->steps++;
    if (m->actor >= 0) {
        int moved = run_actor(w, m->actor);
        w->moves += (uint64_t)moved;
        mix(w, ((uint64_t)m->actor << 1) | (uint64_t)moved);
    } else {
        sim_net_deliver(w->net, &m->ch);
        w->moves++;
        wake_changed(w);
        mix(w, 0x100000ull | ((uint64_t)m->ch.src << 8) | (uint64_t)m->ch.dst);
    }
    check_invariants(w);
    return 1;
}

int sim_world_step(sim_world *w)
{
    return step(w, -1);
}

sim_result sim_world_failure(const sim_world *w)
{
    return (sim_result)w->failed;
}

void sim_world_step_others(sim_world *w)
{
    int skip = w->running >= 0 ? w->actors[w->running].rank : -1;
    if (!step(w, skip))
        sim_world_advance(w, w->cfg.node.timeout_ns ? w->cfg.node.timeout_ns : 1);
}

/* Something that a timeout could end: a live event, or an exit under way. */
static int anything_live(const sim_world *w)
{
    for (int r = 0; r < w->nranks; r++)
        if (rank_alive(w, r) && (w->nodes[r]->live || w->nodes[r]->life == OTM_LIFE_EXITING))
            return 1;
    return 0;
}

/* Nothing can move: jump to the next delayed message, else by one tick so
 * that timeouts fire. A tick is half a timeout, the nodes' finest period
 * (a liveness probe's, src/core/liveness.c), and no jump is longer while
 * something is live: a probe or a timeout due before a message delayed
 * long must happen before it, as it would in real time. Returns 0 when
 * time cannot help. */
static int advance_time(sim_world *w, int *jumps)
{
    uint64_t next = sim_net_next_release(w->net);
    for (int r = 1; r < w->nranks; r++) {
        uint64_t until = rank_alive(w, r) ? kernel_sleeping(w, r) : 0;
        if (until && until < next)
            next = until;
    }
    uint64_t tick = w->cfg.node.timeout_ns / 2 ? w->cfg.node.timeout_ns / 2
                                               : w->cfg.node.timeout_ns;
    int live = anything_live(w), known = next != UINT64_MAX && next > w->now;
    if (known && (!tick || !live || next - w->now <= tick)) {
        sim_world_advance(w, next - w->now);
        return 1;
    }
    /* Ticks towards a known release always help; without one, only so
     * many in a row may pass without a move. */
    if (!tick || !live || (!known && ++*jumps > 128))
        return 0;
    sim_world_advance(w, tick);
    return 1;
}

static int job_done(const sim_world *w)
{
    const otm_node *host = w->nodes[0];
    if (host->life != OTM_LIFE_DONE)
        return 0;
    for (int r = 1; r < w->nranks; r++) {
        const otm_node *n = w->nodes[r];
        int finished = n->life == OTM_LIFE_DONE && !n->data_head && !n->kern_head;
        /* A worker the host could not tell to exit is left to the launcher;
         * one that heard its EXIT ends on its own (the host may be done
         * before it: it need not wait for the others it gave up on). */
        if (rank_alive(w, r) && !finished &&
            (!host->exit_failures || n->life == OTM_LIFE_EXITING))
            return 0;
    }
    return 1;
}

/* ---- teardown and reports -------------------------------------------------------- */

static void dump(sim_world *w)
{
    for (int r = 0; r < w->nranks; r++) {
        if (!w->node_up[r])
            continue;
        const otm_node *n = w->nodes[r];
        fprintf(stderr, "  rank %d: life %d, %zu live events%s\n", r, (int)n->life,
                n->live, sim_net_rank_stopped(w->net, r) ? " (stopped)" : "");
        for (const otm_event *ev = n->all; ev; ev = ev->all_next)
            fprintf(stderr, "    #%" PRIu64 " %s %s %s at %s comm %d tag %d peer %d status %s\n",
                    ev->id, otm_kind_name(ev->kind), ev->side ? "dest" : "origin",
                    otm_state_name(ev->state), otm_step_name(ev->step), ev->comm,
                    ev->tag, ev->rank, otm_status_name(ev->status));
    }
}

static void report(sim_world *w, sim_result res)
{
    static const char *const names[] = {"ok", "crash", "deadlock", "livelock",
                                        "violation", "pruned"};
    if (w->cfg.quiet)
        return;
    fprintf(stderr, "sim: %s after %" PRIu64 " steps (t=%" PRIu64 " ns)\n",
            names[res], w->steps, w->now);
    fprintf(stderr, "sim: replay with OTM_SIM_SEED=%" PRIu64 " OTM_SIM_CHOICES=%s\n",
            w->cfg.seed, sim_world_choices(w));
    dump(w);
}

/* A rank that completed the exit protocol holds no request any more. */
static int exited_cleanly(const sim_world *w, int r)
{
    const otm_node *n = w->nodes[r];
    return w->node_up[r] && !sim_net_rank_stopped(w->net, r) &&
           n->life == OTM_LIFE_DONE && !n->data_head && !n->kern_head;
}

/* Finalises every live rank, then checks that nothing was left behind. */
static sim_result teardown(sim_world *w)
{
    end_pages(w);
    for (int r = 0; r < w->nranks; r++)
        if (exited_cleanly(w, r) && sim_net_live_requests(w->net, r))
            return violation(w, "rank %d holds %zu requests after exit", r,
                             sim_net_live_requests(w->net, r)), SIM_VIOLATION;
    for (int r = 0; r < w->nranks; r++) {
        if (!w->node_up[r])
            continue;
        sim_net_set_rank(w->net, r);
        otm_node_fini(w->nodes[r]);
        w->node_up[r] = 0;
        if (sim_net_rank_stopped(w->net, r)) {
            otm_node_release(w->nodes[r]);
            continue;
        }
        if (MPI_Finalize() != MPI_SUCCESS)
            return violation(w, "rank %d: MPI_Finalize failed", r), SIM_VIOLATION;
        otm_node_release(w->nodes[r]);
        if (sim_net_live_requests(w->net, r))
            return violation(w, "rank %d leaked %zu requests", r,
                             sim_net_live_requests(w->net, r)), SIM_VIOLATION;
        if (sim_net_live_comms(w->net, r))
            return violation(w, "rank %d leaked communicators", r), SIM_VIOLATION;
        if (w->ctx[r].live)
            return violation(w, "rank %d leaked %" PRId64 " allocations", r,
                             w->ctx[r].live), SIM_VIOLATION;
    }
    /* The nodes' ends are checked as their steps were. */
    if (sim_net_misuse(w->net))
        return violation(w, "MPI misused (%" PRIu64 " times)", sim_net_misuse(w->net)),
               SIM_VIOLATION;
    /* A guard found broken while the nodes were ended. */
    return w->failed ? (sim_result)w->failed : SIM_OK;
}

static int job_done_cb(void *w)
{
    return job_done(w);
}

int sim_world_done(const sim_world *w)
{
    return job_done(w);
}

sim_result sim_world_run(sim_world *w)
{
    sim_net_set_rank(w->net, 0);
    otm_host_exit_begin(w->nodes[0]);
    sim_result res = sim_world_run_until(w, job_done_cb, w);
    if (res == SIM_OK)
        mix(w, sim_net_hash(w->net));
    return res;
}

sim_result sim_world_run_until(sim_world *w, int (*done)(void *ctx), void *ctx)
{
    /* Time jumps in a row without anything moving: actors woken by a jump
     * run, but unless one of them moves, nothing was unblocked. */
    int jumps = 0;
    uint64_t moves = w->moves;
    sim_result res = SIM_OK;
    while (!done(ctx) && !w->failed) {
        if (w->steps >= w->cfg.max_steps)
            res = SIM_LIVELOCK;
        else if (step(w, -1))
            jumps = w->moves != moves ? 0 : jumps;
        else if (!advance_time(w, &jumps))
            res = SIM_DEADLOCK;
        moves = w->moves;
        if (res)
            break;
    }
    if (w->failed)
        res = (sim_result)w->failed;
    if (res && res != SIM_PRUNED)
        report(w, res);
    return res;
}

static int queue_drained(void *q)
{
    return otm_queue_empty(q);
}

sim_result sim_world_run_queue(sim_world *w, otm_queue *q)
{
    return sim_world_run_until(w, queue_drained, q);
}

sim_result sim_world_teardown(sim_world *w)
{
    sim_result res = teardown(w);
    if (res)
        report(w, res);
    return res;
}

/* ---- reuse ------------------------------------------------------------------------ */

size_t sim_world_rest(const sim_world *w, sim_rest *out)
{
    for (int r = 0; r < w->nranks; r++) {
        const rank_ctx *rc = &w->ctx[r];
        out[r] = (sim_rest){
            .requests = sim_net_live_requests(w->net, r),
            .comms = sim_net_live_comms(w->net, r),
            .unreceived = sim_net_unreceived(w->net, r),
            .allocs = rc->live, .images = rc->dev.images,
            .out_pending = rc->dev.out_pending, .err_pending = rc->dev.err_pending,
            .stopped = sim_net_rank_stopped(w->net, r),
            .finalized = sim_net_finalized(w->net, r), .up = w->node_up[r],
        };
    }
    return sim_net_in_flight(w->net);
}

int sim_world_rearm(sim_world *w, const sim_config *cfg)
{
    const sim_config *o = &w->cfg;
    if (cfg->workers != o->workers || cfg->tag_ub != o->tag_ub ||
        cfg->eager_limit != o->eager_limit ||
        cfg->eager_at_delivery != o->eager_at_delivery ||
        cfg->late_send_tests != o->late_send_tests ||
        memcmp(&cfg->node, &o->node, sizeof cfg->node) ||
        cfg->host_node != o->host_node)
        return -1;
    /* OTM_SIM_CHOICES (parsed at creation) replays every run; OTM_SIM_SEED
     * seeds every PRNG run, as in sim_world_create. */
    if (!w->env_replay) {
        const char *seed = getenv("OTM_SIM_SEED");
        w->cfg.mode = cfg->mode;
        w->cfg.replay = cfg->replay;
        w->cfg.nreplay = cfg->nreplay;
        w->cfg.seed = seed && cfg->mode == SIM_RANDOM ? strtoull(seed, NULL, 0)
                                                      : cfg->seed;
    }
    w->cfg.bytes = cfg->bytes;
    w->cfg.nbytes = cfg->nbytes;
    w->cfg.max_steps = cfg->max_steps ? cfg->max_steps : 1000000;
    w->cfg.por = cfg->por;
    w->cfg.quiet = cfg->quiet;
    w->steps = w->moves = 0;
    w->rng = w->cfg.seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    w->hash = 0xcbf29ce484222325ull;
    w->ntrace = 0;
    w->mark = 0;
    w->settled = 0;
    w->nsleep = 0;
    w->failed = 0;
    w->running = -1;
    wake_all(w);
    for (int r = 0; r < w->nranks; r++)
        w->epoch[r] = sim_net_epoch(w->net, r);
    sim_net_install(w->net);
    return 0;
}

otm_status sim_queue_wait(otm_node *node, otm_queue *q)
{
    while (!otm_queue_empty(q)) {
        if (!otm_queue_progress(node, q) && node->hooks.idle)
            node->hooks.idle(node->hooks.ctx);
    }
    otm_status st = (otm_status)q->status;
    q->status = OTM_OK;
    return st;
}
