/*
 * test_events.c - every event kind end to end in the simulated world, for
 * payload sizes {0, 1, F-1, F, F+1, 3F+1} with a fragment size F of 4 bytes
 * and 2 bytes inline: (a) 1,000 seeded schedules each, (b) the exhaustive
 * enumeration of every schedule of the smallest interesting case of each
 * kind.
 *
 * Two environment variables scale the run down (memcheck runs it this way,
 * label valgrind): OTM_SIM_SEEDS=N runs seeds 1..N per kind and size (and
 * min(N, 300) with a single tag) instead of 1,000; OTM_SIM_EXPLORE_MAX=N
 * stops each enumeration after N schedules, which then only has to find no
 * failure (it says how many schedules it ran and that it stopped early).
 * Every case still runs. A value that is not a positive integer fails.
 * Arguments select tests: see main.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explore.h"
#include "scenarios.h"

#define F 4
#define SEEDS 1000
#define SINGLE_TAG_SEEDS 300
#define EXPLORE_MAX 2000000

static uint64_t seeds(void)
{
    return scn_env_count("OTM_SIM_SEEDS", SEEDS);
}

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
    uint64_t steps = 0, nseeds = seeds();
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        for (uint64_t seed = 1; seed <= nseeds; seed++) {
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
    print_message("%s: %d sizes x %llu seeds passed (%llu choices taken)\n",
                  scn_case_name(k), (int)(sizeof sizes / sizeof *sizes),
                  (unsigned long long)nseeds, (unsigned long long)steps);
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
SEEDED(CHAIN)
SEEDED(CHAIN_OUTPUT)

/* One tag on one communicator: every event reuses the tag of the one
 * before, so a notification can reach a worker before that worker's last
 * event on the tag has ended (it still waits for its reply to be sent). */
static void test_single_tag(void **state)
{
    (void)state;
    uint64_t nseeds = seeds() < SINGLE_TAG_SEEDS ? seeds() : SINGLE_TAG_SEEDS;
    for (int k = 0; k < SCN_CASES; k++) {
        for (uint64_t seed = 1; seed <= nseeds; seed++) {
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
    print_message("every kind with a single tag: %d cases x %llu seeds passed\n",
                  SCN_CASES, (unsigned long long)nseeds);
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
    uint64_t max = scn_env_count("OTM_SIM_EXPLORE_MAX", EXPLORE_MAX);
    sim_explore_stats st = sim_explore(&cfg, exh_run, &a, 100000, max);
    /* Bounded on request: the schedules run must pass, the rest is not
     * claimed. Unbounded (the default), every schedule must have run. */
    int bounded = max < EXPLORE_MAX && !st.complete && st.schedules >= max;
    print_message("%s size %llu, %d worker(s), eager sends complete %s: "
                  "%llu schedules explored (%llu cut as reorderings), longest "
                  "%zu choices, %s\n", scn_case_name(k), (unsigned long long)size,
                  workers, eager_at_delivery ? "on delivery" : "in MPI_Isend",
                  (unsigned long long)st.schedules,
                  (unsigned long long)st.pruned, st.deepest,
                  st.complete ? "all of them"
                  : bounded   ? "stopped there by OTM_SIM_EXPLORE_MAX (not exhaustive)"
                              : "INCOMPLETE");
    assert_int_equal(st.failures, 0);
    assert_true(st.complete || bounded);
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
static void test_exhaustive_chain(void **s) { (void)s; exhaustive(SCN_CHAIN, 1, 1, 1, 0); }
static void test_exhaustive_chain_output(void **s)
{
    (void)s;
    exhaustive(SCN_CHAIN_OUTPUT, 1, 1, 1, 0);
}

/* No argument runs every test; "--only NAME" or "--skip NAME" one test or
 * all the others (ctest runs the long exhaustive EXIT case on its own). */
int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--only") == 0) {
        cmocka_set_test_filter(argv[2]);
    } else if (argc == 3 && strcmp(argv[1], "--skip") == 0) {
        cmocka_set_skip_filter(argv[2]);
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [--only NAME | --skip NAME]\n", argv[0]);
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seeded_ALLOC),
        cmocka_unit_test(test_seeded_DELETE),
        cmocka_unit_test(test_seeded_SUBMIT),
        cmocka_unit_test(test_seeded_RETRIEVE),
        cmocka_unit_test(test_seeded_EXCHANGE),
        cmocka_unit_test(test_seeded_EXECUTE),
        cmocka_unit_test(test_seeded_SYNC),
        cmocka_unit_test(test_seeded_EXIT),
        cmocka_unit_test(test_seeded_CHAIN),
        cmocka_unit_test(test_seeded_CHAIN_OUTPUT),
        cmocka_unit_test(test_single_tag),
        cmocka_unit_test(test_exhaustive_alloc),
        cmocka_unit_test(test_exhaustive_delete),
        cmocka_unit_test(test_exhaustive_submit),
        cmocka_unit_test(test_exhaustive_retrieve),
        cmocka_unit_test(test_exhaustive_exchange),
        cmocka_unit_test(test_exhaustive_execute),
        cmocka_unit_test(test_exhaustive_sync),
        cmocka_unit_test(test_exhaustive_exit),
        cmocka_unit_test(test_exhaustive_chain),
        cmocka_unit_test(test_exhaustive_chain_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
