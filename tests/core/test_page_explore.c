/*
 * test_page_explore.c - unified shared memory's page events in the
 * simulated world (sim/pages.h), under thousands of schedules each:
 * regions that fetch rank 0's bytes through the page protocol, change
 * them and write them back, interleaved in every order with the event
 * protocol that carries the regions, with the host program's own
 * accesses to its memory, and with a device rank dying.
 *
 *  - coherence: a region's writes are in the host's memory when the host
 *    sees the region end, and the host's writes after it are what the
 *    next region reads (the page request races the region's end, the
 *    write-back the reply);
 *  - two devices writing different pages of one array while the host's
 *    thread writes a third: each write lands once, none lost;
 *  - a device dying with pages out (its ask taken or not, its reply sent
 *    or not, its write-back applied or not): the other device's region
 *    completes with its bytes, the dead one's region fails, its bytes are
 *    the old ones or its whole write-back, and the job ends;
 *  - the fault sweep's faults (scn_arm_faults) over two devices' regions:
 *    every region ends, its bytes as its status says, nothing is left
 *    behind, and the same job without faults then passes.
 *
 * The smallest cases run under every schedule (up to OTM_SIM_EXPLORE_MAX,
 * default 2,000,000): one region, the same with sends seen ended late
 * (sim_config.late_send_tests), and one region while the host's thread
 * reads its bytes once. The others run under OTM_SIM_PAGE_SEEDS schedules
 * (default 3,000), each drawn from its seed: two devices' regions have more
 * schedules than 3,000,000 (a depth-first run stopped there).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "explore.h"
#include "pages.h"
#include "scenarios.h"

#define SPAN 64u                /* the bytes one region touches */
#define HOST_PAGE 128u          /* the bytes only the host's thread writes */

typedef struct plan {
    int workers;                /* 1: coherence; 2: two devices */
    int kill;                   /* 1: worker 2 dies at some point */
    int regions;                /* coherence: 1 or 2 regions in a row */
    int direct;                 /* regions queued, no polling thread */
    int reader;                 /* direct: the host's thread reads once */
    int faults;                 /* two devices: the sweep's faults armed */
} plan;

typedef struct program {
    scn *s;
    const plan *p;
    int phase;
    int region[3];              /* s->ev index of each worker's region, or
                                 * -1 when the host refused to queue it */
    otm_status refused[3];      /* why, then */
    uint8_t before[SIM_HOST_SIZE];
    uint8_t host_writes;        /* times the host's thread wrote its page */
} program;

static uint8_t *memory(program *g)
{
    return sim_world_host_memory(g->s->w);
}

static int check_span(program *g, unsigned at, int add)
{
    for (unsigned i = at; i < at + SPAN; i++)
        if (memory(g)[i] != (uint8_t)(g->before[i] + add)) {
            sim_world_violation(g->s->w, "host byte %u is %u, not %u + %d", i,
                                memory(g)[i], g->before[i], add);
            return 0;
        }
    return 1;
}

static void region(program *g, int qi, int rank, unsigned at)
{
    g->refused[rank] = scn_execute(g->s, qi, rank, SIM_K_USM, SIM_HOST_BASE + at, SPAN);
    g->region[rank] = g->refused[rank] == OTM_OK ? g->s->nev - 1 : -1;
}

static otm_status region_status(program *g, int rank)
{
    if (g->region[rank] < 0)
        return g->refused[rank];
    const otm_event *ev = g->s->ev[g->region[rank]];
    return otm_event_ended(ev) ? (otm_status)ev->status : OTM_ERR_BUSY;
}

/* The host program of one worker: a region (phase 1), the host's own
 * writes once it ended, a second region that must see them (phase 2). */
static int coherence(sim_world *w, void *ctx)
{
    program *g = ctx;
    if (g->phase > 0) {
        if (!otm_queue_empty(g->s->q[0]))
            return 0;
        int ok = region_status(g, 1) == OTM_OK;
        if (!ok)
            sim_world_violation(w, "the region ended with %s",
                                otm_status_name(region_status(g, 1)));
        if (!ok || !check_span(g, 0, g->phase == 1 ? 1 : 12) || g->phase == g->p->regions) {
            g->phase = 3;
            return -1;
        }
        for (unsigned i = 0; i < SPAN; i++)
            memory(g)[i] += 10;         /* the host's writes between regions */
    }
    region(g, 0, 1, 0);
    g->phase++;
    return 1;
}

/* The host program of two workers: one region each on pages of their own
 * of one array, while the host's thread writes a page of its own. */
static int two_devices(sim_world *w, void *ctx)
{
    program *g = ctx;
    (void)w;
    if (g->phase == 0) {
        region(g, 0, 1, 0);
        region(g, 1, 2, SPAN);
        g->phase = 1;
        return 1;
    }
    if (g->host_writes < 3) {
        memory(g)[HOST_PAGE + g->host_writes] = 0xa0 + g->host_writes;
        g->host_writes++;
        return 1;
    }
    return otm_queue_empty(g->s->q[0]) && otm_queue_empty(g->s->q[1]) ? -1 : 0;
}

/* A process dying, after `*turns` turns of its own (the schedule places
 * them among the others' moves). */
static int killer(sim_world *w, void *ctx)
{
    int *turns = ctx;
    if (--*turns > 0)
        return 1;
    sim_world_stop_rank(w, 2);
    return -1;
}

static int program_done(void *ctx)
{
    program *g = ctx;
    return g->phase == 3 || (g->p->workers == 2 && g->phase == 1 && g->host_writes == 3 &&
                             otm_queue_empty(g->s->q[0]) && otm_queue_empty(g->s->q[1]));
}

static uint64_t died_failed;       /* runs whose dying device's region failed */

static int check_two(program *g)
{
    for (unsigned i = 0; i < g->host_writes; i++)
        if (memory(g)[HOST_PAGE + i] != 0xa0 + i)
            return sim_world_violation(g->s->w, "the host's write %u was lost", i), 0;
    if (region_status(g, 1) != OTM_OK || !check_span(g, 0, 1))
        return 0;
    otm_status st2 = region_status(g, 2);
    if (!g->p->kill)
        return st2 == OTM_OK && check_span(g, SPAN, 1);
    /* Dead with its write-back applied or not: the old bytes or all new. */
    died_failed += st2 != OTM_OK;
    if (memory(g)[SPAN] == g->before[SPAN])
        return check_span(g, SPAN, 0);
    return check_span(g, SPAN, 1);
}

/* The host's thread reading the region's bytes once, at any point of
 * the region: the old bytes or the whole write-back (the server applies
 * a WRITE's record in one step), never a mix. */
static uint64_t read_old, read_new;    /* what the reader saw, by run */

static int reader(sim_world *w, void *ctx)
{
    program *g = ctx;
    int added = memory(g)[0] == g->before[0] ? 0 : 1;
    added ? read_new++ : read_old++;
    for (unsigned i = 0; i < SPAN; i++)
        if (memory(g)[i] != (uint8_t)(g->before[i] + added))
            sim_world_violation(w, "the host read byte %u as %u: a write-back seen in part",
                                i, memory(g)[i]);
    return -1;
}

/* The smallest cases: each worker's region is queued before the run and
 * the test looks once the queues emptied. No host thread polls
 * meanwhile (each of its polls would be a choice among rank 0's moves),
 * so every schedule can be run. */
static sim_result direct_regions(program *g)
{
    sim_result res = SIM_OK;
    for (int r = 1; r <= g->p->workers; r++)
        region(g, r - 1, r, (unsigned)(r - 1) * SPAN);
    if (g->p->reader)
        sim_world_thread(g->s->w, reader, g);
    for (int r = 1; r <= g->p->workers && res == SIM_OK; r++)
        res = sim_world_run_queue(g->s->w, g->s->q[r - 1]);
    for (int r = 1; r <= g->p->workers && res == SIM_OK; r++) {
        if (region_status(g, r) != OTM_OK) {
            sim_world_violation(g->s->w, "the region on worker %d ended with %s", r,
                                otm_status_name(region_status(g, r)));
            res = SIM_VIOLATION;
        } else if (!check_span(g, (unsigned)(r - 1) * SPAN, 1)) {
            res = SIM_VIOLATION;
        }
    }
    return res;
}

static uint64_t fault_count[SCN_F_KINDS];     /* faults armed, by kind */
static uint64_t region_ends[2];                /* faulty runs: OK, failed */
static uint64_t server_upset;                  /* faulty runs whose page server
                                                * refused or dropped an ask */

/* Under faults: every region ended, one that ended well with its bytes
 * written back, one that failed with the old bytes or all new, one the
 * host refused to queue (no memory) with the old, and none of the host's
 * own writes lost. */
static int check_faulty(program *g)
{
    for (unsigned i = 0; i < g->host_writes; i++)
        if (memory(g)[HOST_PAGE + i] != 0xa0 + i)
            return sim_world_violation(g->s->w, "the host's write %u was lost", i), 0;
    for (int r = 1; r <= 2; r++) {
        otm_status st = region_status(g, r);
        unsigned at = (unsigned)(r - 1) * SPAN;
        if (st == OTM_ERR_BUSY)
            return sim_world_violation(g->s->w, "the region on worker %d never ended", r), 0;
        region_ends[st != OTM_OK]++;
        int added = memory(g)[at] != g->before[at];
        if (added && g->region[r] < 0)
            return sim_world_violation(g->s->w, "worker %d's region was refused (%s), yet "
                                       "its bytes changed", r, otm_status_name(st)), 0;
        if (st == OTM_OK && !added)
            return sim_world_violation(g->s->w, "worker %d's region ended well, yet its "
                                       "bytes were not written back", r), 0;
        if (!check_span(g, at, added))
            return 0;
    }
    return 1;
}

static sim_result run(const sim_config *cfg, void *arg, sim_trace *t)
{
    const plan *p = arg;
    sim_config c = *cfg;
    c.workers = p->workers;
    scn s;
    if (scn_open(&s, &c, p->workers))
        return SIM_VIOLATION;
    s.keep = 1;
    program g = {.s = &s, .p = p};
    if (p->faults)
        scn_arm_faults(s.w, cfg->seed, fault_count);
    for (unsigned i = 0; i < SIM_HOST_SIZE; i++)
        memory(&g)[i] = (uint8_t)(i * 5 + 1);
    memcpy(g.before, memory(&g), SIM_HOST_SIZE);
    for (int r = 1; r <= p->workers; r++)
        scn_load(&s, r - 1, r);
    sim_result res = SIM_OK;
    for (int q = 0; q < p->workers && res == SIM_OK; q++)
        res = sim_world_run_queue(s.w, s.q[q]);
    sim_world_mark(s.w);
    int turns = 1 + (int)(cfg->seed % 64);
    if (p->direct && res == SIM_OK) {
        res = direct_regions(&g);
    } else {
        sim_world_thread(s.w, p->workers == 1 ? coherence : two_devices, &g);
        if (p->kill)
            sim_world_thread(s.w, killer, &turns);
        if (res == SIM_OK)
            res = sim_world_run_until(s.w, program_done, &g);
    }
    if (res == SIM_OK && p->workers == 2 && !(p->faults ? check_faulty(&g) : check_two(&g)))
        res = SIM_VIOLATION;
    sim_world_settle(s.w);
    if (res == SIM_OK)
        res = sim_world_run(s.w);
    const otm_page_server *server = sim_world_page_server(s.w);
    server_upset += p->faults && (server->refused || server->dropped);
    /* An ask whose length a failed call lost names no reply tag. */
    if (res == SIM_OK && !p->faults && server->dropped)
        res = SIM_VIOLATION;
    scn_drop_refs(&s);
    if (res == SIM_OK)
        res = sim_world_teardown(s.w);
    if (t)
        sim_world_take_trace(s.w, t);
    scn_close(&s);
    return res;
}

/* The case under `seeds` schedules, each drawn from its seed (a failure
 * names the seed and the choice string that replay it). */
static void explore(const char *what, plan p)
{
    uint64_t seeds = scn_env_count("OTM_SIM_PAGE_SEEDS", 3000);
    for (uint64_t seed = 1; seed <= seeds; seed++) {
        sim_config cfg = p.kill ? scn_fault_config(seed) : sim_config_default();
        cfg.seed = seed;
        cfg.pages = 1;
        if (run(&cfg, &p, NULL) != SIM_OK)
            fail_msg("%s: seed %llu", what, (unsigned long long)seed);
    }
    print_message("%s: %llu seeded schedules passed\n", what, (unsigned long long)seeds);
}

static void test_coherence(void **state)
{
    (void)state;
    explore("a region", (plan){1, 0, 1, 0, 0, 0});
    explore("a region, the host's writes, a region", (plan){1, 0, 2, 0, 0, 0});
}

static void test_two_devices(void **state)
{
    (void)state;
    explore("two devices and the host writing pages of one array", (plan){2, 0, 1, 0, 0, 0});
}

static void test_device_dies(void **state)
{
    (void)state;
    died_failed = 0;
    explore("two devices, one dying at any point", (plan){2, 1, 1, 0, 0, 0});
    print_message("... its region failed in %llu of them, ended before it died in the "
                  "others\n", (unsigned long long)died_failed);
    /* Both ends happen, or the kill did not test what it says. */
    assert_true(died_failed > 0);
    assert_true(died_failed < 3000 || getenv("OTM_SIM_PAGE_SEEDS"));
}

/* The fault sweep (test_sweep's faults, scn_arm_faults) over two devices'
 * regions and the host's writes: each seed's faulty job ends with the
 * checks of check_faulty and nothing left behind, then the same job
 * without faults passes whole. */
static void test_fault_sweep(void **state)
{
    (void)state;
    uint64_t seeds = scn_env_count("OTM_SIM_PAGE_SEEDS", 3000);
    plan faulty = {2, 0, 1, 0, 0, 1}, clean = {2, 0, 1, 0, 0, 0};
    memset(fault_count, 0, sizeof fault_count);
    memset(region_ends, 0, sizeof region_ends);
    server_upset = 0;
    for (uint64_t seed = 1; seed <= seeds; seed++) {
        sim_config cfg = scn_fault_config(seed);
        cfg.pages = 1;
        cfg.quiet = !getenv("OTM_SIM_PAGE_LOUD");
        if (run(&cfg, &faulty, NULL) != SIM_OK)
            fail_msg("seed %llu: the faulty job failed (replay: this test with the seed)",
                     (unsigned long long)seed);
        cfg.quiet = 0;
        if (run(&cfg, &clean, NULL) != SIM_OK)
            fail_msg("seed %llu: the fault-free job after it failed",
                     (unsigned long long)seed);
    }
    print_message("two devices' regions and the host's writes: %llu seeds, each with "
                  "faults then without; faults injected:\n", (unsigned long long)seeds);
    for (int k = 0; k < SCN_F_KINDS; k++)
        print_message("  %-18s %llu\n", scn_fault_names[k],
                      (unsigned long long)fault_count[k]);
    print_message("... regions under faults: %llu ended, %llu failed; the page server "
                  "refused or dropped an ask in %llu runs\n",
                  (unsigned long long)region_ends[0], (unsigned long long)region_ends[1],
                  (unsigned long long)server_upset);
    assert_true(region_ends[0] > 0 && region_ends[1] > 0 && server_upset > 0);
}

/* The smallest cases under every schedule. */
static int exhaustive(const char *what, plan p, int late_send_tests)
{
    sim_config cfg = sim_config_default();
    cfg.pages = 1;
    cfg.late_send_tests = late_send_tests;
    uint64_t max = scn_env_count("OTM_SIM_EXPLORE_MAX", 2000000);
    sim_explore_stats st = sim_explore(&cfg, run, &p, 100000, max);
    print_message("%s: %llu schedules (%llu cut as reorderings), longest %zu choices, %s\n",
                  what, (unsigned long long)st.schedules, (unsigned long long)st.pruned,
                  st.deepest, st.complete ? "all of them" : "INCOMPLETE");
    assert_int_equal(st.failures, 0);
    assert_true(st.complete || (getenv("OTM_SIM_EXPLORE_MAX") && st.schedules >= max));
    return st.complete;
}

static void test_exhaustive(void **state)
{
    (void)state;
    exhaustive("a region", (plan){1, 0, 1, 1, 0, 0}, 0);
    /* MPI may say a send ended only at a later test, after the reply to
     * it came (a call that read the reply's length only when the reply's
     * test said so then found none: OTM_ERR_BAD_MESSAGE). */
    exhaustive("a region, sends seen ended late", (plan){1, 0, 1, 1, 0, 0}, 1);
    read_old = read_new = 0;
    int all = exhaustive("a region while the host's thread reads its bytes",
                         (plan){1, 0, 1, 1, 1, 0}, 0);
    print_message("... the thread read the old bytes in %llu runs, the written-back ones in "
                  "%llu\n", (unsigned long long)read_old, (unsigned long long)read_new);
    assert_true(read_old > 0 && (read_new > 0 || !all));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exhaustive),
        cmocka_unit_test(test_coherence),
        cmocka_unit_test(test_two_devices),
        cmocka_unit_test(test_device_dies),
        cmocka_unit_test(test_fault_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
