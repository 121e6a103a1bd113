/*
 * test_model.c - the simulator's cost model in virtual time (sim_link, the
 * scaling model of bench/sim_model.c): without a link nothing costs time;
 * a round trip costs twice the latency; kernels on two devices overlap,
 * two on one device do not; a large transfer takes its bytes over the
 * bandwidth.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "scenarios.h"

#define MS 1000000u

/* A world of `workers` workers and `nq` queues with `link`, every image
 * loaded; the virtual time then. */
static uint64_t open_loaded(scn *s, int workers, int nq, sim_link link)
{
    sim_config cfg = sim_config_default();
    cfg.workers = workers;
    cfg.node = otm_config_default();
    cfg.link = link;
    assert_int_equal(scn_open(s, &cfg, nq), 0);
    for (int d = 1; d <= workers; d++)
        assert_int_equal(scn_load(s, 0, d), OTM_OK);
    assert_int_equal(sim_world_run_queue(s->w, s->q[0]), SIM_OK);
    return sim_world_time(s->w);
}

static uint64_t run_all(scn *s)
{
    for (int q = 0; q < s->nq; q++)
        assert_int_equal(sim_world_run_queue(s->w, s->q[q]), SIM_OK);
    return sim_world_time(s->w);
}

static void finish(scn *s)
{
    assert_int_equal(sim_world_run(s->w), SIM_OK);
    assert_int_equal(sim_world_teardown(s->w), SIM_OK);
    scn_close(s);
}

static void test_no_link_costs_nothing(void **state)
{
    (void)state;
    scn s;
    uint64_t t0 = open_loaded(&s, 1, 1, (sim_link){0});
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_NOP, 0, 0), OTM_OK);
    assert_int_equal(run_all(&s), t0);
    assert_int_equal(t0, 0);
    finish(&s);
}

/* An EXECUTE is a notification and a reply: two latencies, two overheads. */
static void test_round_trip(void **state)
{
    (void)state;
    scn s;
    uint64_t t0 = open_loaded(&s, 1, 1, (sim_link){.latency_ns = 10000, .overhead_ns = 500});
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_NOP, 0, 0), OTM_OK);
    assert_int_equal(run_all(&s) - t0, 2 * (10000 + 500));
    finish(&s);
}

static void test_kernels_on_two_devices_overlap(void **state)
{
    (void)state;
    scn s;
    uint64_t t0 = open_loaded(&s, 2, 2, (sim_link){.latency_ns = 10000});
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_SLEEP, MS, 0), OTM_OK);
    assert_int_equal(scn_execute(&s, 1, 2, SIM_K_SLEEP, MS, 0), OTM_OK);
    uint64_t t = run_all(&s) - t0;
    assert_true(t >= MS + 2 * 10000);
    assert_true(t < 3 * MS / 2);
    finish(&s);
}

static void test_kernels_on_one_device_take_turns(void **state)
{
    (void)state;
    scn s;
    uint64_t t0 = open_loaded(&s, 1, 2, (sim_link){.latency_ns = 10000});
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_SLEEP, MS, 0), OTM_OK);
    assert_int_equal(scn_execute(&s, 1, 1, SIM_K_SLEEP, MS, 0), OTM_OK);
    assert_true(run_all(&s) - t0 >= 2 * MS);
    finish(&s);
}

/* 1 MiB at 1 GB/s (a byte per ns): at least 1,048,576 ns on the wire, and
 * not much more (headers and replies are small). */
static void test_bandwidth(void **state)
{
    (void)state;
    static uint8_t data[1 << 20];
    scn s;
    open_loaded(&s, 1, 1, (sim_link){.latency_ns = 1000, .bytes_per_s = 1000000000u});
    assert_int_equal(scn_alloc(&s, 0, 1, sizeof data, &s.addr[0]), OTM_OK);
    uint64_t t0 = run_all(&s);
    assert_int_equal(scn_submit(&s, 0, 1, s.addr[0], data, sizeof data), OTM_OK);
    uint64_t t = run_all(&s) - t0;
    assert_true(t >= sizeof data);
    assert_true(t < sizeof data + sizeof data / 10);
    assert_int_equal(scn_delete(&s, 0, 1, s.addr[0]), OTM_OK);
    run_all(&s);
    finish(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_link_costs_nothing),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_kernels_on_two_devices_overlap),
        cmocka_unit_test(test_kernels_on_one_device_take_turns),
        cmocka_unit_test(test_bandwidth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
