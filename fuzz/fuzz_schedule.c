/*
 * fuzz_schedule.c - libFuzzer harness for the simulator's choices.
 *
 * The input picks a scenario and its faults, and then makes every choice
 * of the world's scheduler (mode SIM_BYTES: one byte per choice, modulo the
 * number of options; past the end, choice 0):
 *
 *   byte 0      scenario (modulo SCENARIOS):
 *                 0..9  one end-to-end case of sim/scenarios.c
 *                       (ALLOC ... EXIT, CHAIN, CHAIN_OUTPUT), no faults,
 *                       every byte and status checked by scn_run_case;
 *                 10    the all-kinds program (two queues, two workers), no
 *                       faults: statuses and the retrieved data checked;
 *                 11    the all-kinds program with faults;
 *                 12    exit in flight with faults: a SUBMIT, a kernel and
 *                       an ALLOC still queued when the exit begins.
 *   byte 1      payload size for scenarios 0..9 (0..SIM_GLOBAL_SIZE), and the
 *               number of faults (byte % 4) for 11 and 12
 *   then, per fault, 4 bytes: kind (failed MPI call, failed allocation,
 *               delayed message, stopped worker), rank, nth, parameter
 *               (drawn as in tests/core/test_sweep.c)
 *   the rest    the scheduler's choices.
 *
 * Must hold for every input: the run ends (no deadlock, livelock or
 * invariant violation: the world checks invariants after every step),
 * every host operation ended FINISHED or FAILED with a status, the fault-
 * free scenarios produce exactly the expected data, and the teardown finds
 * no request, communicator or allocation left behind. A broken promise is
 * an abort(), which libFuzzer records as a crash; OTM_FUZZ_VERBOSE=1 lets
 * the world print its report (choice string, live events).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "scenarios.h"

#define ALL_KINDS SCN_CASES     /* then ALL_KINDS + 1: the same with faults */
#define EXIT_IN_FLIGHT (SCN_CASES + 2)
#define SCENARIOS (SCN_CASES + 3)
#define INPUT_MAX 4096
#define FAULT_BYTES 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/* fuzz/CMakeLists.txt says why. */
const char *__asan_default_options(void)
{
    return OTM_FUZZ_ASAN_OPTIONS;
}

static const sim_fn call_fns[] = {SIM_FN_Isend, SIM_FN_Irecv, SIM_FN_Test,
                                  SIM_FN_Improbe, SIM_FN_Imrecv, SIM_FN_Get_count,
                                  SIM_FN_Cancel};

static void die(sim_world *w, const char *what, int detail)
{
    fprintf(stderr, "fuzz_schedule: %s (%d); choices: %s\n", what, detail,
            w ? sim_world_choices(w) : "?");
    abort();
}

/* The input, consumed from the front. */
typedef struct input {
    const uint8_t *p;
    size_t n;
} input;

static uint8_t take(input *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static sim_config config_for(const input *in)
{
    sim_config cfg = scn_fault_config(1);
    cfg.mode = SIM_BYTES;
    cfg.bytes = in->p;
    cfg.nbytes = in->n;
    cfg.quiet = !getenv("OTM_FUZZ_VERBOSE");
    /* Faults can make a run long (timeouts, retries); a bound keeps every
     * input fast, and reaching it is reported as a livelock. */
    cfg.max_steps = 200000;
    return cfg;
}

/* Arms up to three faults described by the input (as test_sweep draws
 * them from a seed). */
static void arm_faults(sim_world *w, input *in, int n)
{
    for (int i = 0; i < n; i++) {
        uint8_t kind = take(in), rank = take(in), nth = take(in), arg = take(in);
        int r = rank % 3;
        switch (kind % 4) {
        case 0: sim_world_fail_call(w, r, call_fns[arg % 7], 1 + nth % 40); break;
        case 1: sim_world_fail_alloc(w, r, 1 + nth % 40); break;
        case 2: sim_world_delay(w, r, 1 + nth % 12, 1 + (uint64_t)arg * 12000u); break;
        case 3: sim_world_stop_rank(w, 1 + rank % 2); break;
        }
    }
}

/* Scenario 12: operations on both workers still queued when the exit
 * begins (sim_world_run starts it at once; the host drains first). */
static void enqueue_exit_in_flight(scn *s)
{
    uint64_t g1 = scn_global(s, 1);
    scn_pattern(s->in[1], SCN_BUF, 7);
    scn_load(s, 0, 1);
    scn_load(s, 1, 2);
    scn_submit(s, 0, 1, g1, s->in[1], 9);
    scn_execute(s, 1, 2, SIM_K_NOP, 0, 0);
    scn_alloc(s, 1, 2, 24, &s->addr[1]);
    scn_retrieve(s, 0, 1, s->out[1], g1, 9);
}

static void run_program(input *in, int scenario)
{
    int nfaults = scenario == ALL_KINDS ? 0 : take(in) % 4;
    /* Fault bytes come first, so that the choices start where they end. */
    input faults = *in;
    for (int i = 0; i < nfaults * FAULT_BYTES; i++)
        take(in);
    sim_config cfg = config_for(in);
    scn s;
    if (scn_open(&s, &cfg, 2))
        die(NULL, "cannot build the world", scenario);
    s.keep = 1;
    arm_faults(s.w, &faults, nfaults);
    if (scenario == EXIT_IN_FLIGHT)
        enqueue_exit_in_flight(&s);
    else
        scn_enqueue_all_kinds(&s);
    sim_result res = sim_world_run(s.w);
    if (res != SIM_OK)
        die(s.w, "the run did not end cleanly", (int)res);
    if (s.nev == 0 || !scn_all_ended(&s))
        die(s.w, "an operation did not end FINISHED or FAILED with a status", s.nev);
    if (nfaults == 0) {
        for (int i = 0; i < s.nev; i++)
            if (s.ev[i]->state != OTM_FINISHED)
                die(s.w, "an operation failed without faults", i);
        int n = scenario == EXIT_IN_FLIGHT ? 9 : 13;
        for (int i = 0; i < n; i++) {
            uint8_t want = (uint8_t)(s.in[1][i] + (scenario == EXIT_IN_FLIGHT ? 0 : 1));
            if (s.out[1][i] != want)
                die(s.w, "retrieved data differ without faults", i);
        }
    }
    scn_drop_refs(&s);
    if ((res = sim_world_teardown(s.w)) != SIM_OK)
        die(s.w, "teardown", (int)res);
    scn_close(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > INPUT_MAX)
        return -1;
    input in = {data, size};
    int scenario = take(&in) % SCENARIOS;
    if (scenario < SCN_CASES) {
        uint64_t n = take(&in) % (SIM_GLOBAL_SIZE + 1);
        sim_config cfg = config_for(&in);
        sim_result res = scn_run_case(&cfg, (scn_case)scenario, n, NULL);
        if (res != SIM_OK) {
            fprintf(stderr, "fuzz_schedule: case %s, %llu bytes: result %d\n",
                    scn_case_name((scn_case)scenario), (unsigned long long)n, (int)res);
            abort();
        }
        return 0;
    }
    run_program(&in, scenario);
    return 0;
}
