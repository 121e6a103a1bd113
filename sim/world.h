/*
 * sim/world.h - a whole MPI job in one thread: 1 host and 1..8 workers, each
 * a real otm_node over the simulated MPI of sim/net.h, and a scheduler that
 * decides every interleaving.
 *
 * Actors are the things that run concurrently in production: each host
 * queue (a host thread), the host's exit driver, and each worker's gate and
 * handler (the gate also moves the replies of kernels that ran, as a
 * worker's kernel thread does while it holds the gate). At every step the
 * scheduler picks one choice among the actors that may move and the
 * channels that have a deliverable message. An actor
 * that ran without moving sleeps until something happens that could let it
 * move (any actor moved, a message was delivered, time advanced), so the
 * choices are real ones. The choice comes from:
 *   - a seeded PRNG (SIM_RANDOM),
 *   - a choice string (SIM_REPLAY; past its end, choice 0), which is how the
 *     exhaustive explorer and replays work,
 *   - fuzzer bytes (SIM_BYTES; one byte per choice, modulo the count).
 * Every step is followed by invariant checks; when nothing can move, time
 * jumps to the next delayed message or timeout; when that does not help
 * either and the job is not done, it is a deadlock. On any failure the
 * world prints the seed and the choice string that replay it.
 *
 * Virtual time only moves when the world advances it: nodes read it through
 * their clock hook, so timeouts are deterministic.
 */
#ifndef SIM_WORLD_H
#define SIM_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "net.h"
#include "otm/node.h"
#include "otm/page.h"

/* A wider world (the scaling model, bench/sim_model.c) is compiled with
 * both raised: the net holds at most 64 ranks. */
#ifndef SIM_MAX_WORKERS
#define SIM_MAX_WORKERS 8
#endif
#ifndef SIM_MAX_QUEUES
#define SIM_MAX_QUEUES 8
#endif

typedef enum sim_mode { SIM_RANDOM = 0, SIM_REPLAY, SIM_BYTES } sim_mode;

/* How a run ended (distinct codes, as a simulator's exit status). */
typedef enum sim_result {
    SIM_OK = 0,
    SIM_CRASH = 1,          /* unused: a crash is the process's own */
    SIM_DEADLOCK = 2,       /* nothing can move, job not done */
    SIM_LIVELOCK = 3,       /* step budget exhausted */
    SIM_VIOLATION = 4,      /* an invariant check failed */
    SIM_PRUNED = 5          /* exploration only: schedule covered by another */
} sim_result;

typedef struct sim_config {
    int workers;                /* 1..SIM_MAX_WORKERS */
    int tag_ub;                 /* MPI_TAG_UB of the simulated MPI */
    size_t eager_limit;         /* sends up to this are eager */
    int eager_at_delivery;      /* eager sends complete on delivery (1, the
                                 * default: closer to a real transport) or
                                 * inside MPI_Isend (0) */
    otm_config node;            /* the core's configuration on every rank */
    sim_mode mode;
    uint64_t seed;              /* SIM_RANDOM */
    const uint16_t *replay;     /* SIM_REPLAY: the choices to take */
    size_t nreplay;
    const uint8_t *bytes;       /* SIM_BYTES: fuzzer input */
    size_t nbytes;
    uint64_t max_steps;         /* livelock bound; 0: 1,000,000 */
    int por;                    /* SIM_REPLAY: partial-order reduction with
                                 * sleep sets (sim/explore.h turns it on) */
    int quiet;                  /* no failure report on stderr */
    sim_link link;              /* the cost of messages in virtual time
                                 * (sim/net.h); zero, the default: none */
    otm_node *host_node;        /* NULL, or where rank 0's node lives (a
                                 * zeroed otm_node the caller embeds in its
                                 * own state, as the plugin does); the world
                                 * initialises and finalises it as its own */
    int late_send_tests;        /* 1: a send's first MPI_Test after it
                                 * completed says it runs (sim/net.h) */
    int units;                  /* 0 or 1: each worker serves its own CPU
                                 * alone; 2..SIM_MAX_UNITS: also proxied
                                 * units 1.. (sim/device.h) */
    int pages;                  /* 1: unified shared memory (sim/pages.h):
                                 * rank 0 serves pages of its memory
                                 * (sim_world_host_memory) and each worker
                                 * has a pager for its SIM_K_USM regions */
} sim_config;

/* Sensible defaults: 2 workers, tag_ub 32767, eager 8 KiB completing on
 * delivery, small fragments, PRNG mode with seed 1. */
sim_config sim_config_default(void);

typedef struct sim_world sim_world;

/* The host's record of what regions printed (region_output hook), and of
 * the faults reported (region_fault): for the tests to check. */
typedef struct sim_host_seen {
    uint64_t out_bytes, err_bytes;  /* received per stream */
    uint64_t out_wrong;             /* stdout bytes not the pattern */
    int faults, last_signo;
    int lost[SIM_MAX_WORKERS + 1];  /* worker_lost calls, per rank */
    int timeouts[SIM_MAX_WORKERS + 1];  /* region_timeout calls, per rank */
} sim_host_seen;
const sim_host_seen *sim_world_host_seen(const sim_world *w);
/* LOADs the worker accepted and UNLOADs it served, per rank. */
uint64_t sim_world_images_loaded(const sim_world *w, int rank);

/* NULL when the world cannot be built (bad config, no memory, init failed);
 * the reason goes to stderr. Installs its net for the MPI wrappers. The
 * environment variables OTM_SIM_SEED and OTM_SIM_CHOICES, as a failure
 * prints them, override the schedule of every world the test makes. */
sim_world *sim_world_create(const sim_config *cfg);
/* Tears everything down; safe after any result. */
void sim_world_destroy(sim_world *w);

otm_node *sim_world_node(sim_world *w, int rank);
/* A new host queue (a host thread); at most SIM_MAX_QUEUES, threads below
 * included. */
otm_queue *sim_world_queue(sim_world *w);
/* A host thread of the test's own: an actor of rank 0 whose every turn is
 * one call of step(w, ctx), which returns 1 when it moved, 0 when it did
 * not (the actor then sleeps until something happens, as every actor
 * does) and -1 when the thread is done (never offered again). For host
 * programs whose threads do more than progress one queue: the end of the
 * job from several threads (sim/scenarios.h, scn_run_end). A thread that
 * claims the end runs the exit protocol itself: the world's exit driver
 * then stands aside. -1 when SIM_MAX_QUEUES threads and queues exist. */
typedef int (*sim_thread_fn)(sim_world *w, void *ctx);
int sim_world_thread(sim_world *w, sim_thread_fn step, void *ctx);
/* With sim_config.pages: rank 0's memory the page server serves
 * (SIM_HOST_SIZE bytes at SIM_HOST_BASE, sim/pages.h), and the server
 * (its counts); NULL without. */
uint8_t *sim_world_host_memory(sim_world *w);
const otm_page_server *sim_world_page_server(const sim_world *w);
/* The worker's global (for checks), and its device (sim/device.h). */
uint8_t *sim_world_global(sim_world *w, int rank);
sim_device *sim_world_device(sim_world *w, int rank);

/* Makes the next raw MPI calls of the test act as `rank` (tests that play a
 * misbehaving peer by hand). */
void sim_world_act_as(sim_world *w, int rank);

/* Faults, armed before or during a run. */
void sim_world_fail_call(sim_world *w, int rank, sim_fn fn, uint64_t nth);
void sim_world_fail_alloc(sim_world *w, int rank, uint64_t nth);
void sim_world_delay(sim_world *w, int rank, uint64_t nth_isend, uint64_t ns);
void sim_world_stop_rank(sim_world *w, int rank);
/* Stopped as by SIGSTOP: nothing reaches it (sim_net_freeze_rank). */
void sim_world_freeze_rank(sim_world *w, int rank);
void sim_world_advance(sim_world *w, uint64_t ns);

/* Runs until the host's exit protocol and every live worker are done (the
 * host begins exit at once: it drains its queues first). Returns the result;
 * on failure prints the seed, the choice string and every live event. */
sim_result sim_world_run(sim_world *w);

/* Runs the world until done(ctx) is true (checked before every step),
 * without starting the host's exit protocol. Returns SIM_OK or the failure
 * (deadlock when nothing can move and done is still false). */
sim_result sim_world_run_until(sim_world *w, int (*done)(void *ctx), void *ctx);

/* 1 when the job is done: the host's exit protocol ended, and every live
 * worker finished (or, when the host gave up on some, was left to the
 * launcher), as sim_world_run waits for. */
int sim_world_done(const sim_world *w);

/* Records a violation of an oracle of the test's own (a scenario's), as
 * the world's invariants do: printed with the step (unless quiet), and
 * the run's result becomes SIM_VIOLATION, with its replay line. */
void sim_world_violation(sim_world *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Runs the world until host queue q is empty (for host programs in phases:
 * the next operation needs the result of the previous). The host's exit
 * protocol is not started. Returns SIM_OK or the failure. */
sim_result sim_world_run_queue(sim_world *w, otm_queue *q);

/* After a successful run (and after the test has looked at the ranks and
 * dropped its event references): finalises every rank and checks that no
 * request, communicator or allocation is left on a rank that was not
 * stopped (the buffers of detached sends are released after MPI_Finalize,
 * so none may remain either). Requests are checked twice: none may be
 * live once the exit protocol ended (before the nodes are torn down, on
 * every rank that took part in the exit), and none after. */
sim_result sim_world_teardown(sim_world *w);

/* One scheduling step of the actors other than the running one: the idle
 * hook of a blocking host call (sim_queue_wait) inside the world. */
void sim_world_step_others(sim_world *w);

/* Progresses `q` until it is empty, calling the node's idle hook between
 * rounds (in a world: the other ranks run). Returns the queue's first
 * failure (and resets it), or OTM_OK. The plugin has its own loop (its
 * idle policy, the fault end path); tests of host programs use this one. */
otm_status sim_queue_wait(otm_node *node, otm_queue *q);

/* One scheduling step of any actor or delivery, for a test that plays the
 * host itself (calling the plugin's entry points) and steps the world from
 * its waits. Returns 0 when nothing could move (time is left alone). */
int sim_world_step(sim_world *w);
/* SIM_OK, or the failure a step recorded (an invariant violation). */
sim_result sim_world_failure(const sim_world *w);

/* ---- reuse of one world across runs (the stateful fuzz harnesses) ---- */

/* What a world at rest holds, per rank: a world whose rest state equals the
 * one it had after its set-up behaves as that fresh world would. */
typedef struct sim_rest {
    size_t requests, comms, unreceived;     /* sim_net, this rank */
    int64_t allocs;                         /* hook allocations live */
    int64_t images;                         /* loaded and not unloaded */
    uint64_t out_pending, err_pending;      /* SIM_K_PRINT output not taken */
    int stopped, finalized, up;
} sim_rest;
/* Fills out[0..workers] and returns the messages in flight (all ranks). */
size_t sim_world_rest(const sim_world *w, sim_rest *out);

/* Starts a new run on an existing world: the schedule (mode, seed,
 * replay, bytes, max_steps, por, quiet of cfg) starts over as in a world
 * just created (steps, trace, hash, PRNG, sleep set, failure), every actor
 * is awake, the ranks' news are taken as seen, and the world's net is the
 * installed one again. The ranks, the net and virtual time are left as they
 * are. Returns -1 when cfg changes what
 * the world is made of (workers, tag_ub, eager settings, node config). */
int sim_world_rearm(sim_world *w, const sim_config *cfg);

/* Observations. */
uint64_t sim_world_steps(const sim_world *w);
uint64_t sim_world_hash(const sim_world *w);        /* trace hash */
uint64_t sim_world_wrapped_calls(const sim_world *w); /* MPI calls served */
uint64_t sim_world_time(const sim_world *w);
/* The choice string of the run so far, NUL-terminated (owned by w). */
const char *sim_world_choices(sim_world *w);
uint64_t sim_world_leaked_allocs(const sim_world *w, int rank);

/* The choices of a run: the option taken and how many there were, for each
 * step that had more than one. */
typedef struct sim_trace {
    uint16_t *taken, *options;
    size_t len;
    size_t from;            /* choices before this index were set-up */
} sim_trace;

/* Marks the end of a scenario's set-up phase: the explorer enumerates only
 * the choices made after the mark (the set-up follows its first schedule),
 * so an exhaustive test spends its budget on the event under test. */
void sim_world_mark(sim_world *w);

/* Ends the part of the run that is a choice: from here on every step
 * takes the first thing that can move, records nothing and prunes
 * nothing, so the explorer enumerates only the choices between the mark
 * and this point (a scenario whose tail is another test's: the end of the
 * job from several threads explores up to the exit protocol, whose own
 * schedules test_exit explores). Replays follow the same tail. */
void sim_world_settle(sim_world *w);

/* Moves the run's trace into *out (free it with sim_trace_free). */
void sim_world_take_trace(sim_world *w, sim_trace *out);
void sim_trace_free(sim_trace *t);

/* Parses a choice string as printed on failure into `out` (up to `max`);
 * returns the count, or -1 if the text is malformed. */
long sim_choices_parse(const char *text, uint16_t *out, size_t max);

#endif
