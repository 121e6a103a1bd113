/*
 * test_events.c - every event kind end to end in the simulated world, for
 * payload sizes {0, 1, F-1, F, F+1, 3F+1} with a fragment size F of 4 bytes
 * and 2 bytes inline: (a) 1,000 seeded schedules each, (b) the exhaustive
 * enumeration of every schedule of the smallest interesting case of each
 * kind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "sim_scenarios.h"

#define F 4
#define SEEDS 1000

static const uint64_t sizes[] = {0, 1, F - 1, F, F + 1, 3 * F + 1};

static sim_config base_config(void)
{
    sim_config c = sim_config_default();
    c.node.frag_size = F;
    c.node.inline_max = 2;
    c.quiet = 0;
    return c;
}

static void seeded(scn_case k)
{
    sim_config cfg = base_config();
    uint64_t steps = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        for (uint64_t seed = 1; seed <= SEEDS; seed++) {
            cfg.seed = seed;
            sim_trace t = {0};
            sim_result r = scn_run_case(&cfg, k, sizes[i], &t);
            steps += t.len;
            sim_trace_free(&t);
            if (r != SIM_OK)
                fail_msg("%s size %llu seed %llu: result %d", scn_case_name(k),
                         (unsigned long long)sizes[i], (unsigned long long)seed, r);
        }
    }
    print_message("%s: %d sizes x %d seeds passed (%llu choices taken)\n",
                  scn_case_name(k), (int)(sizeof sizes / sizeof *sizes), SEEDS,
                  (unsigned long long)steps);
}

#define SEEDED(k) static void test_seeded_##k(void **state) { (void)state; seeded(SCN_##k); }
SEEDED(ALLOC)
SEEDED(DELETE)
SEEDED(SUBMIT)
SEEDED(RETRIEVE)
SEEDED(EXCHANGE)
SEEDED(EXECUTE)
SEEDED(SYNC)
SEEDED(EXIT)

/* One tag on one communicator: every event reuses the tag of the one
 * before, so a notification can reach a worker before that worker's last
 * event on the tag has ended (it still waits for its reply to be sent). */
static void test_single_tag(void **state)
{
    (void)state;
    for (int k = 0; k < SCN_CASES; k++) {
        for (uint64_t seed = 1; seed <= 300; seed++) {
            sim_config cfg = base_config();
            cfg.node.ncomms = 1;
            cfg.node.tag_space = 1;
            cfg.seed = seed;
            sim_result r = scn_run_case(&cfg, (scn_case)k, F + 1, NULL);
            if (r != SIM_OK)
                fail_msg("%s with one tag, seed %llu: result %d",
                         scn_case_name((scn_case)k), (unsigned long long)seed, r);
        }
    }
    print_message("every kind with a single tag: %d cases x 300 seeds passed\n",
                  SCN_CASES);
}

/* ---- exhaustive ---- */

typedef struct exh_arg {
    scn_case kind;
    uint64_t size;
} exh_arg;

static sim_result exh_run(const sim_config *cfg, void *arg, sim_trace *t)
{
    exh_arg *a = arg;
    sim_config c = *cfg;
    c.quiet = 0;
    return scn_run_case(&c, a->kind, a->size, t);
}

/* The smallest interesting case of each kind: one worker (two for
 * EXCHANGE), the payload size that exercises its distinctive path. */
static void exhaustive(scn_case k, uint64_t size, int workers, int ncomms,
                       int eager_at_delivery)
{
    sim_config cfg = base_config();
    cfg.workers = workers;
    cfg.node.ncomms = ncomms;
    cfg.eager_at_delivery = eager_at_delivery;
    exh_arg a = {k, size};
    sim_explore_stats st = sim_explore(&cfg, exh_run, &a, 100000, 2000000);
    print_message("%s size %llu, %d worker(s), eager sends complete %s: "
                  "%llu schedules explored (%llu cut as reorderings), longest "
                  "%zu choices, %s\n", scn_case_name(k), (unsigned long long)size,
                  workers, eager_at_delivery ? "on delivery" : "in MPI_Isend",
                  (unsigned long long)st.schedules,
                  (unsigned long long)st.pruned, st.deepest,
                  st.complete ? "all of them" : "INCOMPLETE");
    assert_int_equal(st.failures, 0);
    assert_true(st.complete);
}

/* Eager sends completing on delivery multiply the schedules (each send is
 * one more move that touches two ranks): the cases with several round
 * trips are enumerated with sends completing in MPI_Isend, and the seeded
 * runs above cover the other model for them. */
static void test_exhaustive_alloc(void **s) { (void)s; exhaustive(SCN_ALLOC, 1, 1, 1, 1); }
static void test_exhaustive_delete(void **s) { (void)s; exhaustive(SCN_DELETE, 1, 1, 1, 0); }
static void test_exhaustive_submit(void **s) { (void)s; exhaustive(SCN_SUBMIT, F + 1, 1, 1, 1); }
static void test_exhaustive_retrieve(void **s) { (void)s; exhaustive(SCN_RETRIEVE, F + 1, 1, 1, 1); }
static void test_exhaustive_exchange(void **s) { (void)s; exhaustive(SCN_EXCHANGE, 1, 2, 1, 0); }
static void test_exhaustive_execute(void **s) { (void)s; exhaustive(SCN_EXECUTE, 1, 1, 1, 1); }
static void test_exhaustive_sync(void **s) { (void)s; exhaustive(SCN_SYNC, 1, 1, 1, 1); }
static void test_exhaustive_exit(void **s) { (void)s; exhaustive(SCN_EXIT, 1, 2, 1, 0); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seeded_ALLOC),
        cmocka_unit_test(test_seeded_DELETE),
        cmocka_unit_test(test_seeded_SUBMIT),
        cmocka_unit_test(test_seeded_RETRIEVE),
        cmocka_unit_test(test_seeded_EXCHANGE),
        cmocka_unit_test(test_seeded_EXECUTE),
        cmocka_unit_test(test_seeded_SYNC),
        cmocka_unit_test(test_seeded_EXIT),
        cmocka_unit_test(test_single_tag),
        cmocka_unit_test(test_exhaustive_alloc),
        cmocka_unit_test(test_exhaustive_delete),
        cmocka_unit_test(test_exhaustive_submit),
        cmocka_unit_test(test_exhaustive_retrieve),
        cmocka_unit_test(test_exhaustive_exchange),
        cmocka_unit_test(test_exhaustive_execute),
        cmocka_unit_test(test_exhaustive_sync),
        cmocka_unit_test(test_exhaustive_exit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
