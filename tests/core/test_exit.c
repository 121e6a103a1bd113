/*
 * test_exit.c - the exit protocol: EXIT while events are in flight from
 * several queues; in every explored schedule each event ends with a status,
 * every worker acknowledges, frees its communicators and finalizes; and a
 * dead worker turns into an error on the host instead of a hang.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "explore.h"
#include "scenarios.h"

/* Several queues, several workers, exit requested before anything ran. */
static void enqueue_busy(scn *s, int workers)
{
    static uint8_t in[4][32];
    for (int w = 1; w <= workers; w++) {
        int q = (w - 1) % s->nq;
        scn_pattern(in[w - 1], 32, (unsigned)w);
        scn_load(s, q, w);
        scn_submit(s, q, w, scn_global(s, w), in[w - 1], 9);
        scn_execute(s, (q + 1) % s->nq, w, SIM_K_INC, scn_global(s, w), 9);
        scn_retrieve(s, q, w, s->out[w], scn_global(s, w), 9);
        scn_alloc(s, (q + 1) % s->nq, w, 5, &s->addr[w]);
    }
}

static sim_result check_exit(scn *s, int workers)
{
    if (!scn_all_ended(s))
        return SIM_VIOLATION;
    otm_node *host = sim_world_node(s->w, 0);
    if (host->life != OTM_LIFE_DONE || host->exit_failures)
        return SIM_VIOLATION;
    for (int w = 1; w <= workers; w++)
        if (sim_world_node(s->w, w)->life != OTM_LIFE_DONE)
            return SIM_VIOLATION;
    scn_drop_refs(s);
    /* Teardown checks communicators, requests, memory and MPI_Finalize. */
    return sim_world_teardown(s->w);
}

typedef struct exit_arg {
    int workers, queues;
} exit_arg;

static sim_result run_exit(const sim_config *cfg, void *arg, sim_trace *t)
{
    exit_arg *a = arg;
    sim_config c = *cfg;
    c.workers = a->workers;
    scn s;
    if (scn_open(&s, &c, a->queues))
        return SIM_VIOLATION;
    s.keep = 1;
    enqueue_busy(&s, a->workers);
    sim_result res = sim_world_run(s.w);
    if (res == SIM_OK)
        res = check_exit(&s, a->workers);
    if (t)
        sim_world_take_trace(s.w, t);
    scn_close(&s);
    return res;
}

static void test_exit_in_flight_seeded(void **state)
{
    (void)state;
    exit_arg a = {3, 3};
    sim_config cfg = sim_config_default();
    for (uint64_t seed = 1; seed <= 2000; seed++) {
        cfg.seed = seed;
        if (run_exit(&cfg, &a, NULL) != SIM_OK)
            fail_msg("seed %llu", (unsigned long long)seed);
    }
    print_message("exit with 3 queues x 3 workers in flight: 2000 seeds passed\n");
}

/* The smallest case with two queues in flight, every schedule. */
static sim_result run_small(const sim_config *cfg, void *arg, sim_trace *t)
{
    (void)arg;
    sim_config c = *cfg;
    c.workers = 2;
    scn s;
    if (scn_open(&s, &c, 2))
        return SIM_VIOLATION;
    s.keep = 1;
    scn_alloc(&s, 0, 1, 1, &s.addr[0]);
    scn_alloc(&s, 1, 2, 1, &s.addr[1]);
    sim_result res = sim_world_run(s.w);
    if (res == SIM_OK)
        res = check_exit(&s, 2);
    if (t)
        sim_world_take_trace(s.w, t);
    scn_close(&s);
    return res;
}

static void test_exit_in_flight_exhaustive(void **state)
{
    (void)state;
    sim_config cfg = sim_config_default();
    cfg.eager_at_delivery = 0;      /* see test_events.c */
    sim_explore_stats st = sim_explore(&cfg, run_small, NULL, 100000, 5000000);
    print_message("exit with 2 queues x 2 workers in flight: %llu schedules "
                  "(%llu cut as reorderings), %s\n",
                  (unsigned long long)st.schedules, (unsigned long long)st.pruned,
                  st.complete ? "all of them" : "INCOMPLETE");
    assert_int_equal(st.failures, 0);
    assert_true(st.complete);
}

/* A worker that dies mid-job: the host's events to it time out (virtual
 * time), exit completes on the host and reports the missing
 * acknowledgement; the other worker exits cleanly. */
static void test_dead_worker_times_out(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        sim_config cfg = scn_fault_config(seed);
        scn s;
        assert_int_equal(scn_open(&s, &cfg, 2), 0);
        s.keep = 1;
        enqueue_busy(&s, 2);
        sim_world_stop_rank(s.w, 2);
        assert_int_equal(sim_world_run(s.w), SIM_OK);
        assert_true(scn_all_ended(&s));
        otm_node *host = sim_world_node(s.w, 0);
        assert_int_equal(host->life, OTM_LIFE_DONE);
        assert_int_equal(host->exit_failures, 1);
        assert_int_equal(sim_world_node(s.w, 1)->life, OTM_LIFE_DONE);
        int timed_out = 0;
        for (int i = 0; i < s.nev; i++)
            timed_out += s.ev[i]->rank == 2 && s.ev[i]->status == OTM_ERR_TIMEOUT;
        assert_true(timed_out >= 1);
        assert_true(sim_world_time(s.w) > 0);
        scn_close(&s);
    }
}

/* Operations queued while the host did something else for a long time do
 * not time out before they even started: timeouts count from the first
 * time an event could run. */
static void test_queued_ops_do_not_time_out(void **state)
{
    (void)state;
    sim_config cfg = sim_config_default();
    cfg.node.timeout_ns = 1000000;
    scn s;
    assert_int_equal(scn_open(&s, &cfg, 1), 0);
    s.keep = 1;
    enqueue_busy(&s, 2);
    sim_world_advance(s.w, 50 * cfg.node.timeout_ns);   /* the host was busy */
    assert_int_equal(sim_world_run(s.w), SIM_OK);
    for (int i = 0; i < s.nev; i++)
        assert_int_equal(s.ev[i]->state, OTM_FINISHED);
    scn_drop_refs(&s);
    assert_int_equal(sim_world_teardown(s.w), SIM_OK);
    scn_close(&s);
}

/* Progressing the exit before it began does nothing: no EXIT leaves, the
 * host keeps running and its workers keep serving. */
static void test_exit_progress_before_exit(void **state)
{
    (void)state;
    sim_config cfg = sim_config_default();
    scn s;
    assert_int_equal(scn_open(&s, &cfg, 1), 0);
    otm_node *host = sim_world_node(s.w, 0);
    assert_int_equal(otm_host_exit_progress(host), 0);
    assert_int_equal(host->life, OTM_LIFE_RUNNING);
    assert_null(host->exit_events);
    uint64_t addr = 0;
    assert_int_equal(scn_alloc(&s, 0, 1, 8, &addr), OTM_OK);
    assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
    assert_int_equal(s.q[0]->status, OTM_OK);
    assert_int_equal(sim_world_run(s.w), SIM_OK);
    assert_int_equal(sim_world_teardown(s.w), SIM_OK);
    scn_close(&s);
}

/* The plugin ends its node, then the node's owner does again: the second
 * otm_node_fini finds nothing to free (no communicator, allocation or
 * request freed twice: the teardown's counts would show it). */
static void test_fini_twice(void **state)
{
    (void)state;
    sim_config cfg = sim_config_default();
    scn s;
    assert_int_equal(scn_open(&s, &cfg, 1), 0);
    assert_int_equal(scn_load(&s, 0, 1), OTM_OK);
    assert_int_equal(sim_world_run(s.w), SIM_OK);
    for (int r = 0; r <= cfg.workers; r++) {
        sim_world_act_as(s.w, r);
        otm_node_fini(sim_world_node(s.w, r));
    }
    assert_int_equal(sim_world_teardown(s.w), SIM_OK);
    scn_close(&s);
}

/* A job torn down while its exit protocol runs (a program that ends the
 * plugin in the middle): every rank frees what it holds, the host's table
 * of EXIT events too, and MPI ends with nothing left. */
static int exit_started(void *ctx)
{
    return ((otm_node *)ctx)->exit_events != NULL;
}

static void test_teardown_during_exit(void **state)
{
    (void)state;
    sim_config cfg = sim_config_default();
    scn s;
    assert_int_equal(scn_open(&s, &cfg, 1), 0);
    otm_node *host = sim_world_node(s.w, 0);
    otm_host_exit_begin(host);
    assert_int_equal(sim_world_run_until(s.w, exit_started, host), SIM_OK);
    assert_int_equal(host->life, OTM_LIFE_EXITING);
    assert_int_equal(sim_world_teardown(s.w), SIM_OK);
    scn_close(&s);
}

/* With one event tag and that tag retired (its event failed without a
 * clean answer), no event can start any more; the exit still reaches every
 * worker on its own tag and the job ends cleanly. */
static void test_exit_with_every_tag_retired(void **state)
{
    (void)state;
    sim_config cfg = sim_config_default();
    cfg.node.ncomms = 1;
    cfg.node.tag_space = 1;
    cfg.node.timeout_ns = 1000000;
    scn s;
    assert_int_equal(scn_open(&s, &cfg, 1), 0);
    /* The host's first Isend is the notification of the first event. */
    sim_world_fail_call(s.w, 0, SIM_FN_Isend, 1);
    scn_alloc(&s, 0, 1, 8, &s.addr[0]);
    assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
    assert_int_equal(s.q[0]->status, OTM_ERR_MPI);
    s.q[0]->status = OTM_OK;
    otm_node *host = sim_world_node(s.w, 0);
    assert_int_equal(host->stats.retired_tags, 1);
    scn_alloc(&s, 0, 1, 8, &s.addr[1]);       /* cannot get a tag: times out */
    assert_int_equal(sim_world_run(s.w), SIM_OK);
    assert_int_equal(s.q[0]->status, OTM_ERR_TIMEOUT);
    assert_int_equal(host->exit_failures, 0);
    assert_int_equal(sim_world_node(s.w, 1)->life, OTM_LIFE_DONE);
    assert_int_equal(sim_world_node(s.w, 2)->life, OTM_LIFE_DONE);
    assert_int_equal(sim_world_teardown(s.w), SIM_OK);
    scn_close(&s);
}

/* A reply that comes after its event timed out: the event's tag must be
 * retired, since the late reply is still on its way. The world's oracle of
 * tags (sim/oracle.h) fails the run if a later event takes that tag while
 * the reply can still arrive; the later events (to worker 2: worker 1,
 * silent for a timeout, is lost) run on the other tag. */
static void test_late_reply_retires_its_tag(void **state)
{
    (void)state;
    sim_config cfg = sim_config_default();
    cfg.node.ncomms = 1;
    cfg.node.tag_space = 2;
    cfg.node.timeout_ns = 1000000;
    scn s;
    assert_int_equal(scn_open(&s, &cfg, 1), 0);
    /* Worker 1's first Isend is its reply to the first event: it comes
     * half a timeout after that event timed out. */
    sim_world_delay(s.w, 1, 1, 3 * cfg.node.timeout_ns / 2);
    scn_alloc(&s, 0, 1, 8, &s.addr[0]);
    for (int i = 1; i < 3; i++)
        scn_alloc(&s, 0, 2, 8, &s.addr[i]);
    assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
    otm_node *host = sim_world_node(s.w, 0);
    assert_int_equal(s.q[0]->status, OTM_ERR_TIMEOUT);
    assert_int_equal(host->stats.retired_tags, 1);
    assert_int_equal(sim_world_host_seen(s.w)->lost[1], 1);
    assert_true(s.addr[1] != 0 && s.addr[2] != 0);
    assert_int_equal(sim_world_run(s.w), SIM_OK);
    scn_close(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_in_flight_seeded),
        cmocka_unit_test(test_exit_in_flight_exhaustive),
        cmocka_unit_test(test_dead_worker_times_out),
        cmocka_unit_test(test_late_reply_retires_its_tag),
        cmocka_unit_test(test_queued_ops_do_not_time_out),
        cmocka_unit_test(test_exit_with_every_tag_retired),
        cmocka_unit_test(test_exit_progress_before_exit),
        cmocka_unit_test(test_fini_twice),
        cmocka_unit_test(test_teardown_during_exit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
