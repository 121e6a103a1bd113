/*
 * test_faults.c - injected failures of MPI calls and allocations: the event
 * concerned fails with a status, nothing hangs (virtual-time timeouts end
 * what waits on a lost message), and no request, communicator or buffer is
 * left behind. Every call number of every function on the host and on a
 * worker is tried, over a scenario that uses every event kind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "scenarios.h"

typedef struct fault {
    int rank;
    sim_fn fn;          /* SIM_FN_COUNT: an allocation */
    uint64_t nth;
} fault;

typedef struct outcome {
    sim_result res;
    int failures;       /* host events FAILED plus workers not acknowledged */
    uint64_t calls;     /* calls of the faulted function (fault-free run) */
} outcome;

static outcome run_with(const fault *f, uint64_t seed)
{
    outcome o = {SIM_OK, 0, 0};
    sim_config cfg = scn_fault_config(seed);
    scn s;
    if (scn_open(&s, &cfg, 2))
        return (outcome){SIM_VIOLATION, 0, 0};
    s.keep = 1;
    if (f && f->fn == SIM_FN_COUNT)
        sim_world_fail_alloc(s.w, f->rank, f->nth);
    else if (f)
        sim_world_fail_call(s.w, f->rank, f->fn, f->nth);
    scn_enqueue_all_kinds(&s);
    o.res = sim_world_run(s.w);
    if (o.res == SIM_OK && !scn_all_ended(&s))
        o.res = SIM_VIOLATION;
    for (int i = 0; i < s.nev; i++)
        o.failures += s.ev[i]->state == OTM_FAILED;
    o.failures += sim_world_node(s.w, 0)->exit_failures;
    scn_drop_refs(&s);
    if (o.res == SIM_OK)
        o.res = sim_world_teardown(s.w);
    scn_close(&s);
    return o;
}

/* Calls made by `rank` to `fn` in the fault-free run of this seed. */
static uint64_t count_calls(int rank, sim_fn fn, uint64_t seed)
{
    sim_config cfg = scn_fault_config(seed);
    scn s;
    assert_int_equal(scn_open(&s, &cfg, 2), 0);
    scn_enqueue_all_kinds(&s);
    assert_int_equal(sim_world_run(s.w), SIM_OK);
    uint64_t n = sim_net_calls(sim_net_installed(), rank, fn);
    assert_int_equal(sim_world_teardown(s.w), SIM_OK);
    scn_close(&s);
    return n;
}

/* must_fail: 1 an error must be reported, -1 none may be, 0 either. */
static void sweep(sim_fn fn, int must_fail)
{
    uint64_t runs = 0, visible = 0;
    for (int rank = 0; rank <= 1; rank++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            uint64_t calls = count_calls(rank, fn, seed);
            for (uint64_t nth = 1; nth <= calls; nth++) {
                fault f = {rank, fn, nth};
                outcome o = run_with(&f, seed);
                if (o.res != SIM_OK)
                    fail_msg("MPI_%s #%llu on rank %d, seed %llu: result %d",
                             sim_fn_name(fn), (unsigned long long)nth, rank,
                             (unsigned long long)seed, o.res);
                /* A failed post or receive loses a message: someone must
                 * see an error. Failed tests and probes are retried. */
                if (must_fail > 0 && o.failures == 0)
                    fail_msg("MPI_%s #%llu on rank %d failed silently",
                             sim_fn_name(fn), (unsigned long long)nth, rank);
                /* A failed probe is simply polled again. */
                if (must_fail < 0 && o.failures != 0)
                    fail_msg("MPI_%s #%llu on rank %d was not retried",
                             sim_fn_name(fn), (unsigned long long)nth, rank);
                visible += o.failures > 0;
                runs++;
            }
        }
    }
    print_message("MPI_%s: %llu faulted runs, %llu with an error reported, "
                  "none hung or leaked\n", sim_fn_name(fn),
                  (unsigned long long)runs, (unsigned long long)visible);
    assert_true(runs > 0);
}

static void test_isend(void **s) { (void)s; sweep(SIM_FN_Isend, 1); }
static void test_irecv(void **s) { (void)s; sweep(SIM_FN_Irecv, 1); }
static void test_imrecv(void **s) { (void)s; sweep(SIM_FN_Imrecv, 1); }
static void test_test(void **s) { (void)s; sweep(SIM_FN_Test, 0); }
static void test_improbe(void **s) { (void)s; sweep(SIM_FN_Improbe, -1); }
static void test_get_count(void **s) { (void)s; sweep(SIM_FN_Get_count, 0); }

/* Allocation failures anywhere on the host or a worker. */
static void test_allocations(void **state)
{
    (void)state;
    uint64_t runs = 0;
    for (int rank = 0; rank <= 2; rank++) {
        for (uint64_t nth = 1; nth <= 120; nth++) {
            fault f = {rank, SIM_FN_COUNT, nth};
            outcome o = run_with(&f, 7);
            if (o.res != SIM_OK)
                fail_msg("allocation #%llu on rank %d: result %d",
                         (unsigned long long)nth, rank, o.res);
            runs++;
        }
    }
    print_message("%llu runs with a failed allocation, none hung or leaked\n",
                  (unsigned long long)runs);
}

/* Delayed messages: every Isend of the host held back in turn until a
 * later virtual time; the job still completes, with the same data, and
 * time had to move for it. */
static void test_delayed_messages(void **state)
{
    (void)state;
    uint64_t calls = count_calls(0, SIM_FN_Isend, 5), delayed = 0;
    for (uint64_t nth = 1; nth <= calls; nth++) {
        sim_config cfg = sim_config_default();
        cfg.seed = 5;
        scn s;
        assert_int_equal(scn_open(&s, &cfg, 2), 0);
        s.keep = 1;
        sim_world_delay(s.w, 0, nth, 1000);
        scn_enqueue_all_kinds(&s);
        assert_int_equal(sim_world_run(s.w), SIM_OK);
        assert_true(scn_all_ended(&s));
        for (int i = 0; i < s.nev; i++)
            assert_int_equal(s.ev[i]->state, OTM_FINISHED);
        /* Submitted, incremented by the kernel, retrieved: queue 0 runs in
         * order. (Queue 1's exchange may copy before or after the kernel.) */
        for (int i = 0; i < 13; i++)
            assert_int_equal(s.out[1][i], (uint8_t)(s.in[1][i] + 1));
        assert_int_equal(sim_world_global(s.w, 2)[0], s.in[1][0]);
        delayed += sim_world_time(s.w) >= 1000;
        scn_drop_refs(&s);
        assert_int_equal(sim_world_teardown(s.w), SIM_OK);
        scn_close(&s);
    }
    print_message("%llu runs with one host message delayed, all completed; "
                  "%llu needed virtual time to move\n", (unsigned long long)calls,
                  (unsigned long long)delayed);
    assert_true(delayed > 0);
}

/* Failed set-up is undone: a node whose init fails leaves nothing behind
 * ... */
static void test_init_failures(void **state)
{
    (void)state;
    const sim_fn fns[] = {SIM_FN_Comm_dup, SIM_FN_Comm_set_errhandler,
                          SIM_FN_Comm_get_attr, SIM_FN_Comm_rank};
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        for (uint64_t nth = 1; nth <= 3; nth++) {
            sim_net_config nc = {2, 32767, 8192, 0, {0}, 0};
            sim_net *net = sim_net_create(&nc);
            assert_non_null(net);
            sim_net_install(net);
            sim_net_set_rank(net, 1);
            sim_net_fail_call(net, 1, fns[i], nth);
            otm_node node;
            otm_config cfg = otm_config_default();
            otm_hooks hooks = {0};
            otm_status st = otm_node_init(&node, &cfg, &hooks);
            /* ... and makes no call MPI would refuse (on MPI_COMM_NULL). */
            assert_int_equal(sim_net_misuse(net), 0);
            if (sim_net_faults_fired(net)) {
                assert_int_equal(st, OTM_ERR_MPI);
                assert_int_equal(sim_net_live_comms(net, 1), 0);
            } else {
                assert_int_equal(st, OTM_OK);
                otm_node_fini(&node);
            }
            sim_net_install(NULL);
            sim_net_destroy(net);
        }
    }
}

/* The node's allocations at init, failed one at a time by its hook. */
typedef struct counted {
    uint64_t calls, fail_at;
    int fired;
    int64_t live;
} counted;

static void *counted_alloc(void *ctx, size_t size)
{
    counted *c = ctx;
    if (++c->calls == c->fail_at) {
        c->fired = 1;
        return NULL;
    }
    void *p = malloc(size ? size : 1);
    c->live += p != NULL;
    return p;
}

static void counted_release(void *ctx, void *p)
{
    counted *c = ctx;
    c->live -= p != NULL;
    free(p);
}

/* Every allocation of a host's and a worker's init, failed in turn: init
 * fails with OTM_ERR_NOMEM and leaves no allocation or communicator. */
static void test_init_allocation_failures(void **state)
{
    (void)state;
    for (int rank = 0; rank <= 1; rank++) {
        uint64_t nth = 1;
        for (;; nth++) {
            sim_net_config nc = {2, 32767, 8192, 0, {0}, 0};
            sim_net *net = sim_net_create(&nc);
            assert_non_null(net);
            sim_net_install(net);
            sim_net_set_rank(net, rank);
            counted c = {.fail_at = nth};
            otm_hooks hooks = {.alloc = counted_alloc, .release = counted_release,
                               .ctx = &c};
            otm_config cfg = otm_config_default();
            otm_node node;
            otm_status st = otm_node_init(&node, &cfg, &hooks);
            int fired = c.fired;
            if (fired) {
                assert_int_equal(st, OTM_ERR_NOMEM);
                assert_int_equal(sim_net_live_comms(net, rank), 0);
            } else {
                assert_int_equal(st, OTM_OK);
                otm_node_fini(&node);
            }
            assert_int_equal(c.live, 0);
            sim_net_install(NULL);
            sim_net_destroy(net);
            if (!fired)
                break;
        }
        print_message("rank %d: init's %llu allocations failed in turn, each "
                      "undone\n", rank, (unsigned long long)(nth - 1));
        assert_true(nth > 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isend),
        cmocka_unit_test(test_irecv),
        cmocka_unit_test(test_imrecv),
        cmocka_unit_test(test_test),
        cmocka_unit_test(test_improbe),
        cmocka_unit_test(test_get_count),
        cmocka_unit_test(test_allocations),
        cmocka_unit_test(test_delayed_messages),
        cmocka_unit_test(test_init_failures),
        cmocka_unit_test(test_init_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
