/* scenarios.c - host programs for the simulated world (see the header). */
#include "scenarios.h"

#include "otm/wire.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *scn_case_name(scn_case c)
{
    static const char *const names[] = {"ALLOC", "DELETE", "SUBMIT", "RETRIEVE",
                                        "EXCHANGE", "EXECUTE", "SYNC", "EXIT", "CHAIN",
                                        "CHAIN_OUTPUT"};
    return c < SCN_CASES ? names[c] : "?";
}

int scn_open(scn *s, const sim_config *cfg, int nq)
{
    memset(s, 0, sizeof *s);
    s->w = sim_world_create(cfg);
    if (!s->w)
        return -1;
    for (int i = 0; i < nq; i++)
        s->q[i] = sim_world_queue(s->w);
    s->nq = nq;
    return 0;
}

void scn_drop_refs(scn *s)
{
    for (int i = 0; i < s->nev; i++)
        otm_event_unref(sim_world_node(s->w, 0), s->ev[i]);
    s->nev = 0;
}

void scn_close(scn *s)
{
    if (s->w && sim_world_wrapped_calls(s->w) == 0) {
        /* A sim test that never reached the wrappers tested nothing. */
        fprintf(stderr, "scenario made no MPI call through the simulator\n");
        abort();
    }
    if (s->w)
        scn_drop_refs(s);
    sim_world_destroy(s->w);
    s->w = NULL;
}

/* The op with its devices (SCN_DEV) split into rank and unit. */
static otm_status put(scn *s, int qi, const otm_op *given)
{
    otm_op copy = *given, *op = &copy;
    op->unit = SCN_UNIT(given->rank), op->rank = SCN_RANK(given->rank);
    if (op->kind == OTM_KIND_EXCHANGE)
        op->peer_unit = SCN_UNIT(given->peer), op->peer = SCN_RANK(given->peer);
    otm_event *ev = NULL;
    int keep = s->keep && s->nev < (int)(sizeof s->ev / sizeof *s->ev);
    otm_status st = otm_host_enqueue(sim_world_node(s->w, 0), s->q[qi], op,
                                     keep ? &ev : NULL);
    if (ev)
        s->ev[s->nev++] = ev;
    return st;
}

int scn_all_ended(const scn *s)
{
    for (int i = 0; i < s->nev; i++) {
        const otm_event *ev = s->ev[i];
        if (!otm_event_ended(ev) || (ev->state == OTM_FAILED && ev->status == OTM_OK))
            return 0;
    }
    return 1;
}

/* The worker's own copy of a small pattern image: found by reference. */
otm_status scn_load(scn *s, int qi, int rank)
{
    otm_op op = {.kind = OTM_KIND_LOAD, .rank = rank,
                 .image = {.id = ++s->next_image, .size = 8, .hash = sim_image_hash(8),
                           .names_hash = sim_names_hash()},
                 .host = s->entries[SCN_RANK(rank)], .size = SIM_K_COUNT + 1,
                 .result = &s->nentries[SCN_RANK(rank)]};
    return put(s, qi, &op);
}

otm_status scn_load_bytes(scn *s, int qi, int rank, const uint8_t *bytes,
                          uint64_t size, uint64_t *id)
{
    otm_op op = {.kind = OTM_KIND_LOAD, .rank = rank,
                 .image = {.id = ++s->next_image, .bytes = bytes, .size = size,
                           .hash = otm_wire_hash(bytes, (size_t)size, OTM_WIRE_HASH_SEED),
                           .names_hash = sim_names_hash(), .send = 1},
                 .host = s->entries[SCN_RANK(rank)], .size = SIM_K_COUNT + 1,
                 .result = &s->nentries[SCN_RANK(rank)]};
    if (id)
        *id = op.image.id;
    return put(s, qi, &op);
}

otm_status scn_unload(scn *s, int qi, int rank, uint64_t id)
{
    otm_op op = {.kind = OTM_KIND_UNLOAD, .rank = rank, .arg = id};
    return put(s, qi, &op);
}

otm_status scn_alloc(scn *s, int qi, int rank, uint64_t size, uint64_t *out)
{
    otm_op op = {.kind = OTM_KIND_ALLOC, .rank = rank, .size = size, .result = out};
    return put(s, qi, &op);
}

otm_status scn_delete(scn *s, int qi, int rank, uint64_t addr)
{
    otm_op op = {.kind = OTM_KIND_DELETE, .rank = rank, .addr = addr};
    return put(s, qi, &op);
}

otm_status scn_submit(scn *s, int qi, int rank, uint64_t addr, const void *p,
                      uint64_t size)
{
    otm_op op = {.kind = OTM_KIND_SUBMIT, .rank = rank, .addr = addr,
                 .host = (void *)p, .size = size};
    return put(s, qi, &op);
}

otm_status scn_retrieve(scn *s, int qi, int rank, void *p, uint64_t addr,
                        uint64_t size)
{
    otm_op op = {.kind = OTM_KIND_RETRIEVE, .rank = rank, .addr = addr,
                 .host = p, .size = size};
    return put(s, qi, &op);
}

otm_status scn_exchange(scn *s, int qi, int src, uint64_t saddr, int dst,
                        uint64_t daddr, uint64_t size)
{
    otm_op op = {.kind = OTM_KIND_EXCHANGE, .rank = src, .peer = dst,
                 .addr = saddr, .addr2 = daddr, .size = size};
    return put(s, qi, &op);
}

otm_status scn_execute(scn *s, int qi, int rank, sim_kernel k, uint64_t a0,
                       uint64_t a1)
{
    uint64_t args[2] = {a0, a1};
    int64_t offsets[2] = {0, 0};
    otm_op op = {.kind = OTM_KIND_EXECUTE, .rank = rank,
                 .arg = sim_unit_kernel_addr(SCN_UNIT(rank), k), .nargs = 2, .args = args,
                 .offsets = offsets, .teams = 1, .threads = 1};
    return put(s, qi, &op);
}

otm_status scn_wait_for(scn *s, int qi, int from)
{
    otm_node *host = sim_world_node(s->w, 0);
    otm_event *ev = otm_queue_last(host, s->q[from]);
    otm_op op = {.kind = OTM_KIND_SYNC, .target = ev};
    otm_status st = put(s, qi, &op);
    if (ev)
        otm_event_unref(host, ev);
    return st;
}

uint64_t scn_env_count(const char *name, uint64_t def)
{
    const char *v = getenv(name);
    if (!v)
        return def;
    char *end = NULL;
    unsigned long long n = strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end || n == 0) {
        fprintf(stderr, "%s=%s: expected a positive integer\n", name, v);
        exit(2);
    }
    return n;
}

sim_config scn_fault_config(uint64_t seed)
{
    sim_config cfg = sim_config_default();
    cfg.seed = seed;
    cfg.node.timeout_ns = 1000000;
    cfg.node.kernel_timeout_ns = 5000000;
    return cfg;
}

const char *const scn_fault_names[SCN_F_KINDS] = {
    "failed MPI call", "failed allocation", "delayed message", "stopped worker"};

static const sim_fn fault_fns[] = {SIM_FN_Isend, SIM_FN_Irecv, SIM_FN_Test,
                                   SIM_FN_Improbe, SIM_FN_Imrecv, SIM_FN_Get_count,
                                   SIM_FN_Cancel};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

void scn_arm_faults(sim_world *w, uint64_t seed, uint64_t count[SCN_F_KINDS])
{
    uint64_t r = mix64(seed);
    int n = 1 + (int)(r % 3);
    for (int i = 0; i < n; i++) {
        r = mix64(r + (uint64_t)i);
        int kind = (int)(r % SCN_F_KINDS), rank = (int)((r >> 8) % 3);
        uint64_t nth = 1 + (r >> 16) % 40;
        switch (kind) {
        case SCN_F_CALL:
            sim_world_fail_call(w, rank, fault_fns[(r >> 32) % 7], nth);
            break;
        case SCN_F_ALLOC: sim_world_fail_alloc(w, rank, nth); break;
        case SCN_F_DELAY: sim_world_delay(w, rank, nth % 12 + 1, 1 + (r >> 40) % 3000000); break;
        case SCN_F_STOP: sim_world_stop_rank(w, 1 + (int)((r >> 8) % 2)); break;
        }
        count[kind]++;
    }
}

void scn_enqueue_all_kinds(scn *s)
{
    uint64_t g1 = scn_global(s, 1), g2 = scn_global(s, 2);
    scn_pattern(s->in[1], SCN_BUF, 3);
    scn_load(s, 0, 1);
    scn_load(s, 1, 2);
    scn_submit(s, 0, 1, g1, s->in[1], 13);
    scn_wait_for(s, 1, 0);
    scn_exchange(s, 1, 1, g1, 2, g2, 13);
    scn_execute(s, 0, 1, SIM_K_INC, g1, 13);
    scn_retrieve(s, 0, 1, s->out[1], g1, 13);
    scn_alloc(s, 1, 2, 8, &s->addr[2]);
    scn_submit(s, 1, 2, g2, s->in[1], 1);
    scn_retrieve(s, 1, 2, s->out[2], g2, 5);
}

uint64_t scn_global(scn *s, int dev)
{
    if (SCN_UNIT(dev))
        return SIM_UNIT_BASE(SCN_UNIT(dev));
    return (uint64_t)(uintptr_t)sim_world_global(s->w, SCN_RANK(dev));
}

void scn_pattern(uint8_t *p, uint64_t n, unsigned seed)
{
    for (uint64_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed * 31u + i * 7u + 1u);
}

/* ---- end-to-end cases ---------------------------------------------------------- */

static int fail(scn *s, const char *what)
{
    fprintf(stderr, "scenario check failed: %s (replay: OTM_SIM_CHOICES=%s)\n",
            what, sim_world_choices(s->w));
    return -1;
}

static int queues_ok(scn *s)
{
    for (int i = 0; i < s->nq; i++)
        if (s->q[i]->status != OTM_OK)
            return fail(s, otm_status_name(s->q[i]->status));
    return 0;
}

static int bytes_equal(scn *s, const uint8_t *got, const uint8_t *want,
                       uint64_t n, const char *what)
{
    return memcmp(got, want, n) ? fail(s, what) : 0;
}

/* The set-up of case c: what must have happened before the event under
 * test (images loaded). The workers' globals start with a pattern, as a
 * device that already holds data. */
static void enqueue_setup(scn *s, scn_case c)
{
    scn_pattern(s->in[1], SCN_BUF, 11);
    scn_pattern(sim_world_global(s->w, 1), SIM_GLOBAL_SIZE, 5);
    switch (c) {
    case SCN_SUBMIT: case SCN_RETRIEVE: case SCN_EXECUTE: case SCN_SYNC:
    case SCN_EXIT: case SCN_CHAIN: case SCN_CHAIN_OUTPUT:
        scn_load(s, 0, 1);
        break;
    case SCN_EXCHANGE:
        scn_load(s, 0, 1);
        scn_load(s, 0, 2);
        break;
    default: break;
    }
    if (c == SCN_EXIT)
        scn_load(s, 0, 2);
}

static void enqueue_case(scn *s, scn_case c, uint64_t n)
{
    uint64_t g1 = scn_global(s, 1), g2 = scn_global(s, 2);
    switch (c) {
    case SCN_ALLOC: scn_alloc(s, 0, 1, n, &s->addr[0]); break;
    case SCN_SUBMIT: scn_submit(s, 0, 1, g1, s->in[1], n); break;
    case SCN_RETRIEVE: scn_retrieve(s, 0, 1, s->out[1], g1, n); break;
    case SCN_EXCHANGE: scn_exchange(s, 0, 1, g1, 2, g2, n); break;
    case SCN_EXECUTE: scn_execute(s, 0, 1, SIM_K_INC, g1, n); break;
    case SCN_CHAIN:
        scn_submit(s, 0, 1, g1, s->in[1], n);
        scn_execute(s, 0, 1, SIM_K_INC, g1, n);
        scn_retrieve(s, 0, 1, s->out[1], g1, n);
        break;
    case SCN_CHAIN_OUTPUT:
        /* Output that follows its reply in fragments: the RETRIEVE behind
         * it may get its reply first, and must still end after it. */
        scn_execute(s, 0, 1, SIM_K_PRINT, OTM_EXEC_INLINE_MAX, 0);
        scn_retrieve(s, 0, 1, s->out[1], g1, n);
        break;
    case SCN_SYNC:
        scn_submit(s, 0, 1, g1, s->in[1], n);
        scn_wait_for(s, 1, 0);
        scn_retrieve(s, 1, 1, s->out[1], g1, n);
        break;
    case SCN_EXIT:
        scn_submit(s, 0, 1, g1, s->in[1], n);
        scn_execute(s, 1, 2, SIM_K_NOP, 0, 0);
        scn_alloc(s, 1, 2, n, &s->addr[1]);
        break;
    default: break;
    }
}

static int check_case(scn *s, scn_case c, uint64_t n)
{
    uint8_t want[SCN_BUF];
    scn_pattern(want, SIM_GLOBAL_SIZE, 5);
    if (queues_ok(s))
        return -1;
    switch (c) {
    case SCN_ALLOC: return s->addr[0] ? 0 : fail(s, "ALLOC returned no address");
    case SCN_SUBMIT:
    case SCN_SYNC:
        memcpy(want, s->in[1], n);
        if (c == SCN_SYNC && bytes_equal(s, s->out[1], s->in[1], n, "retrieved after sync"))
            return -1;
        return bytes_equal(s, sim_world_global(s->w, 1), want, SIM_GLOBAL_SIZE,
                           "worker memory after SUBMIT");
    case SCN_RETRIEVE: return bytes_equal(s, s->out[1], want, n, "retrieved bytes");
    case SCN_EXCHANGE: {
        uint8_t got2[SIM_GLOBAL_SIZE] = {0};
        memcpy(got2, want, n);
        return bytes_equal(s, sim_world_global(s->w, 2), got2, SIM_GLOBAL_SIZE,
                           "destination worker after EXCHANGE");
    }
    case SCN_EXECUTE:
        for (uint64_t i = 0; i < n; i++)
            want[i]++;
        return bytes_equal(s, sim_world_global(s->w, 1), want, SIM_GLOBAL_SIZE,
                           "worker memory after EXECUTE");
    case SCN_CHAIN:
        /* Each started before the one ahead of it ended, the kernel still
         * found the submitted bytes, and the RETRIEVE what it wrote. */
        for (uint64_t i = 0; i < n; i++)
            want[i] = (uint8_t)(s->in[1][i] + 1);
        if (sim_world_node(s->w, 0)->stats.chained != 2)
            return fail(s, "an event was not chained behind the one before it");
        return bytes_equal(s, s->out[1], want, n, "retrieved after the kernel");
    case SCN_CHAIN_OUTPUT:
        if (sim_world_node(s->w, 0)->stats.chained != 1)
            return fail(s, "the RETRIEVE was not chained behind the EXECUTE");
        return bytes_equal(s, s->out[1], want, n, "retrieved behind the kernel");
    case SCN_EXIT:
        memcpy(want, s->in[1], n);
        return bytes_equal(s, sim_world_global(s->w, 1), want, SIM_GLOBAL_SIZE,
                           "worker memory at EXIT");
    default: return 0;
    }
}

/* DELETE needs an address from ALLOC, known only once that ran: the host
 * program has two phases, like a real one. Both are explored. */
static sim_result run_delete(scn *s, uint64_t n)
{
    scn_alloc(s, 0, 1, n, &s->addr[0]);
    sim_result res = sim_world_run_queue(s->w, s->q[0]);
    if (res)
        return res;
    if (!s->addr[0])
        return fail(s, "ALLOC before DELETE"), SIM_VIOLATION;
    scn_delete(s, 0, 1, s->addr[0]);
    scn_delete(s, 1, 1, s->addr[0] + (n ? n : 1));   /* never allocated */
    return sim_world_run(s->w);
}

sim_result scn_run_case(const sim_config *cfg, scn_case c, uint64_t size,
                        sim_trace *trace)
{
    scn s;
    sim_config conf = *cfg;
    if (c == SCN_EXCHANGE || c == SCN_EXIT)
        conf.workers = conf.workers < 2 ? 2 : conf.workers;
    if (scn_open(&s, &conf, 2))
        return SIM_VIOLATION;
    sim_result res;
    enqueue_setup(&s, c);
    res = sim_world_run_queue(s.w, s.q[0]);
    sim_world_mark(s.w);
    if (res == SIM_OK && c == SCN_DELETE) {
        res = run_delete(&s, size);
    } else if (res == SIM_OK) {
        enqueue_case(&s, c, size);
        res = sim_world_run(s.w);
    }
    if (res == SIM_OK && c == SCN_DELETE) {
        if (s.q[0]->status != OTM_OK || s.q[1]->status != OTM_ERR_BAD_POINTER)
            res = (fail(&s, "DELETE statuses"), SIM_VIOLATION);
    } else if (res == SIM_OK && check_case(&s, c, size)) {
        res = SIM_VIOLATION;
    }
    if (res == SIM_OK) {
        scn_drop_refs(&s);
        res = sim_world_teardown(s.w);
    }
    if (trace)
        sim_world_take_trace(s.w, trace);
    scn_close(&s);
    return res;
}

/* ---- the end of the job from several host threads ---------------------------- */

enum { END_THREADS = 3, END_MAIN = 2 };

typedef enum end_step {
    T_ENTER,        /* enter the node and issue a region */
    T_WAIT,         /* progress its queue until it is empty, then leave */
    T_NOTICE,       /* a region faulted or a worker was lost? claim the end */
    T_MAIN,         /* main: once the others are done, the program's end */
    T_FENCE,        /* elected: wait until alone in the node */
    T_EXIT,         /* the exit protocol, then the host's teardown */
    T_DONE          /* returned, parked or ended: never touches the node */
} end_step;

typedef struct end_run end_run;

typedef struct end_thread {
    end_run *run;
    int id;
    otm_queue q;
    int rank;               /* the worker its regions run on */
    sim_kernel kernel;
    int left;               /* regions still to issue */
    end_step step;
    int inside;             /* between otm_host_enter and otm_host_leave */
    otm_status first;       /* the first failure its queue reported */
} end_thread;

struct end_run {
    scn s;
    end_thread t[END_THREADS];
    int claims;             /* claims that succeeded */
    int ender;              /* the thread they elected, or -1 */
    int torn_down;          /* the ender's teardown is done */
    int settle;             /* no more choices once the exit begins */
};

static otm_node *end_host(end_thread *t)
{
    return sim_world_node(t->run->s.w, 0);
}

/* What the plugin's region_fault and worker_lost hooks record as the
 * job's end status: a region faulted, or a worker was lost. */
static int end_recorded(const end_run *r)
{
    const sim_host_seen *seen = sim_world_host_seen(r->s.w);
    if (seen->faults)
        return 1;
    for (int k = 1; k <= SIM_MAX_WORKERS; k++)
        if (seen->lost[k])
            return 1;
    return 0;
}

/* Every step that touches the node checks that it may. */
static int end_touch(end_thread *t, const char *what)
{
    end_run *r = t->run;
    if (r->torn_down) {
        sim_world_violation(r->s.w, "thread %d: %s after the end tore the host's "
                            "node down", t->id, what);
        return -1;
    }
    if (r->ender >= 0 && r->ender != t->id && r->t[r->ender].step == T_EXIT) {
        sim_world_violation(r->s.w, "thread %d: %s while thread %d ran the end",
                            t->id, what, r->ender);
        return -1;
    }
    return 0;
}

/* A claim may come at any time, also during or after the end: it reads
 * one word of the node, which the teardown leaves. */
static int end_claim(end_thread *t)
{
    end_run *r = t->run;
    if (!otm_host_end_claim(end_host(t))) {
        t->step = T_DONE;       /* lost: the end is another's; parked */
        return -1;
    }
    if (++r->claims > 1) {
        sim_world_violation(r->s.w, "thread %d claimed the end, which thread %d had "
                            "claimed: two threads run the end of the job", t->id,
                            r->ender);
        return -1;
    }
    r->ender = t->id;
    t->step = T_FENCE;
    return 1;
}

/* Knocking is always allowed (it reads two words of the node, which the
 * teardown leaves); getting in while the end runs or after it is not. */
static int end_enter(end_thread *t)
{
    otm_node *host = end_host(t);
    uint64_t args[2] = {0, 0};
    int64_t offsets[2] = {0, 0};
    if (otm_host_enter(host) != OTM_OK) {
        t->step = T_DONE;       /* refused: parked, or failed in a normal end */
        return -1;
    }
    t->inside = 1;
    if (end_touch(t, "entered the node"))
        return -1;
    otm_op op = {.kind = OTM_KIND_EXECUTE, .rank = t->rank,
                 .arg = sim_kernel_addr(t->kernel), .nargs = 2, .args = args,
                 .offsets = offsets, .teams = 1, .threads = 1};
    otm_status st = otm_host_enqueue(host, &t->q, &op, NULL);
    t->left--;
    if (st != OTM_OK && t->first == OTM_OK)
        t->first = st;
    t->step = T_WAIT;
    return 1;
}

static int end_wait(end_thread *t)
{
    otm_node *host = end_host(t);
    if (end_touch(t, "progressed its queue"))
        return -1;
    int moved = otm_queue_progress(host, &t->q);
    if (!otm_queue_empty(&t->q))
        return moved;
    if (t->first == OTM_OK)
        t->first = (otm_status)t->q.status;
    t->q.status = OTM_OK;
    otm_host_leave(host);
    t->inside = 0;
    t->step = T_NOTICE;
    return 1;
}

/* The elected thread waits outside the node until nobody is inside; the
 * world's own record must agree that nobody is. */
static int end_fence(end_thread *t)
{
    end_run *r = t->run;
    otm_node *host = end_host(t);
    if (!otm_host_end_alone(host))
        return 0;
    for (int i = 0; i < END_THREADS; i++)
        if (r->t[i].inside) {
            sim_world_violation(r->s.w, "the end found the node alone while thread %d "
                                "was inside it", i);
            return -1;
        }
    otm_host_exit_begin(host);
    if (r->settle)
        sim_world_settle(r->s.w);
    t->step = T_EXIT;
    return 1;
}

static int end_exit(end_thread *t)
{
    otm_node *host = end_host(t);
    int moved = otm_host_exit_progress(host);
    if (host->life != OTM_LIFE_DONE)
        return moved;
    t->run->torn_down = 1;      /* the plugin frees the node here */
    t->step = T_DONE;
    return -1;
}

/* main: the program's end comes once its threads are done (or parked, or
 * elected to end the job: then main's claim loses and it parks). */
static int end_main(end_thread *t)
{
    end_run *r = t->run;
    for (int i = 0; i < END_MAIN; i++)
        if (r->t[i].step != T_DONE && r->t[i].step != T_FENCE && r->t[i].step != T_EXIT)
            return 0;
    return end_claim(t);
}

static int end_step_fn(sim_world *w, void *ctx)
{
    end_thread *t = ctx;
    (void)w;
    switch (t->step) {
    case T_ENTER: return end_enter(t);
    case T_WAIT: return end_wait(t);
    case T_NOTICE:
        if (end_recorded(t->run))
            return end_claim(t);
        if (t->left > 0 && t->first == OTM_OK) {
            t->step = T_ENTER;          /* the program goes on */
            return 1;
        }
        t->step = T_DONE;               /* returned, with or without an error */
        return -1;
    case T_MAIN: return end_main(t);
    case T_FENCE: return end_fence(t);
    case T_EXIT: return end_exit(t);
    case T_DONE: return -1;
    }
    return -1;
}

static int end_finished(void *ctx)
{
    end_run *r = ctx;
    return r->torn_down && sim_world_done(r->s.w);
}

static sim_result end_check(end_run *r)
{
    if (r->claims != 1 || r->ender < 0)
        return fail(&r->s, "the job ended without exactly one claim of its end"),
               SIM_VIOLATION;
    /* The fault's reply ends thread 0's wait: it notices before it is done. */
    if (sim_world_host_seen(r->s.w)->faults && r->ender == END_MAIN)
        return fail(&r->s, "a region faulted, but the end waited for the program's"),
               SIM_VIOLATION;
    return SIM_OK;
}

sim_result scn_run_end(const sim_config *cfg, const scn_end_plan *plan, sim_trace *trace)
{
    end_run *r = calloc(1, sizeof *r);
    if (!r || scn_open(&r->s, cfg, 1))
        return free(r), SIM_VIOLATION;
    r->ender = -1;
    r->settle = plan->settle;
    if (plan->arm)
        plan->arm(r->s.w, plan->arm_ctx);
    scn_load(&r->s, 0, 1);
    scn_load(&r->s, 0, 2);
    sim_result res = sim_world_run_queue(r->s.w, r->s.q[0]);
    sim_world_mark(r->s.w);
    otm_node *host = sim_world_node(r->s.w, 0);
    int threads = plan->main_thread ? END_THREADS : END_MAIN;
    for (int i = 0; i < threads && res == SIM_OK; i++) {
        end_thread *t = &r->t[i];
        *t = (end_thread){.run = r, .id = i, .rank = 1 + i,
                          .left = i == 1 ? plan->rounds : 1,
                          .kernel = i ? SIM_K_NOP : SIM_K_FAULT,
                          .step = i == END_MAIN ? T_MAIN : T_ENTER};
        otm_queue_init(host, &t->q);
        if (sim_world_thread(r->s.w, end_step_fn, t))
            res = SIM_VIOLATION;
    }
    if (res == SIM_OK)
        res = sim_world_run_until(r->s.w, end_finished, r);
    if (res == SIM_OK)
        res = end_check(r);
    for (int i = 0; i < threads; i++)
        if (r->t[i].run)
            otm_queue_fini(host, &r->t[i].q);
    if (res == SIM_OK)
        res = sim_world_teardown(r->s.w);
    if (trace)
        sim_world_take_trace(r->s.w, trace);
    scn_close(&r->s);
    free(r);
    return res;
}

/* ---- proxied units ---------------------------------------------------------- */

/* The world of the units' cases: two workers, each its CPU and two
 * proxied units. */
static int open_units(scn *s, const sim_config *cfg)
{
    sim_config conf = *cfg;
    conf.workers = conf.workers < 2 ? 2 : conf.workers;
    conf.units = 3;
    if (scn_open(s, &conf, 2))
        return -1;
    scn_pattern(s->in[1], SCN_BUF, 13);
    return 0;
}

static int units_check(scn *s, uint64_t n)
{
    uint8_t want[SCN_BUF];
    for (uint64_t i = 0; i < n; i++)
        want[i] = (uint8_t)(s->in[1][i] + 1);
    if (queues_ok(s) || bytes_equal(s, s->out[1], want, n, "retrieved from unit 1 of rank 1") ||
        bytes_equal(s, s->out[2], want, n, "retrieved from the CPU of rank 2"))
        return -1;
    const uint8_t *arena = sim_unit_bytes(sim_world_device(s->w, 2), 2, scn_global(s, SCN_DEV(2, 2)), n);
    if (!arena)
        return fail(s, "unit 2 of rank 2 holds no global");
    if (bytes_equal(s, arena, want, n, "unit 2 of rank 2 after the exchange"))
        return -1;
    uint64_t a = s->addr[0];
    if (!sim_unit_bytes(sim_world_device(s->w, 1), 2, a, n ? n : 1))
        return fail(s, "an ALLOC on unit 2 of rank 1 returned no address of its arena");
    return 0;
}

sim_result scn_run_units(const sim_config *cfg, uint64_t n, sim_trace *trace)
{
    scn s;
    if (n > SIM_GLOBAL_SIZE || open_units(&s, cfg))
        return SIM_VIOLATION;
    int d11 = SCN_DEV(1, 1), d12 = SCN_DEV(1, 2), d22 = SCN_DEV(2, 2), d20 = SCN_DEV(2, 0);
    scn_load(&s, 0, d11);
    scn_load(&s, 0, d12);
    scn_load(&s, 1, d22);
    scn_load(&s, 1, d20);
    sim_result res = sim_world_run_queue(s.w, s.q[0]);
    if (res == SIM_OK)
        res = sim_world_run_queue(s.w, s.q[1]);
    sim_world_mark(s.w);
    if (res == SIM_OK) {
        scn_submit(&s, 0, d11, scn_global(&s, d11), s.in[1], n);
        scn_execute(&s, 0, d11, SIM_K_INC, scn_global(&s, d11), n);
        scn_exchange(&s, 0, d11, scn_global(&s, d11), d12, scn_global(&s, d12), n);
        scn_exchange(&s, 0, d12, scn_global(&s, d12), d22, scn_global(&s, d22), n);
        scn_exchange(&s, 0, d22, scn_global(&s, d22), d20, scn_global(&s, d20), n);
        scn_retrieve(&s, 0, d20, s.out[2], scn_global(&s, d20), n);
        scn_retrieve(&s, 0, d11, s.out[1], scn_global(&s, d11), n);
        scn_alloc(&s, 1, d12, n, &s.addr[0]);
        res = sim_world_run_queue(s.w, s.q[0]);
        if (res == SIM_OK)
            res = sim_world_run_queue(s.w, s.q[1]);
    }
    /* What the ALLOC returned goes, once it ran; an address of another
     * unit is refused. */
    if (res == SIM_OK && units_check(&s, n))
        res = SIM_VIOLATION;
    if (res == SIM_OK) {
        scn_delete(&s, 0, d12, s.addr[0]);
        scn_delete(&s, 1, d11, s.addr[0]);
        res = sim_world_run(s.w);
        if (res == SIM_OK && (s.q[0]->status != OTM_OK || s.q[1]->status != OTM_ERR_BAD_POINTER))
            res = (fail(&s, "DELETE statuses on the units"), SIM_VIOLATION);
    }
    if (res == SIM_OK) {
        scn_drop_refs(&s);
        res = sim_world_teardown(s.w);
    }
    if (trace)
        sim_world_take_trace(s.w, trace);
    scn_close(&s);
    return res;
}

sim_result scn_run_unit_exchange(const sim_config *cfg, sim_trace *trace)
{
    scn s;
    if (open_units(&s, cfg))
        return SIM_VIOLATION;
    int d11 = SCN_DEV(1, 1), d21 = SCN_DEV(2, 1);
    scn_load(&s, 0, d11);
    scn_load(&s, 0, d21);
    sim_result res = sim_world_run_queue(s.w, s.q[0]);
    sim_world_mark(s.w);
    uint8_t *src = sim_unit_bytes(sim_world_device(s.w, 1), 1, scn_global(&s, d11), 1);
    if (res == SIM_OK && !src)
        res = (fail(&s, "unit 1 of rank 1 holds no global"), SIM_VIOLATION);
    if (res == SIM_OK) {
        *src = 0x5a;
        scn_exchange(&s, 0, d11, scn_global(&s, d11), d21, scn_global(&s, d21), 1);
        res = sim_world_run(s.w);
    }
    const uint8_t *dst = sim_unit_bytes(sim_world_device(s.w, 2), 1, scn_global(&s, d21), 1);
    if (res == SIM_OK && (queues_ok(&s) || !dst || *dst != 0x5a))
        res = (fail(&s, "unit 1 of rank 2 after the exchange"), SIM_VIOLATION);
    if (res == SIM_OK) {
        scn_drop_refs(&s);
        res = sim_world_teardown(s.w);
    }
    if (trace)
        sim_world_take_trace(s.w, trace);
    scn_close(&s);
    return res;
}
