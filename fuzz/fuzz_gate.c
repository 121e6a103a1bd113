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
    return "allocator_may_return_null=1:max_allocation_size_mb=1024";
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

static void open_world(scn *s)
{
    sim_config cfg = sim_config_default();
    cfg.workers = 1;
    cfg.node.timeout_ns = EVENT_TIMEOUT_NS;
    cfg.quiet = !getenv("OTM_FUZZ_VERBOSE");
    if (scn_open(s, &cfg, 1))
        die(NULL, "cannot build the world", 0);
    /* Load image 0 so EXECUTE notifications can reach real kernels. */
    scn_load(s, 0, 1);
    sim_result res = sim_world_run_queue(s->w, s->q[0]);
    if (res != SIM_OK || s->q[0]->status != OTM_OK)
        die(s->w, "LOAD before the fuzzed notification failed", (int)res);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > INPUT_MAX)
        return -1;
    otm_notify n;
    /* A well-formed EXIT legitimately ends the worker's service, after which
     * the ALLOC check would fail by design: not interesting here (the exit
     * protocol has its own exhaustive tests). */
    if (otm_wire_get_notify(data, size, &n) == OTM_OK && n.kind == OTM_KIND_EXIT)
        return -1;

    scn s;
    open_world(&s);
    otm_node *host = sim_world_node(s.w, 0), *worker = sim_world_node(s.w, 1);
    watch x = {.w = s.w, .host = host, .worker = worker,
               .rreq = MPI_REQUEST_NULL, .dropped = worker->stats.dropped};
    x.answerable = answerable(&n, worker);
    if (x.answerable) {
        x.comm = host->comms[n.comm];
        x.tag = (int)n.tag;
    }

    /* The reply's largest legitimate size: a header and an inline payload
     * of at most inline_max bytes (or a LOAD's entries). Any larger reply
     * completes with MPI_ERR_TRUNCATE, which MPI_Test reports: a bug. */
    static uint8_t reply[OTM_WIRE_REPLY_SIZE + 4096];
    MPI_Request sreq;
    sim_world_act_as(s.w, 0);
    if (x.answerable &&
        MPI_Irecv(reply, sizeof reply, MPI_BYTE, 1, x.tag, x.comm, &x.rreq) != MPI_SUCCESS)
        die(s.w, "MPI_Irecv of the reply", x.tag);
    /* The simulator copies eager payloads at the call; larger ones are read
     * from `data` when the gate receives them, which happens before this
     * function returns. */
    if (MPI_Isend(data, (int)size, MPI_BYTE, 1, OTM_TAG_CONTROL, host->control,
                  &sreq) != MPI_SUCCESS)
        die(s.w, "MPI_Isend of the notification", (int)size);

    sim_result res = sim_world_run_until(s.w, gate_done, &x);
    /* Nothing left to run, handled or not: the gate is idle. */
    if (res != SIM_OK && res != SIM_DEADLOCK)
        die(s.w, "world failed while the gate handled the input", (int)res);

    still_serves(&s);

    sim_world_act_as(s.w, 0);
    int flag = 0;
    if (MPI_Test(&sreq, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag)
        die(s.w, "the gate never received the notification", flag);
    if (x.answerable && !x.replied) {
        /* No reply came (the world ran dry first): withdraw the receive so
         * the teardown's request check sees only the node's own. */
        MPI_Cancel(&x.rreq);
        if (MPI_Test(&x.rreq, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag)
            die(s.w, "cancelling the reply receive", flag);
    }
    if (x.answerable)
        drain_strays(&x);

    if ((res = sim_world_run(s.w)) != SIM_OK)
        die(s.w, "exit protocol", (int)res);
    if ((res = sim_world_teardown(s.w)) != SIM_OK)
        die(s.w, "teardown", (int)res);
    scn_close(&s);
    return 0;
}
