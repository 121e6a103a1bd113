/*
 * sim_bench.c - how fast the simulator runs the core (a benchmark, not a
 * test: it prints figures and asserts nothing about time).
 *
 *   simulated events/s   event records that ran to their end per second of
 *                        wall time, both halves (the host's and the
 *                        worker's record of each operation), in a world of
 *                        4 workers and 8 host queues, random schedules,
 *                        invariant checks after every step; host operations
 *                        per second are printed beside it
 *   schedules/s          the exhaustive explorer on the SUBMIT case
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "explore.h"
#include "scenarios.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint8_t data[8][64];

/* One world: `per_queue` small events on each of 8 queues. */
static uint64_t run_world(uint64_t seed, int per_queue, uint64_t *ops)
{
    sim_config cfg = sim_config_default();
    cfg.workers = 4;
    cfg.seed = seed;
    cfg.node.inline_max = 64;
    cfg.node.frag_size = 64;
    scn s;
    if (scn_open(&s, &cfg, 8))
        exit(1);
    for (int q = 0; q < 8; q++)
        scn_load(&s, q, 1 + q % 4);
    uint64_t events = 8;
    /* Like a program: a few operations per queue, then a synchronize. */
    for (int i = 0; i < per_queue; i++) {
        for (int q = 0; q < 8; q++) {
            int w = 1 + q % 4;
            uint64_t g = scn_global(&s, w) + (uint64_t)(q / 4) * 32;
            if (i % 2 == 0)
                scn_submit(&s, q, w, g, data[q], 16);
            else
                scn_retrieve(&s, q, w, data[q], g, 16);
            events++;
        }
        if (i % 4 == 3)
            for (int q = 0; q < 8; q++)
                if (sim_world_run_queue(s.w, s.q[q]) != SIM_OK)
                    exit(1);
    }
    if (sim_world_run(s.w) != SIM_OK)
        exit(1);
    uint64_t records = 0;
    for (int r = 0; r <= 4; r++)
        for (int k = 0; k < OTM_KIND_END; k++)
            records += sim_world_node(s.w, r)->stats.events[k];
    if (sim_world_teardown(s.w) != SIM_OK)
        exit(1);
    scn_close(&s);
    *ops += events + 4;     /* plus the EXIT of each worker */
    return records;
}

static sim_result explore_submit(const sim_config *cfg, void *arg, sim_trace *t)
{
    (void)arg;
    return scn_run_case(cfg, SCN_SUBMIT, 5, t);
}

int main(void)
{
    double t0 = now_s();
    uint64_t events = 0, ops = 0;
    for (uint64_t seed = 1; seed <= 200; seed++)
        events += run_world(seed, 250, &ops);
    double dt = now_s() - t0;
    printf("simulated events: %llu in %.2f s = %.0f events/s, %.0f host "
           "operations/s (4 workers, 8 queues, checks on)\n",
           (unsigned long long)events, dt, (double)events / dt, (double)ops / dt);

    sim_config cfg = sim_config_default();
    cfg.workers = 1;
    cfg.node.ncomms = 1;
    t0 = now_s();
    sim_explore_stats st = sim_explore(&cfg, explore_submit, NULL, 100000, 10000000);
    dt = now_s() - t0;
    printf("exhaustive SUBMIT (size 5, F=4): %llu schedules in %.3f s = %.0f schedules/s\n",
           (unsigned long long)st.schedules, dt, (double)st.schedules / dt);
    return st.failures ? 1 : 0;
}
