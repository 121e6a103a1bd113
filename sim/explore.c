/*
 * sim/explore.c - the exhaustive explorer (sim/explore.h): a depth-first
 * walk over the choice strings of a scenario, each run replayed by a fresh
 * world whose scheduler prunes reorderings (sim/world.c, sleep sets).
 */
#include "explore.h"

#include <stdlib.h>
#include <string.h>

sim_explore_stats sim_explore(const sim_config *base, sim_scenario_fn fn,
                              void *arg, size_t depth, uint64_t max_schedules)
{
    sim_explore_stats stats = {0};
    uint16_t *prefix = NULL;
    size_t plen = 0;
    for (;;) {
        sim_config cfg = *base;
        sim_trace t = {0};
        cfg.mode = SIM_REPLAY;
        cfg.por = 1;
        cfg.replay = prefix;
        cfg.nreplay = plen;
        sim_result res = fn(&cfg, arg, &t);
        stats.schedules++;
        if (t.len > stats.deepest)
            stats.deepest = t.len;
        if (res == SIM_PRUNED)
            stats.pruned++;
        else if (res != SIM_OK) {
            stats.failures = 1;
            sim_trace_free(&t);
            break;
        }
        /* Backtrack: the deepest choice that still has an untried option. */
        long i = (long)(t.len < depth ? t.len : depth) - 1;
        while (i >= (long)t.from && t.taken[i] + 1 >= t.options[i])
            i--;
        if (i < (long)t.from)
            i = -1;
        if (i < 0) {
            stats.complete = 1;
            sim_trace_free(&t);
            break;
        }
        uint16_t *p = realloc(prefix, (size_t)(i + 1) * sizeof *p);
        if (!p) {
            sim_trace_free(&t);
            break;
        }
        prefix = p;
        memcpy(prefix, t.taken, (size_t)i * sizeof *prefix);
        prefix[i] = (uint16_t)(t.taken[i] + 1);
        plen = (size_t)i + 1;
        sim_trace_free(&t);
        if (stats.schedules >= max_schedules)
            break;
    }
    free(prefix);
    return stats;
}
