/*
 * test_trace_hook.c - the core's trace hook (otm/node.h) in the simulated
 * world: every event of both sides is announced once (BEGIN), runs once
 * (RUN) and ends once (END) in that order, nothing reaches RUN or END
 * without a BEGIN, an event is ended when END is called and still holds
 * its tag. A fault-free job of every kind announces exactly the events it
 * issues, on the host and on the workers; jobs with injected faults keep
 * the order (events torn down live get no END, as the contract says).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "scenarios.h"

#define SEEDS 500
#define MAXEV 256

typedef struct rec {
    uint8_t side, kind, ran, ended;
} rec;

/* What the hook saw in the current job (the simulator runs one job at a
 * time in this thread, so the hook's record can be file-scope). */
static rec recs[MAXEV];
static int nrec, violations;
static char first_violation[160];

static void violation(const otm_event *ev, const char *what)
{
    if (!violations++)
        snprintf(first_violation, sizeof first_violation, "%s %s: %s",
                 ev->side == OTM_ORIGIN ? "origin" : "dest", otm_kind_name(ev->kind), what);
}

static rec *find(const otm_event *ev)
{
    uint64_t i = ev->trace[0];
    return i >= 1 && i <= (uint64_t)nrec ? &recs[i - 1] : NULL;
}

static void hook(void *ctx, otm_event *ev, int point)
{
    (void)ctx;
    rec *r = point == OTM_TRACE_BEGIN ? NULL : find(ev);
    switch (point) {
    case OTM_TRACE_BEGIN:
        if (nrec == MAXEV || otm_event_ended(ev) || ev->trace[0]) {
            violation(ev, "BEGIN of an ended or already announced event");
            return;
        }
        recs[nrec++] = (rec){.side = ev->side, .kind = (uint8_t)ev->kind};
        ev->trace[0] = (uint64_t)nrec;
        break;
    case OTM_TRACE_RUN:
        if (!r || r->ran || r->ended || otm_event_ended(ev)) {
            violation(ev, "RUN without BEGIN, twice, or after END");
            return;
        }
        r->ran = 1;
        break;
    case OTM_TRACE_END:
        if (!r || !r->ran || r->ended || !otm_event_ended(ev)) {
            violation(ev, "END without BEGIN and RUN, twice, or not ended");
            return;
        }
        if (ev->side == OTM_ORIGIN && ev->kind != OTM_KIND_SYNC &&
            ev->state == OTM_FINISHED && ev->tag < 0) {
            violation(ev, "END of a finished event without its tag");
            return;
        }
        r->ended = 1;
        break;
    default: violation(ev, "unknown point");
    }
}

static void reset(void)
{
    memset(recs, 0, sizeof recs);
    nrec = violations = 0;
    first_violation[0] = '\0';
}

/* Counts records of one side and kind; `ended` only those that ended. */
static int count(int side, int kind, int ended)
{
    int n = 0;
    for (int i = 0; i < nrec; i++)
        n += recs[i].side == side && recs[i].kind == kind && (!ended || recs[i].ended);
    return n;
}

static sim_result job(uint64_t seed, int faults)
{
    sim_config cfg = scn_fault_config(seed);
    cfg.quiet = 1;
    scn s;
    if (scn_open(&s, &cfg, 2))
        return SIM_VIOLATION;
    for (int r = 0; r <= 2; r++)
        sim_world_node(s.w, r)->hooks.trace = hook;
    if (faults)
        sim_world_fail_call(s.w, (int)(seed % 3), seed & 1 ? SIM_FN_Isend : SIM_FN_Test,
                            1 + seed % 25);
    s.keep = 1;
    scn_enqueue_all_kinds(&s);
    sim_result res = sim_world_run(s.w);
    if (res == SIM_OK && !scn_all_ended(&s))
        res = SIM_VIOLATION;
    scn_drop_refs(&s);
    if (res == SIM_OK)
        res = sim_world_teardown(s.w);
    scn_close(&s);
    return res;
}

/* The all-kinds program (sim/scenarios.h) plus the exit: per kind, the
 * events of the host and of the workers (an exchange has a half on each). */
static const struct {
    int kind, host, workers;
} expected[] = {
    {OTM_KIND_LOAD, 2, 2},     {OTM_KIND_SUBMIT, 2, 2},  {OTM_KIND_SYNC, 1, 0},
    {OTM_KIND_EXCHANGE, 1, 2}, {OTM_KIND_EXECUTE, 1, 1}, {OTM_KIND_RETRIEVE, 2, 2},
    {OTM_KIND_ALLOC, 1, 1},    {OTM_KIND_EXIT, 2, 2},    {OTM_KIND_DELETE, 0, 0},
};

static void test_fault_free(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        reset();
        sim_result r = job(seed, 0);
        if (r != SIM_OK || violations)
            fail_msg("seed %llu: result %d, %d violation(s): %s", (unsigned long long)seed,
                     r, violations, first_violation);
        int total = 0;
        for (size_t k = 0; k < sizeof expected / sizeof expected[0]; k++) {
            int kind = expected[k].kind;
            total += expected[k].host + expected[k].workers;
            if (count(OTM_ORIGIN, kind, 1) != expected[k].host ||
                count(OTM_DEST, kind, 1) != expected[k].workers)
                fail_msg("seed %llu: %s: host %d/%d ended, workers %d/%d ended, want %d "
                         "and %d", (unsigned long long)seed, otm_kind_name(kind),
                         count(OTM_ORIGIN, kind, 1), count(OTM_ORIGIN, kind, 0),
                         count(OTM_DEST, kind, 1), count(OTM_DEST, kind, 0),
                         expected[k].host, expected[k].workers);
        }
        assert_int_equal(nrec, total);
    }
    print_message("%d fault-free schedules: every event announced, run and ended once, "
                  "in order, on both sides\n", SEEDS);
}

static void test_with_faults(void **state)
{
    (void)state;
    int unended = 0, failed_jobs = 0;
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        reset();
        sim_result r = job(seed, 1);
        if (r != SIM_OK || violations)
            fail_msg("seed %llu: result %d, %d violation(s): %s", (unsigned long long)seed,
                     r, violations, first_violation);
        int ended = 0;
        for (int i = 0; i < nrec; i++)
            ended += recs[i].ended;
        unended += nrec - ended;
        failed_jobs += count(OTM_ORIGIN, OTM_KIND_EXIT, 1) < 2 || nrec != ended;
    }
    print_message("%d schedules with a failed MPI call: order kept; %d events torn down "
                  "live over %d jobs that did not end cleanly\n", SEEDS, unended,
                  failed_jobs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_free),
        cmocka_unit_test(test_with_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
