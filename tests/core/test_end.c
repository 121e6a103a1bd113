/*
 * test_end.c - the end of the job when several host threads meet it at
 * once (otm/node.h, "the end of the job"; the scenario is scn_run_end of
 * sim/scenarios.h): a region faults on worker 1 while another thread's
 * regions run on worker 2. Exactly one thread runs the end, nobody is
 * inside the node while it runs, nothing touches the node after its
 * teardown, and the job ends with every worker's acknowledgement:
 *   - every schedule from the two regions' start to the start of the exit
 *     protocol (whose own schedules test_exit explores), with one region
 *     each: the thread on worker 2 gets in before the end is claimed, is
 *     inside while it is, or is refused at the door;
 *   - 2,000 seeded schedules of the whole job, the thread on worker 2
 *     issuing 6 regions and the program's main ending the job when its
 *     threads are done.
 * The seeded fault sweep (test_sweep) runs the same scenario with faults.
 * Under memcheck (label valgrind): OTM_SIM_EXPLORE_MAX=N stops the
 * enumeration after N schedules, OTM_SIM_SEEDS=N runs N seeds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <cmocka.h>

#include "explore.h"
#include "scenarios.h"

static sim_result run_end(const sim_config *cfg, void *arg, sim_trace *t)
{
    return scn_run_end(cfg, arg, t);
}

static void test_end_exhaustive(void **state)
{
    (void)state;
    scn_end_plan plan = {.rounds = 1, .settle = 1};
    sim_config cfg = sim_config_default();
    cfg.eager_at_delivery = 0;      /* see test_events.c */
    uint64_t max = scn_env_count("OTM_SIM_EXPLORE_MAX", 2000000);
    sim_explore_stats st = sim_explore(&cfg, run_end, &plan, 100000, max);
    print_message("a region faulting on worker 1 while one runs on worker 2: %llu "
                  "schedules up to the exit protocol (%llu cut as reorderings), %s\n",
                  (unsigned long long)st.schedules, (unsigned long long)st.pruned,
                  st.complete ? "all of them"
                  : st.schedules >= max ? "stopped there by OTM_SIM_EXPLORE_MAX"
                                        : "INCOMPLETE");
    assert_int_equal(st.failures, 0);
    assert_true(st.complete || (getenv("OTM_SIM_EXPLORE_MAX") && st.schedules >= max));
}

static void test_end_seeded(void **state)
{
    (void)state;
    scn_end_plan plan = {.rounds = 6, .main_thread = 1};
    sim_config cfg = sim_config_default();
    uint64_t seeds = scn_env_count("OTM_SIM_SEEDS", 2000);
    for (uint64_t seed = 1; seed <= seeds; seed++) {
        cfg.seed = seed;
        if (scn_run_end(&cfg, &plan, NULL) != SIM_OK)
            fail_msg("seed %llu", (unsigned long long)seed);
    }
    print_message("a fault while another thread runs 6 regions and main waits: %llu "
                  "seeds passed\n", (unsigned long long)seeds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_end_exhaustive),
        cmocka_unit_test(test_end_seeded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
