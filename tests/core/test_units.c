/*
 * test_units.c - a worker serving several devices (otm/node.h's units) in
 * the simulated world: two workers with their CPU and two proxied units
 * each, whose memory is an arena the worker cannot address
 * (sim/device.h). Every kind on a proxied unit, exchanges within a rank
 * (proxied to proxied, proxied to the CPU) and across ranks, a DELETE of
 * another unit's address refused (scn_run_units): 1,000 seeded schedules
 * per payload size; every schedule of the smallest case (a byte between
 * proxied units of two ranks); the fault sweep's faults over the same
 * program (3,000 seeds: every event ends, nothing is left, the job ends);
 * and a unit the worker does not have, refused at its gate.
 *
 * OTM_SIM_SEEDS=N and OTM_SIM_EXPLORE_MAX=N scale the run down as in
 * test_events.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "explore.h"
#include "scenarios.h"

#define F 4
#define SEEDS 1000
#define SWEEP_SEEDS 3000
#define EXPLORE_MAX 2000000

static const uint64_t sizes[] = {1, F + 1, 3 * F + 1, SIM_GLOBAL_SIZE};

static sim_config base_config(void)
{
    sim_config c = sim_config_default();
    c.node.frag_size = F;
    c.node.inline_max = 2;
    c.units = 3;
    return c;
}

static void test_seeded(void **state)
{
    (void)state;
    uint64_t nseeds = scn_env_count("OTM_SIM_SEEDS", SEEDS);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (uint64_t seed = 1; seed <= nseeds; seed++) {
            sim_config cfg = base_config();
            cfg.seed = seed;
            sim_result r = scn_run_units(&cfg, sizes[i], NULL);
            if (r != SIM_OK)
                fail_msg("units, size %llu, seed %llu: result %d",
                         (unsigned long long)sizes[i], (unsigned long long)seed, r);
        }
    print_message("units: %d sizes x %llu seeds passed\n",
                  (int)(sizeof sizes / sizeof *sizes), (unsigned long long)nseeds);
}

static sim_result exh_run(const sim_config *cfg, void *arg, sim_trace *t)
{
    (void)arg;
    return scn_run_unit_exchange(cfg, t);
}

static void test_exhaustive_exchange(void **state)
{
    (void)state;
    sim_config cfg = base_config();
    cfg.node.ncomms = 1;
    cfg.eager_at_delivery = 0;
    uint64_t max = scn_env_count("OTM_SIM_EXPLORE_MAX", EXPLORE_MAX);
    sim_explore_stats st = sim_explore(&cfg, exh_run, NULL, 100000, max);
    int bounded = max < EXPLORE_MAX && !st.complete && st.schedules >= max;
    print_message("a byte between proxied units of two ranks: %llu schedules explored "
                  "(%llu cut as reorderings), %s\n", (unsigned long long)st.schedules,
                  (unsigned long long)st.pruned,
                  st.complete ? "all of them"
                  : bounded   ? "stopped there by OTM_SIM_EXPLORE_MAX (not exhaustive)"
                              : "INCOMPLETE");
    assert_int_equal(st.failures, 0);
    assert_true(st.complete || bounded);
}

/* Faults drawn per seed over the units' program: the job must end
 * whatever they break, and leave nothing behind (the world's teardown
 * checks requests, allocations and the arenas' allocations are the
 * device's to drop). */
static void test_sweep(void **state)
{
    (void)state;
    uint64_t nseeds = scn_env_count("OTM_SIM_SEEDS", SWEEP_SEEDS);
    uint64_t count[SCN_F_KINDS] = {0}, failed = 0;
    for (uint64_t seed = 1; seed <= nseeds; seed++) {
        sim_config cfg = scn_fault_config(seed);
        cfg.units = 3;
        cfg.node.frag_size = F;
        cfg.node.inline_max = 2;
        cfg.quiet = 1;
        scn s;
        assert_int_equal(scn_open(&s, &cfg, 1), 0);
        scn_arm_faults(s.w, seed, count);
        int d11 = SCN_DEV(1, 1), d22 = SCN_DEV(2, 2);
        scn_load(&s, 0, d11);
        scn_load(&s, 0, d22);
        scn_submit(&s, 0, d11, scn_global(&s, d11), s.in[1], F + 1);
        scn_execute(&s, 0, d11, SIM_K_INC, scn_global(&s, d11), F + 1);
        scn_exchange(&s, 0, d11, scn_global(&s, d11), d22, scn_global(&s, d22), F + 1);
        scn_retrieve(&s, 0, d22, s.out[2], scn_global(&s, d22), F + 1);
        sim_result r = sim_world_run(s.w);
        failed += s.q[0]->status != OTM_OK;
        if (r == SIM_OK)
            r = sim_world_teardown(s.w);
        if (r != SIM_OK)
            fail_msg("units under faults, seed %llu: result %d (replay: OTM_SIM_SEED=%llu)",
                     (unsigned long long)seed, r, (unsigned long long)seed);
        scn_close(&s);
    }
    print_message("units under faults: %llu seeds ended (%llu with a failed queue; faults "
                  "drawn: %llu calls, %llu allocations, %llu delays, %llu stops)\n",
                  (unsigned long long)nseeds, (unsigned long long)failed,
                  (unsigned long long)count[SCN_F_CALL], (unsigned long long)count[SCN_F_ALLOC],
                  (unsigned long long)count[SCN_F_DELAY], (unsigned long long)count[SCN_F_STOP]);
}

/* A unit the worker does not serve, and one of a world without proxied
 * units: refused at the gate with OTM_ERR_NO_DEVICE, the worker serving
 * the next event. */
static void test_no_such_unit(void **state)
{
    (void)state;
    for (int units = 0; units <= 3; units += 3) {
        sim_config cfg = base_config();
        cfg.units = units;
        scn s;
        assert_int_equal(scn_open(&s, &cfg, 2), 0);
        uint64_t addr = 0;
        scn_alloc(&s, 0, SCN_DEV(1, 3), 8, &addr);
        scn_alloc(&s, 1, SCN_DEV(1, units ? 2 : 0), 8, &addr);
        assert_int_equal(sim_world_run(s.w), SIM_OK);
        assert_int_equal(s.q[0]->status, OTM_ERR_NO_DEVICE);
        assert_int_equal(s.q[1]->status, OTM_OK);
        assert_true(addr != 0);
        assert_int_equal(sim_world_teardown(s.w), SIM_OK);
        scn_close(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_such_unit),
        cmocka_unit_test(test_seeded),
        cmocka_unit_test(test_exhaustive_exchange),
        cmocka_unit_test(test_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
