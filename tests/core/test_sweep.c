/*
 * test_sweep.c - the fault-injection sweep: 10,000 seeded schedules
 * (OTM_SIM_SEEDS), each with faults drawn from its seed (scn_arm_faults:
 * failed MPI calls on any rank, failed allocations, delayed messages, a
 * stopped worker), over a scenario that uses every event kind on two
 * queues and two workers with virtual-time timeouts. For every seed: no crash, the run ends (no deadlock, no
 * livelock), every host operation ended FINISHED or FAILED with a status,
 * and the teardown finds no request, communicator or buffer left behind.
 * After the faulty job, a second, fault-free job on a fresh world must
 * pass completely: the healing phase. The same for the end of the job
 * from several host threads (scn_run_end: a region faults while another
 * thread's regions run): whatever the faults, one thread runs the end,
 * alone, and nothing touches the node after it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "scenarios.h"

/* OTM_SIM_SEEDS, default 10,000 (memcheck runs fewer). */
#define SEEDS 10000

/* One job; returns SIM_OK or the failure. `faults` arms them. */
static sim_result job(uint64_t seed, uint64_t *count, int *failed_ops)
{
    sim_config cfg = scn_fault_config(seed);
    cfg.quiet = 1;
    scn s;
    if (scn_open(&s, &cfg, 2))
        return SIM_VIOLATION;
    s.keep = 1;
    if (count)
        scn_arm_faults(s.w, seed, count);
    scn_enqueue_all_kinds(&s);
    sim_result res = sim_world_run(s.w);
    if (res == SIM_OK && !scn_all_ended(&s))
        res = SIM_VIOLATION;
    /* Without faults the data must be right too: submitted, incremented,
     * retrieved in the order of queue 0. */
    for (int i = 0; !count && res == SIM_OK && i < 13; i++)
        if (s.out[1][i] != (uint8_t)(s.in[1][i] + 1))
            res = SIM_VIOLATION;
    for (int i = 0; i < s.nev; i++)
        *failed_ops += s.ev[i]->state == OTM_FAILED;
    scn_drop_refs(&s);
    if (res == SIM_OK)
        res = sim_world_teardown(s.w);
    scn_close(&s);
    return res;
}

typedef struct armed {
    uint64_t seed, *count;
} armed;

static void arm_end(sim_world *w, void *ctx)
{
    armed *a = ctx;
    scn_arm_faults(w, a->seed, a->count);
}

/* The end of the job from several threads, with the faults of `seed`
 * (count not NULL) or without. */
static sim_result job_end(uint64_t seed, uint64_t *count)
{
    sim_config cfg = scn_fault_config(seed);
    cfg.quiet = 1;
    armed a = {seed, count};
    scn_end_plan plan = {.rounds = 2, .main_thread = 1, .arm = count ? arm_end : NULL,
                         .arm_ctx = &a};
    return scn_run_end(&cfg, &plan, NULL);
}

static void test_sweep_end(void **state)
{
    (void)state;
    uint64_t count[SCN_F_KINDS] = {0}, n = scn_env_count("OTM_SIM_SEEDS", SEEDS);
    for (uint64_t seed = 1; seed <= n; seed++) {
        sim_result r = job_end(seed, count);
        if (r != SIM_OK)
            fail_msg("seed %llu: the end from several threads, with faults, ended with "
                     "result %d (replay: this test with the seed)",
                     (unsigned long long)seed, r);
        r = job_end(seed, NULL);
        if (r != SIM_OK)
            fail_msg("seed %llu: the fault-free end from several threads after it "
                     "failed (%d)", (unsigned long long)seed, r);
    }
    print_message("%llu seeds of the end from several threads, each with faults then "
                  "without; faults injected:\n", (unsigned long long)n);
    for (int k = 0; k < SCN_F_KINDS; k++)
        print_message("  %-18s %llu\n", scn_fault_names[k], (unsigned long long)count[k]);
}

static void test_sweep(void **state)
{
    (void)state;
    uint64_t count[SCN_F_KINDS] = {0}, with_errors = 0;
    uint64_t n = scn_env_count("OTM_SIM_SEEDS", SEEDS);
    for (uint64_t seed = 1; seed <= n; seed++) {
        int failed = 0, healed_failed = 0;
        sim_result r = job(seed, count, &failed);
        if (r != SIM_OK)
            fail_msg("seed %llu: faulty job ended with result %d (replay: this "
                     "test with the seed)", (unsigned long long)seed, r);
        with_errors += failed > 0;
        r = job(seed, NULL, &healed_failed);
        if (r != SIM_OK || healed_failed)
            fail_msg("seed %llu: the fault-free job after it failed (%d, %d "
                     "operations failed)", (unsigned long long)seed, r, healed_failed);
    }
    print_message("%llu seeds, each a faulty job then a fault-free one; faults "
                  "injected:\n", (unsigned long long)n);
    for (int k = 0; k < SCN_F_KINDS; k++)
        print_message("  %-18s %llu\n", scn_fault_names[k], (unsigned long long)count[k]);
    print_message("%llu faulty jobs reported errors, all ended, nothing leaked, "
                  "every fault-free job passed\n", (unsigned long long)with_errors);
    assert_true(with_errors > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_sweep_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
