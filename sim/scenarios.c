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

static otm_status put(scn *s, int qi, const otm_op *op)
{
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
                 .host = s->entries[rank], .size = SIM_K_COUNT + 1,
                 .result = &s->nentries[rank]};
    return put(s, qi, &op);
}

otm_status scn_load_bytes(scn *s, int qi, int rank, const uint8_t *bytes,
                          uint64_t size, uint64_t *id)
{
    otm_op op = {.kind = OTM_KIND_LOAD, .rank = rank,
                 .image = {.id = ++s->next_image, .bytes = bytes, .size = size,
                           .hash = otm_wire_hash(bytes, (size_t)size, OTM_WIRE_HASH_SEED),
                           .names_hash = sim_names_hash(), .send = 1},
                 .host = s->entries[rank], .size = SIM_K_COUNT + 1,
                 .result = &s->nentries[rank]};
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
                 .arg = sim_kernel_addr(k), .nargs = 2, .args = args,
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

sim_config scn_fault_config(uint64_t seed)
{
    sim_config cfg = sim_config_default();
    cfg.seed = seed;
    cfg.node.timeout_ns = 1000000;
    cfg.node.kernel_timeout_ns = 5000000;
    return cfg;
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

uint64_t scn_global(scn *s, int rank)
{
    return (uint64_t)(uintptr_t)sim_world_global(s->w, rank);
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
