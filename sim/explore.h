/*
 * sim/explore.h - exhaustive exploration of a scenario's schedules.
 *
 * A scenario builds a world (sim/world.h) from the config it is given, runs
 * it and checks it; the explorer calls it once per schedule, each time with
 * a choice string to replay (SIM_REPLAY) and partial-order reduction on,
 * and reads back the run's trace to pick the next prefix. Nothing else of
 * the world is seen here: the choices, their trace and the sleep sets that
 * prune reorderings are the scheduler's.
 */
#ifndef SIM_EXPLORE_H
#define SIM_EXPLORE_H

#include <stddef.h>
#include <stdint.h>

#include "world.h"

/* Called for each schedule: builds a world from cfg (mode SIM_REPLAY with the
 * prefix to follow), runs it, checks the results, and moves the run's trace
 * into *trace before destroying the world. */
typedef sim_result (*sim_scenario_fn)(const sim_config *cfg, void *arg,
                                      sim_trace *trace);

typedef struct sim_explore_stats {
    uint64_t schedules;         /* runs, including pruned ones */
    uint64_t pruned;            /* runs cut short as covered by another */
    uint64_t failures;
    int complete;           /* every schedule within the bound was run */
    size_t deepest;         /* most choices in one run: complete and
                             * deepest <= depth means truly exhaustive */
} sim_explore_stats;

/* Depth-first enumeration of every schedule of `fn` after its set-up mark,
 * branching on the first `depth` choices of each run (later choices take the
 * first option), with partial-order reduction (sleep sets: a schedule that
 * only reorders independent moves of one already run is cut short and
 * counted as pruned), stopping after `max_schedules`. Stops at the first
 * failure (stats.failures = 1). */
sim_explore_stats sim_explore(const sim_config *base, sim_scenario_fn fn,
                              void *arg, size_t depth, uint64_t max_schedules);

#endif
