/*
 * test_liveness.c - a host event waiting for a long kernel probes its
 * worker (src/core/liveness.c): a live worker answers every probe and the
 * region ends as it would have; a dead or stopped one is found within one
 * timeout of its last answer, whatever the region's length; a late or lost
 * answer to a probe counts as none; KERNEL_TIMEOUT still bounds the region's
 * length; and every schedule of the smallest cases, explored exhaustively,
 * ends that way.
 *
 * Virtual time: the timeout is 1 ms, so a probe goes out after 0.5 ms of
 * quiet and waits 0.5 ms for its answer; the world's clock moves in ticks
 * of 0.5 ms while anything is live. SIM_K_SLEEP is a kernel that runs for
 * its argument in virtual time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>

#include "explore.h"
#include "scenarios.h"

#define MS 1000000ull
#define TIMEOUT MS

static sim_config config(uint64_t seed)
{
    sim_config cfg = sim_config_default();
    cfg.seed = seed;
    cfg.workers = 1;
    cfg.node.timeout_ns = TIMEOUT;
    return cfg;
}

/* A load, then a region of `ns` on worker 1; the world runs the load. */
static otm_event *long_region(scn *s, uint64_t ns)
{
    s->keep = 1;
    scn_load(s, 0, 1);
    assert_int_equal(sim_world_run_queue(s->w, s->q[0]), SIM_OK);
    assert_int_equal(s->q[0]->status, OTM_OK);
    scn_execute(s, 0, 1, SIM_K_SLEEP, ns, 0);
    return s->ev[s->nev - 1];
}

static uint64_t pings_served(scn *s)
{
    return sim_world_node(s->w, 1)->stats.events[OTM_KIND_PING];
}

/* The end of the job: exit (orphaned probes run out first), teardown. */
static void finish(scn *s)
{
    assert_int_equal(sim_world_run(s->w), SIM_OK);
    assert_int_equal(sim_world_node(s->w, 0)->exit_failures, 0);
    scn_drop_refs(s);
    assert_int_equal(sim_world_teardown(s->w), SIM_OK);
    scn_close(s);
}

/* The end of a job whose worker is still in its region: the exit cannot
 * wait for it (the plugin's host then aborts the job rather than hang); the
 * world ends without a hang, with that one failure. */
static void exit_in_region(scn *s)
{
    assert_int_equal(sim_world_run(s->w), SIM_OK);
    assert_int_equal(sim_world_node(s->w, 0)->exit_failures, 1);
    scn_drop_refs(s);
    scn_close(s);
}

/* A region 40 timeouts long on a live worker: it ends as it would have,
 * after about one probe per half timeout, all answered. */
static void test_long_region_live_worker(void **state)
{
    (void)state;
    uint64_t pings = 0;
    for (uint64_t seed = 1; seed <= 100; seed++) {
        sim_config cfg = config(seed);
        scn s;
        assert_int_equal(scn_open(&s, &cfg, 1), 0);
        uint64_t t0 = sim_world_time(s.w);
        otm_event *ev = long_region(&s, 40 * TIMEOUT);
        assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
        assert_int_equal(ev->state, OTM_FINISHED);
        assert_true(sim_world_time(s.w) - t0 >= 40 * TIMEOUT);
        uint64_t n = pings_served(&s);
        assert_true(n >= 40 && n <= 80);        /* one per 0.5 to 1 ms */
        pings += n;
        finish(&s);
    }
    print_message("100 regions of 40 ms on a live worker: all finished, %llu probes "
                  "answered\n", (unsigned long long)pings);
}

/* With one tag, held by the region itself, a probe cannot start: it waits
 * for a tag without a time limit (the host's tags are exhausted, which
 * says nothing of the worker), and the region ends as it would have. */
static void test_probe_without_a_tag_waits(void **state)
{
    (void)state;
    sim_config cfg = config(5);
    cfg.node.ncomms = 1;
    cfg.node.tag_space = 1;
    scn s;
    assert_int_equal(scn_open(&s, &cfg, 1), 0);
    otm_event *ev = long_region(&s, 10 * TIMEOUT);
    assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
    assert_int_equal(ev->state, OTM_FINISHED);
    assert_int_equal(s.q[0]->status, OTM_OK);
    assert_int_equal(sim_world_host_seen(s.w)->lost[1], 0);
    finish(&s);
}

/* The worker stops (a kill, a SIGSTOP) in the middle of a region of
 * 1,000 timeouts: the region fails with OTM_ERR_UNRESPONSIVE within about
 * one timeout (plus a tick of the clock) of the stop, not at its end. */
static int region_started(void *ctx)
{
    scn *s = ctx;
    return sim_world_node(s->w, 1)->kern_head != NULL;
}

static void test_worker_stopped_mid_region(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 100; seed++) {
        sim_config cfg = config(seed);
        scn s;
        assert_int_equal(scn_open(&s, &cfg, 1), 0);
        otm_event *ev = long_region(&s, 1000 * TIMEOUT);
        assert_int_equal(sim_world_run_until(s.w, region_started, &s), SIM_OK);
        /* Some probes answered first, then the stop. */
        sim_world_advance(s.w, 3 * TIMEOUT);
        assert_int_equal(sim_world_run_until(s.w, region_started, &s), SIM_OK);
        uint64_t stop = sim_world_time(s.w);
        sim_world_stop_rank(s.w, 1);
        assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
        assert_int_equal(ev->state, OTM_FAILED);
        assert_int_equal(ev->status, OTM_ERR_UNRESPONSIVE);
        uint64_t found = sim_world_time(s.w) - stop;
        assert_true(found <= TIMEOUT + TIMEOUT / 10);
        assert_int_equal(s.q[0]->status, OTM_ERR_UNRESPONSIVE);
        s.q[0]->status = OTM_OK;
        /* The host's hook heard of it, once. */
        assert_int_equal(sim_world_host_seen(s.w)->lost[1], 1);
        /* Lost now: a later operation on it fails at once, no timeout. */
        uint64_t addr = 0, t = sim_world_time(s.w);
        assert_int_equal(scn_alloc(&s, 0, 1, 8, &addr), OTM_OK);
        assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
        assert_int_equal(s.q[0]->status, OTM_ERR_UNRESPONSIVE);
        assert_int_equal(sim_world_time(s.w), t);
        s.q[0]->status = OTM_OK;
        /* The exit cannot reach the stopped worker: one failure, no hang. */
        assert_int_equal(sim_world_run(s.w), SIM_OK);
        assert_int_equal(sim_world_node(s.w, 0)->exit_failures, 1);
        assert_int_equal(sim_world_host_seen(s.w)->lost[1], 1);
        scn_drop_refs(&s);
        scn_close(&s);
    }
}

/* The worker stops in the middle of a transfer (a SUBMIT of 16
 * fragments, some of them received): the transfer makes no progress for a
 * timeout and fails with OTM_ERR_TIMEOUT, the worker is lost (the hook
 * hears why), and the event ends then: within 1.5 timeouts of the stop,
 * not after another timeout for the sends the worker will never take. */
static int transfer_under_way(void *ctx)
{
    scn *s = ctx;
    const otm_event *ev = sim_world_node(s->w, 1)->data_head;
    return ev && ev->kind == OTM_KIND_SUBMIT && ev->moved >= 4;
}

static void test_worker_stopped_mid_transfer(void **state)
{
    (void)state;
    static uint8_t data[SIM_GLOBAL_SIZE];
    for (uint64_t seed = 1; seed <= 100; seed++) {
        sim_config cfg = config(seed);
        scn s;
        assert_int_equal(scn_open(&s, &cfg, 1), 0);
        s.keep = 1;
        scn_load(&s, 0, 1);
        assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
        scn_submit(&s, 0, 1, scn_global(&s, 1), data, sizeof data);
        otm_event *ev = s.ev[s.nev - 1];
        assert_int_equal(sim_world_run_until(s.w, transfer_under_way, &s), SIM_OK);
        uint64_t stop = sim_world_time(s.w);
        sim_world_freeze_rank(s.w, 1);
        assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
        assert_int_equal(ev->status, OTM_ERR_TIMEOUT);
        assert_true(sim_world_time(s.w) - stop <= TIMEOUT + TIMEOUT / 2);
        assert_int_equal(sim_world_host_seen(s.w)->lost[1], 1);
        s.q[0]->status = OTM_OK;
        assert_int_equal(sim_world_run(s.w), SIM_OK);
        assert_int_equal(sim_world_node(s.w, 0)->exit_failures, 1);
        scn_drop_refs(&s);
        scn_close(&s);
    }
}

/* The answer to a probe is late: by less than the probe's wait, the
 * worker counts as alive; by more, as unresponsive (the region fails
 * though the worker lives: what a probe cannot tell from a stopped one). */
static void late_answer(uint64_t delay, int want_alive)
{
    for (uint64_t seed = 1; seed <= 50; seed++) {
        sim_config cfg = config(seed);
        scn s;
        assert_int_equal(scn_open(&s, &cfg, 1), 0);
        otm_event *ev = long_region(&s, 10 * TIMEOUT);
        /* Worker 1's next send is its answer to the first probe (the
         * region's reply comes only at its end). */
        uint64_t next = sim_net_calls(sim_net_installed(), 1, SIM_FN_Isend) + 1;
        sim_world_delay(s.w, 1, next, delay);
        assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
        if (want_alive) {
            assert_int_equal(ev->state, OTM_FINISHED);
            finish(&s);
            continue;
        }
        assert_int_equal(ev->status, OTM_ERR_UNRESPONSIVE);
        s.q[0]->status = OTM_OK;
        exit_in_region(&s);
    }
}

static void test_late_probe_answer(void **state)
{
    (void)state;
    late_answer(TIMEOUT / 4, 1);
    late_answer(4 * TIMEOUT, 0);
}

/* The answer to a probe is lost (the worker's MPI fails that send): the
 * probe hears nothing, which is all a lost answer and a dead worker have
 * in common, so the region fails with OTM_ERR_UNRESPONSIVE; the worker,
 * alive, still cannot be told to exit while its region runs. */
static void test_lost_probe_answer(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        sim_config cfg = config(seed);
        scn s;
        assert_int_equal(scn_open(&s, &cfg, 1), 0);
        otm_event *ev = long_region(&s, 10 * TIMEOUT);
        uint64_t next = sim_net_calls(sim_net_installed(), 1, SIM_FN_Isend) + 1;
        sim_world_fail_call(s.w, 1, SIM_FN_Isend, next);
        uint64_t t0 = sim_world_time(s.w);
        assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
        assert_int_equal(ev->status, OTM_ERR_UNRESPONSIVE);
        assert_true(sim_world_time(s.w) - t0 <= TIMEOUT + TIMEOUT / 2);
        s.q[0]->status = OTM_OK;
        exit_in_region(&s);
    }
}

/* KERNEL_TIMEOUT bounds the region's length although every probe is
 * answered: the region fails with OTM_ERR_KERNEL_TIMEOUT, not before; the
 * worker, still in the region, is lost (the region_timeout hook says so,
 * worker_lost does not) and the exit does not wait a timeout for it. */
static void test_kernel_timeout_bounds_length(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        sim_config cfg = config(seed);
        cfg.node.kernel_timeout_ns = 5 * TIMEOUT;
        scn s;
        assert_int_equal(scn_open(&s, &cfg, 1), 0);
        otm_event *ev = long_region(&s, 100 * TIMEOUT);
        uint64_t t0 = sim_world_time(s.w);
        assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
        assert_int_equal(ev->status, OTM_ERR_KERNEL_TIMEOUT);
        uint64_t took = sim_world_time(s.w) - t0;
        assert_true(took >= 5 * TIMEOUT && took <= 6 * TIMEOUT);
        assert_true(pings_served(&s) >= 5);
        assert_int_equal(sim_world_host_seen(s.w)->timeouts[1], 1);
        assert_int_equal(sim_world_host_seen(s.w)->lost[1], 0);
        s.q[0]->status = OTM_OK;
        t0 = sim_world_time(s.w);
        assert_int_equal(sim_world_run(s.w), SIM_OK);
        assert_int_equal(sim_world_node(s.w, 0)->exit_failures, 1);
        assert_true(sim_world_time(s.w) - t0 < TIMEOUT);
        scn_drop_refs(&s);
        scn_close(&s);
    }
}

/* Without a timeout there are no probes: a long region just runs. */
static void test_no_timeout_no_probes(void **state)
{
    (void)state;
    sim_config cfg = config(1);
    cfg.node.timeout_ns = 0;
    scn s;
    assert_int_equal(scn_open(&s, &cfg, 1), 0);
    otm_event *ev = long_region(&s, 50 * TIMEOUT);
    assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
    assert_int_equal(ev->state, OTM_FINISHED);
    assert_int_equal(pings_served(&s), 0);
    finish(&s);
}

/* ---- every schedule of the smallest cases ---- */

typedef struct exh_arg {
    int stop;               /* stop the worker once the region started */
} exh_arg;

static sim_result exh_run(const sim_config *cfg, void *arg, sim_trace *t)
{
    exh_arg *a = arg;
    scn s;
    if (scn_open(&s, cfg, 1))
        return SIM_VIOLATION;
    s.keep = 1;
    scn_load(&s, 0, 1);
    sim_result res = sim_world_run_queue(s.w, s.q[0]);
    /* A region of one and a half probe periods: one probe, its answer
     * racing the region's reply. */
    scn_execute(&s, 0, 1, SIM_K_SLEEP, 3 * TIMEOUT / 4, 0);
    otm_event *ev = s.ev[s.nev - 1];
    sim_world_mark(s.w);
    if (res == SIM_OK && a->stop) {
        res = sim_world_run_until(s.w, region_started, &s);
        sim_world_stop_rank(s.w, 1);
    }
    if (res == SIM_OK)
        res = sim_world_run(s.w);
    otm_status want = a->stop ? OTM_ERR_UNRESPONSIVE : OTM_OK;
    if (res == SIM_OK && (!otm_event_ended(ev) || ev->status != (int32_t)want))
        res = SIM_VIOLATION;
    if (res == SIM_OK && !a->stop && pings_served(&s) < 1)
        res = SIM_VIOLATION;
    if (res == SIM_OK && !a->stop) {
        scn_drop_refs(&s);
        res = sim_world_teardown(s.w);
    }
    if (t)
        sim_world_take_trace(s.w, t);
    scn_close(&s);
    return res;
}

static void test_probe_exhaustive(void **state)
{
    (void)state;
    const char *env = getenv("OTM_SIM_EXPLORE_MAX");
    uint64_t max = env ? strtoull(env, NULL, 10) : 1000000;
    for (int stop = 0; stop <= 1; stop++) {
        sim_config cfg = config(1);
        exh_arg a = {stop};
        sim_explore_stats st = sim_explore(&cfg, exh_run, &a, 100000, max);
        print_message("a region with a probe%s: %llu schedules (%llu cut as "
                      "reorderings), %s\n", stop ? ", its worker stopped" : "",
                      (unsigned long long)st.schedules, (unsigned long long)st.pruned,
                      st.complete ? "all of them"
                                  : "stopped there by OTM_SIM_EXPLORE_MAX (not exhaustive)");
        assert_int_equal(st.failures, 0);
        assert_true(st.complete || (env && st.schedules >= max));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_region_live_worker),
        cmocka_unit_test(test_worker_stopped_mid_region),
        cmocka_unit_test(test_probe_without_a_tag_waits),
        cmocka_unit_test(test_late_probe_answer),
        cmocka_unit_test(test_lost_probe_answer),
        cmocka_unit_test(test_kernel_timeout_bounds_length),
        cmocka_unit_test(test_worker_stopped_mid_transfer),
        cmocka_unit_test(test_no_timeout_no_probes),
        cmocka_unit_test(test_probe_exhaustive),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
