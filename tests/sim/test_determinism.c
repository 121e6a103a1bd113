/*
 * test_determinism.c - the simulator is a function of its seed or choice
 * string: the same seed gives the same trace twice, and a run broken on
 * purpose is reproduced exactly from the seed and choice string it prints.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "scenarios.h"

typedef struct run_info {
    sim_result res;
    uint64_t hash, steps, now;
    char *choices;
} run_info;

static uint8_t in1[32];

/* Busy scenario; with `stop`, worker 2 dies and no timeout is configured,
 * so the job deadlocks: a broken run. */
static run_info run(const sim_config *cfg, int stop)
{
    run_info r = {0};
    scn s;
    assert_int_equal(scn_open(&s, cfg, 2), 0);
    scn_pattern(in1, sizeof in1, 9);
    scn_load(&s, 0, 1);
    scn_load(&s, 1, 2);
    scn_submit(&s, 0, 1, scn_global(&s, 1), in1, 13);
    scn_execute(&s, 1, 2, SIM_K_INC, scn_global(&s, 2), 5);
    scn_exchange(&s, 0, 1, scn_global(&s, 1), 2, scn_global(&s, 2), 7);
    if (stop)
        sim_world_stop_rank(s.w, 2);
    r.res = sim_world_run(s.w);
    r.hash = sim_world_hash(s.w);
    r.steps = sim_world_steps(s.w);
    r.now = sim_world_time(s.w);
    r.choices = strdup(sim_world_choices(s.w));
    assert_true(sim_world_wrapped_calls(s.w) > 0);
    if (r.res == SIM_OK)
        assert_int_equal(sim_world_teardown(s.w), SIM_OK);
    scn_close(&s);
    return r;
}

static void test_same_seed_same_trace(void **state)
{
    (void)state;
    int distinct = 0;
    uint64_t prev = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        sim_config cfg = sim_config_default();
        cfg.seed = seed;
        run_info a = run(&cfg, 0), b = run(&cfg, 0);
        assert_int_equal(a.res, SIM_OK);
        assert_true(a.hash == b.hash);
        assert_true(a.steps == b.steps);
        assert_string_equal(a.choices, b.choices);
        distinct += a.hash != prev;
        prev = a.hash;
        free(a.choices);
        free(b.choices);
    }
    /* Different seeds explore different schedules. */
    assert_true(distinct > 150);
}

static void test_broken_run_replays(void **state)
{
    (void)state;
    sim_config cfg = sim_config_default();
    cfg.seed = 42;
    cfg.quiet = 1;
    run_info broken = run(&cfg, 1);
    assert_int_equal(broken.res, SIM_DEADLOCK);
    /* Replay from the printed choice string alone. */
    uint16_t choices[8192];
    long n = sim_choices_parse(broken.choices, choices, 8192);
    assert_true(n > 0);
    sim_config replay = sim_config_default();
    replay.mode = SIM_REPLAY;
    replay.replay = choices;
    replay.nreplay = (size_t)n;
    replay.quiet = 1;
    run_info again = run(&replay, 1);
    assert_int_equal(again.res, SIM_DEADLOCK);
    assert_true(again.steps == broken.steps);
    assert_true(again.hash == broken.hash);
    assert_string_equal(again.choices, broken.choices);
    /* From the environment, as the failure report says, whatever schedule
     * the test itself asked for. */
    assert_int_equal(setenv("OTM_SIM_CHOICES", broken.choices, 1), 0);
    sim_config other = sim_config_default();
    other.seed = 7;
    other.quiet = 1;
    run_info env = run(&other, 1);
    unsetenv("OTM_SIM_CHOICES");
    assert_int_equal(env.res, SIM_DEADLOCK);
    assert_true(env.hash == broken.hash);
    free(env.choices);
    /* And from the seed. */
    run_info seeded = run(&cfg, 1);
    assert_true(seeded.hash == broken.hash);
    print_message("deadlock reproduced after %llu steps from seed 42 and from "
                  "its %ld-choice string\n", (unsigned long long)broken.steps, n);
    free(broken.choices);
    free(again.choices);
    free(seeded.choices);
}

static void test_choice_strings(void **state)
{
    (void)state;
    uint16_t out[8];
    assert_int_equal(sim_choices_parse("01aZ{300}", out, 8), 5);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[2], 10);
    assert_int_equal(out[3], 61);
    assert_int_equal(out[4], 300);
    assert_int_equal(sim_choices_parse("0-1", out, 8), -1);
    assert_int_equal(sim_choices_parse("{70000}", out, 8), -1);
    assert_int_equal(sim_choices_parse("{12", out, 8), -1);
    assert_int_equal(sim_choices_parse("000000000", out, 8), -1);
}

/* Fuzzer bytes drive the choices too, reproducibly. */
static void test_bytes_mode(void **state)
{
    (void)state;
    uint8_t bytes[512];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (uint8_t)(i * 37u + 11u);
    sim_config cfg = sim_config_default();
    cfg.mode = SIM_BYTES;
    cfg.bytes = bytes;
    cfg.nbytes = sizeof bytes;
    run_info a = run(&cfg, 0), b = run(&cfg, 0);
    assert_int_equal(a.res, SIM_OK);
    assert_true(a.hash == b.hash);
    free(a.choices);
    free(b.choices);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_seed_same_trace),
        cmocka_unit_test(test_broken_run_replays),
        cmocka_unit_test(test_choice_strings),
        cmocka_unit_test(test_bytes_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
