/*
 * test_queue_wait.c - sim_queue_wait, the simulator's blocking wait of a host queue,
 * in the simulated world: a host program in phases, each waiting for its queue
 * through the node's idle hook (which runs the other ranks), gets every
 * result of the phase before the next one is enqueued; a failed event's
 * status is returned once and then cleared.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "scenarios.h"

#define N 40

static void test_phases(void **state)
{
    (void)state;
    sim_config cfg = sim_config_default();
    cfg.node.frag_size = 16;      /* N bytes travel in 3 fragments */
    cfg.node.inline_max = 0;
    scn s;
    assert_int_equal(scn_open(&s, &cfg, 1), 0);
    otm_node *host = sim_world_node(s.w, 0);
    otm_queue *q = s.q[0];

    /* Phase 1: load and allocate; the address is needed next. */
    assert_int_equal(scn_load(&s, 0, 1), OTM_OK);
    assert_int_equal(scn_alloc(&s, 0, 1, N, &s.addr[0]), OTM_OK);
    assert_int_equal(sim_queue_wait(host, q), OTM_OK);
    assert_true(otm_queue_empty(q));
    assert_int_equal(s.nentries[1], SIM_K_COUNT + 1);
    assert_int_not_equal(s.addr[0], 0);

    /* Phase 2: submit, increment every byte on the device, read back. */
    scn_pattern(s.in[1], N, 5);
    assert_int_equal(scn_submit(&s, 0, 1, s.addr[0], s.in[1], N), OTM_OK);
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_INC, s.addr[0], N), OTM_OK);
    assert_int_equal(scn_retrieve(&s, 0, 1, s.out[1], s.addr[0], N), OTM_OK);
    assert_int_equal(sim_queue_wait(host, q), OTM_OK);
    for (int i = 0; i < N; i++)
        assert_int_equal(s.out[1][i], (uint8_t)(s.in[1][i] + 1));

    /* Phase 3: a failing kernel; its status comes back once. */
    assert_int_equal(scn_execute(&s, 0, 1, SIM_K_FAIL, 0, 0), OTM_OK);
    assert_int_equal(sim_queue_wait(host, q), OTM_ERR_KERNEL);
    assert_true(otm_queue_empty(q));
    assert_int_equal(sim_queue_wait(host, q), OTM_OK);

    /* Phase 4: the device still serves; free the buffer. */
    memset(s.out[1], 0, N);
    assert_int_equal(scn_retrieve(&s, 0, 1, s.out[1], s.addr[0], N), OTM_OK);
    assert_int_equal(scn_delete(&s, 0, 1, s.addr[0]), OTM_OK);
    assert_int_equal(sim_queue_wait(host, q), OTM_OK);
    assert_int_equal(s.out[1][N - 1], (uint8_t)(s.in[1][N - 1] + 1));

    assert_int_equal(sim_world_run(s.w), SIM_OK);
    assert_int_equal(sim_world_teardown(s.w), SIM_OK);
    scn_close(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
