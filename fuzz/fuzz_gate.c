/*
 * fuzz_gate.c - libFuzzer harness for a worker's gate.
 *
 * The input is one notification, delivered as raw bytes from rank 0 to
 * worker 1's gate in a simulated world (as tests/core/test_gate.c does by hand).
 * Whatever the bytes say, the gate must answer or drop them and disturb
 * nothing else:
 *   - no sanitizer report and no simulator invariant violation;
 *   - afterwards a valid ALLOC + DELETE through the host API completes OTM_OK;
 *   - the exit protocol completes and the teardown finds nothing leaked.
 * Any broken promise is an abort(), which libFuzzer records as a crash.
 *
 * One world serves input after input. It is built once (1 worker, image 0
 * loaded: the set-up every input shared) and its rest state recorded; after
 * each input, once the ALLOC + DELETE check passed, the world must be back
 * in that rest state (sim_world_rest on both ranks: requests, communicators,
 * unreceived and in-flight messages, allocations, images, pending output;
 * the nodes: no event, live, graveyard, queued work, tag, fault, gate
 * buffer, the same kernels, images and regions, the gate posted). Then the
 * next input runs on it after sim_world_rearm (the schedule starts over)
 * and the host's tag cursors, communicator round robin and event ids are
 * put back: the world is the fresh one, and the exit protocol and the
 * teardown that would end it are the ones checked once at start-up on a
 * fresh world. A world not back at rest is retired with this input: it runs
 * the exit protocol and the teardown leak checks, exactly as every input's
 * world did before, and the next input gets a new world.
 *   OTM_FUZZ_FRESH=1         every input on a new world, ended by the exit
 *                            protocol and the teardown (the slow way);
 *   OTM_FUZZ_CHECK_RESET=1   each input also runs on a new world, which must
 *                            take the same steps (trace hash), answer the
 *                            same and end in the same rest state as the
 *                            reused one (ctest fuzz_gate_reset).
 *
 * Set OTM_FUZZ_VERBOSE=1 to let the simulator print its failure reports
 * (seed, choice string, live events) when reproducing a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otm/wire.h"
#include "scenarios.h"

/* Larger inputs say nothing new to a gate that reads at most a header plus
 * the inline payload; they only slow the fuzzer down. */
#define INPUT_MAX (1u << 16)
/* Virtual time after which a worker event waiting for data that never comes
 * fails; the world advances time when stuck, so this costs no real time. */
#define EVENT_TIMEOUT_NS 1000000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/* ALLOC notifications carry an arbitrary size, which the worker passes to
 * malloc. Sizes the host cannot get must come back as NULL (OTM_ERR_NOMEM),
 * not as a sanitizer "allocation too big" report or libFuzzer's malloc
 * limit (2 GiB by default), so cap the allocator below that limit. */
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1:max_allocation_size_mb=1024:" OTM_FUZZ_ASAN_OPTIONS;
}

static void die(sim_world *w, const char *what, int detail)
{
    fprintf(stderr, "fuzz_gate: %s (%d); replay: OTM_SIM_CHOICES=%s\n", what,
            detail, w ? sim_world_choices(w) : "?");
    abort();
}

/* What the harness waits for after sending the notification. */
typedef struct watch {
    sim_world *w;
    otm_node *host, *worker;
    int answerable;         /* the gate will answer on (comm, tag) */
    MPI_Comm comm;
    int tag;
    MPI_Request rreq;       /* the reply, when answerable */
    int replied;
    uint64_t dropped;       /* worker->stats.dropped before sending */
} watch;

/* Receives, as rank 0, every message rank 1 sent on (comm, tag) that no
 * receive matched: fragments following a reply that the raw "host" never
 * asked for. Left in place they would be matched by the host's next event
 * on the same tag and taken for its reply. */
static void drain_strays(watch *x)
{
    for (;;) {
        MPI_Message m;
        MPI_Status st;
        MPI_Request r;
        int flag = 0, count = 0;
        sim_world_act_as(x->w, 0);
        if (MPI_Improbe(1, x->tag, x->comm, &flag, &m, &st) != MPI_SUCCESS || !flag)
            return;
        MPI_Get_count(&st, MPI_BYTE, &count);
        void *buf = malloc(count > 0 ? (size_t)count : 1);
        if (!buf || MPI_Imrecv(buf, count, MPI_BYTE, &m, &r) != MPI_SUCCESS)
            die(x->w, "cannot drain a stray message", count);
        flag = 0;
        if (MPI_Test(&r, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag)
            die(x->w, "stray message receive did not complete", count);
        free(buf);
    }
}

static int worker_idle(const otm_node *n)
{
    return !n->data_head && !n->kern_head && !n->gate_buf &&
           n->gate_req == MPI_REQUEST_NULL;
}

/* The predicate of sim_world_run_until: the gate has dealt with the
 * notification (answered it, or dropped it) and the worker has no event
 * left running. */
static int gate_done(void *ctx)
{
    watch *x = ctx;
    if (x->answerable && !x->replied) {
        int flag = 0;
        sim_world_act_as(x->w, 0);
        if (MPI_Test(&x->rreq, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            die(x->w, "MPI_Test of the reply failed", 0);
        x->replied = flag;
    }
    if (x->answerable)
        drain_strays(x);
    int handled = x->answerable ? x->replied : x->worker->stats.dropped > x->dropped;
    return handled && worker_idle(x->worker);
}

/* The gate's own routing rule (src/core/node.c, dispatch): a notification
 * whose first 16 bytes decode and name an existing (communicator, tag) is
 * answered there; anything else is dropped. */
static int answerable(const otm_notify *n, const otm_node *worker)
{
    int exit_tag = n->kind == OTM_KIND_EXIT && n->tag == OTM_TAG_EXIT && n->comm == 0;
    return n->routable && n->comm < (uint32_t)worker->cfg.ncomms &&
           n->tag <= (uint32_t)worker->tag_ub &&
           (n->tag >= OTM_TAG_FIRST || exit_tag);
}

/* The worker serves its CPU and two proxied units (sim/device.h): a
 * notification may name any of them, or one it does not have. */
#define UNITS 3

static sim_config world_config(void)
{
    sim_config cfg = sim_config_default();
    cfg.workers = 1;
    cfg.units = UNITS;
    cfg.node.timeout_ns = EVENT_TIMEOUT_NS;
    cfg.quiet = !getenv("OTM_FUZZ_VERBOSE");
    return cfg;
}

/* What the nodes hold at rest, beyond sim_world_rest; per unit of the
 * worker. */
typedef struct rest {
    sim_rest ranks[2];
    otm_life life[2];
    int gate_posted;
    size_t regions[UNITS], nkernels[UNITS], nimages[UNITS];
    uint64_t kernels[UNITS][16], image_ids[UNITS][4];
    int retired[8];         /* host: tags quarantined, per communicator */
    int cursor[8];          /* host: next tag to try, per communicator */
    uint64_t next_comm, next_id[2];
} rest;

/* 0 when the world is at rest (nothing live, queued or in flight); fills
 * *r. */
static int take_rest(scn *s, rest *r)
{
    memset(r, 0, sizeof *r);
    if (sim_world_rest(s->w, r->ranks))
        return -1;
    for (int k = 0; k < 2; k++) {
        const otm_node *n = sim_world_node(s->w, k);
        if (n->all || n->graveyard || n->live || n->data_head || n->kern_head ||
            n->exit_events || n->exit_failures || n->failed || n->gate_buf)
            return -1;
        r->life[k] = n->life;
        r->next_id[k] = n->next_id;
    }
    const otm_node *h = sim_world_node(s->w, 0), *wk = sim_world_node(s->w, 1);
    if (h->cfg.ncomms > 8 || wk->nunits != UNITS)
        return -1;
    for (int u = 0; u < UNITS; u++)
        if (wk->units[u].nkernels > 16 || wk->units[u].nimages > 4)
            return -1;
    for (int c = 0; c < h->cfg.ncomms; c++) {
        if (h->tags[c].live)
            return -1;
        r->retired[c] = h->tags[c].retired;
        r->cursor[c] = h->tags[c].cursor;
    }
    r->next_comm = h->next_comm;
    r->gate_posted = wk->gate_req != MPI_REQUEST_NULL;
    for (int u = 0; u < UNITS; u++) {
        const otm_unit *un = &wk->units[u];
        r->regions[u] = un->registry.count;
        r->nkernels[u] = un->nkernels;
        memcpy(r->kernels[u], un->kernels, un->nkernels * sizeof *un->kernels);
        r->nimages[u] = un->nimages;
        for (size_t i = 0; i < un->nimages; i++)
            r->image_ids[u][i] = un->images[i].id;
    }
    return 0;
}

static int same_sim_rest(const sim_rest *a, const sim_rest *b)
{
    return a->requests == b->requests && a->comms == b->comms &&
           a->unreceived == b->unreceived && a->allocs == b->allocs &&
           a->images == b->images && a->out_pending == b->out_pending &&
           a->err_pending == b->err_pending && a->stopped == b->stopped &&
           a->finalized == b->finalized && a->up == b->up;
}

/* The same rest state, up to what sim_world_rearm and put_back reset. */
static int same_rest(const rest *a, const rest *b, int ncomms)
{
    if (!same_sim_rest(&a->ranks[0], &b->ranks[0]) ||
        !same_sim_rest(&a->ranks[1], &b->ranks[1]) || a->life[0] != b->life[0] ||
        a->life[1] != b->life[1] || a->gate_posted != b->gate_posted)
        return 0;
    for (int u = 0; u < UNITS; u++)
        if (a->regions[u] != b->regions[u] || a->nkernels[u] != b->nkernels[u] ||
            a->nimages[u] != b->nimages[u] ||
            memcmp(a->kernels[u], b->kernels[u], a->nkernels[u] * sizeof *a->kernels[u]) ||
            memcmp(a->image_ids[u], b->image_ids[u], a->nimages[u] * sizeof *a->image_ids[u]))
            return 0;
    for (int c = 0; c < ncomms; c++)
        if (a->retired[c] != b->retired[c])
            return 0;
    return 1;
}

/* Puts back what a run moves on without it being state: where the host's
 * tag allocators and communicator round robin continue, the event ids. */
static void put_back(scn *s, const rest *base)
{
    otm_node *h = sim_world_node(s->w, 0);
    for (int c = 0; c < h->cfg.ncomms; c++)
        h->tags[c].cursor = base->cursor[c];
    h->next_comm = base->next_comm;
    for (int k = 0; k < 2; k++)
        sim_world_node(s->w, k)->next_id = base->next_id[k];
}

static int worker_quiet(void *ctx)
{
    scn *s = ctx;
    return sim_world_node(s->w, 1)->live == 0;
}

static void open_world(scn *s, rest *base)
{
    sim_config cfg = world_config();
    if (scn_open(s, &cfg, 1))
        die(NULL, "cannot build the world", 0);
    /* Load image 0 so EXECUTE notifications can reach real kernels; the
     * host's queue may empty before the worker's last send of the LOAD
     * completes (schedules differ): the set-up runs until both are done. */
    scn_load(s, 0, 1);
    sim_result res = sim_world_run_queue(s->w, s->q[0]);
    if (res == SIM_OK)
        res = sim_world_run_until(s->w, worker_quiet, s);
    if (res != SIM_OK || s->q[0]->status != OTM_OK)
        die(s->w, "LOAD before the fuzzed notification failed", (int)res);
    if (take_rest(s, base))
        die(s->w, "the world is not at rest after its set-up", 0);
    if (sim_world_rearm(s->w, &cfg))
        die(s->w, "cannot rearm the world", 0);
}

/* The end of a world's life: the exit protocol and the teardown checks. */
static void close_world(scn *s)
{
    sim_result res;
    if ((res = sim_world_run(s->w)) != SIM_OK)
        die(s->w, "exit protocol", (int)res);
    if ((res = sim_world_teardown(s->w)) != SIM_OK)
        die(s->w, "teardown", (int)res);
    scn_close(s);
}

/* A valid event after the fuzzed one: the worker still serves. */
static void still_serves(scn *s)
{
    uint64_t addr = 0;
    sim_result res;
    if (scn_alloc(s, 0, 1, 16, &addr) != OTM_OK)
        die(s->w, "enqueue ALLOC", 0);
    if ((res = sim_world_run_queue(s->w, s->q[0])) != SIM_OK)
        die(s->w, "ALLOC after the fuzzed notification: world", (int)res);
    if (s->q[0]->status != OTM_OK || !addr)
        die(s->w, "ALLOC after the fuzzed notification: status", s->q[0]->status);
    if (scn_delete(s, 0, 1, addr) != OTM_OK)
        die(s->w, "enqueue DELETE", 0);
    if ((res = sim_world_run_queue(s->w, s->q[0])) != SIM_OK)
        die(s->w, "DELETE after the fuzzed notification: world", (int)res);
    if (s->q[0]->status != OTM_OK)
        die(s->w, "DELETE after the fuzzed notification: status", s->q[0]->status);
}

/* Nothing live, queued or in flight anywhere. */
static int settled(void *ctx)
{
    sim_world *w = ctx;
    sim_rest r[2];
    if (sim_world_rest(w, r))
        return 0;
    for (int k = 0; k < 2; k++) {
        const otm_node *n = sim_world_node(w, k);
        if (n->live || n->data_head || n->kern_head || n->gate_buf)
            return 0;
    }
    return 1;
}

/* What one input did, to compare a reused world with a fresh one. */
typedef struct outcome {
    uint64_t hash, steps, dropped;
    int answerable, replied;
    uint8_t reply[OTM_WIRE_REPLY_SIZE + 4096];
} outcome;

/* Runs the input on world s: the notification, the gate's handling, the
 * ALLOC + DELETE check, the clean-up of the raw host's receive. */
static void run_input(scn *s, const uint8_t *data, size_t size, const otm_notify *n,
                      outcome *o)
{
    otm_node *host = sim_world_node(s->w, 0), *worker = sim_world_node(s->w, 1);
    watch x = {.w = s->w, .host = host, .worker = worker,
               .rreq = MPI_REQUEST_NULL, .dropped = worker->stats.dropped};
    x.answerable = answerable(n, worker);
    if (x.answerable) {
        x.comm = host->comms[n->comm];
        x.tag = (int)n->tag;
    }

    /* The reply's largest legitimate size: a header and an inline payload
     * of at most inline_max bytes (or a LOAD's entries). Any larger reply
     * completes with MPI_ERR_TRUNCATE, which MPI_Test reports: a bug. */
    memset(o->reply, 0, sizeof o->reply);
    MPI_Request sreq;
    sim_world_act_as(s->w, 0);
    if (x.answerable && MPI_Irecv(o->reply, sizeof o->reply, MPI_BYTE, 1, x.tag,
                                  x.comm, &x.rreq) != MPI_SUCCESS)
        die(s->w, "MPI_Irecv of the reply", x.tag);
    /* The simulator copies eager payloads at the call; larger ones are read
     * from `data` when the gate receives them, which happens before this
     * function returns. */
    if (MPI_Isend(data, (int)size, MPI_BYTE, 1, OTM_TAG_CONTROL, host->control,
                  &sreq) != MPI_SUCCESS)
        die(s->w, "MPI_Isend of the notification", (int)size);

    sim_result res = sim_world_run_until(s->w, gate_done, &x);
    /* Nothing left to run, handled or not: the gate is idle. */
    if (res != SIM_OK && res != SIM_DEADLOCK)
        die(s->w, "world failed while the gate handled the input", (int)res);

    sim_world_act_as(s->w, 0);
    int flag = 0;
    if (x.answerable && !x.replied) {
        /* No reply came (the world ran dry first: e.g. the worker gave up
         * waiting for data the raw host never sends, which fails its event
         * without an answer). Withdraw the receive before the check below:
         * the host may hand out the same (communicator, tag) to its ALLOC,
         * whose reply this receive would otherwise take. */
        MPI_Cancel(&x.rreq);
        if (MPI_Test(&x.rreq, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag)
            die(s->w, "cancelling the reply receive", flag);
    }

    still_serves(s);

    sim_world_act_as(s->w, 0);
    if (MPI_Test(&sreq, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag)
        die(s->w, "the gate never received the notification", flag);
    if (x.answerable)
        drain_strays(&x);
    /* The worker's side of the DELETE may still be ending (its reply's send
     * completes on delivery): let the world come to rest. */
    res = sim_world_run_until(s->w, settled, s->w);
    if (res != SIM_OK && res != SIM_DEADLOCK)
        die(s->w, "world failed while coming to rest", (int)res);
    o->hash = sim_world_hash(s->w);
    o->steps = sim_world_steps(s->w);
    o->dropped = worker->stats.dropped - x.dropped;
    o->answerable = x.answerable;
    o->replied = x.replied;
}

static int same_outcome(const outcome *a, const outcome *b)
{
    return a->hash == b->hash && a->steps == b->steps && a->dropped == b->dropped &&
           a->answerable == b->answerable && a->replied == b->replied;
}

/* The reused world and its rest state after set-up. */
static scn world;
static rest base;
static int world_open;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fresh = -1, check = -1;
    if (fresh < 0) {
        fresh = getenv("OTM_FUZZ_FRESH") != NULL;
        check = getenv("OTM_FUZZ_CHECK_RESET") != NULL;
        /* The exit protocol and teardown of a world at rest, checked once on
         * a fresh world: every world found back at rest would end so. */
        scn s;
        rest r;
        open_world(&s, &r);
        close_world(&s);
    }
    if (size > INPUT_MAX)
        return -1;
    otm_notify n;
    /* A well-formed EXIT legitimately ends the worker's service, after which
     * the ALLOC check would fail by design: not interesting here (the exit
     * protocol has its own exhaustive tests). */
    if (otm_wire_get_notify(data, size, &n) == OTM_OK && n.kind == OTM_KIND_EXIT)
        return -1;

    static outcome o, fo;
    if (!world_open) {
        open_world(&world, &base);
        world_open = 1;
    } else {
        sim_config cfg = world_config();
        put_back(&world, &base);
        if (sim_world_rearm(world.w, &cfg))
            die(world.w, "cannot rearm the world", 0);
    }
    run_input(&world, data, size, &n, &o);
    rest now;
    int at_rest = !take_rest(&world, &now) &&
                  same_rest(&now, &base, sim_world_node(world.w, 0)->cfg.ncomms);

    if (check) {
        scn f;
        rest fr, fnow;
        open_world(&f, &fr);
        run_input(&f, data, size, &n, &fo);
        int f_rest = !take_rest(&f, &fnow) &&
                     same_rest(&fnow, &fr, sim_world_node(f.w, 0)->cfg.ncomms);
        if (!same_outcome(&o, &fo) || f_rest != at_rest ||
            (at_rest && !same_rest(&now, &fnow, sim_world_node(f.w, 0)->cfg.ncomms)))
            die(f.w, "a reused world ran the input unlike a fresh one",
                (int)(o.steps - fo.steps));
        close_world(&f);
        sim_config cfg = world_config();
        sim_world_rearm(world.w, &cfg);     /* its net installed again */
    }
    if (fresh || !at_rest) {
        close_world(&world);
        world_open = 0;
    }
    return 0;
}
