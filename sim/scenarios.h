/*
 * scenarios.h - host programs for the simulated world, shared by the sim
 * tests: a scenario builds a world, enqueues operations on host queues, runs
 * the world to the end of the exit protocol and checks what arrived.
 */
#ifndef SIM_SCENARIOS_H
#define SIM_SCENARIOS_H

#include <stdint.h>

#include "otm/node.h"
#include "world.h"

#define SCN_BUF 256

/* One scenario run: what the host asked for and what it got back. */
typedef struct scn {
    sim_world *w;
    otm_queue *q[SIM_MAX_QUEUES];
    int nq;
    uint8_t out[SIM_MAX_WORKERS + 1][SCN_BUF];     /* retrieved data */
    uint8_t in[SIM_MAX_WORKERS + 1][SCN_BUF];      /* submitted data */
    otm_entry entries[SIM_MAX_WORKERS + 1][SIM_K_COUNT + 1];
    uint64_t nentries[SIM_MAX_WORKERS + 1];
    uint64_t addr[16];                             /* ALLOC results */
    otm_event *ev[64];                             /* kept references */
    int nev;
    int keep;               /* keep a reference to every event enqueued */
    uint64_t next_image;    /* the id of the next LOAD */
} scn;

/* The kinds of end-to-end case the tests run: one per event kind, then
 * two cases of events chained on one queue, each behind the one before
 * (otm/event.h): CHAIN, a SUBMIT, an EXECUTE of SIM_K_INC on its bytes and
 * the RETRIEVE of what it wrote; CHAIN_OUTPUT, an EXECUTE whose output
 * follows its reply in fragments and a RETRIEVE. */
typedef enum scn_case {
    SCN_ALLOC, SCN_DELETE, SCN_SUBMIT, SCN_RETRIEVE, SCN_EXCHANGE,
    SCN_EXECUTE, SCN_SYNC, SCN_EXIT, SCN_CHAIN, SCN_CHAIN_OUTPUT, SCN_CASES
} scn_case;
const char *scn_case_name(scn_case c);

/* Creates the world and `nq` host queues. Returns 0 on success. */
int scn_open(scn *s, const sim_config *cfg, int nq);
/* Frees the world (after sim_world_run) and dropped references. */
void scn_close(scn *s);

/* A device of the world for the enqueue helpers' `rank`, `src` and `dst`:
 * worker `rank`'s unit `unit` (sim/device.h, sim_config.units). A plain
 * rank is its unit 0. */
#define SCN_DEV(rank, unit) ((rank) | ((unit) << 8))
#define SCN_RANK(dev) ((dev) & 0xff)
#define SCN_UNIT(dev) ((uint16_t)((dev) >> 8))

/* Enqueue helpers; each asserts the enqueue succeeded (returns its status so
 * tests of bad input can check errors instead). */
otm_status scn_load(scn *s, int qi, int rank);
/* A LOAD whose image's `size` bytes travel (a pattern image unless the
 * caller's bytes say otherwise); *id gets the load's id (may be NULL). */
otm_status scn_load_bytes(scn *s, int qi, int rank, const uint8_t *bytes,
                          uint64_t size, uint64_t *id);
otm_status scn_unload(scn *s, int qi, int rank, uint64_t id);
otm_status scn_alloc(scn *s, int qi, int rank, uint64_t size, uint64_t *out);
otm_status scn_delete(scn *s, int qi, int rank, uint64_t addr);
otm_status scn_submit(scn *s, int qi, int rank, uint64_t addr, const void *p,
                      uint64_t size);
otm_status scn_retrieve(scn *s, int qi, int rank, void *p, uint64_t addr,
                        uint64_t size);
otm_status scn_exchange(scn *s, int qi, int src, uint64_t saddr, int dst,
                        uint64_t daddr, uint64_t size);
otm_status scn_execute(scn *s, int qi, int rank, sim_kernel k, uint64_t a0,
                       uint64_t a1);
/* Records the last event of queue `from` and makes queue `qi` wait for it. */
otm_status scn_wait_for(scn *s, int qi, int from);

/* The device address of the global of device `dev` (SCN_DEV): worker
 * memory for unit 0, the start of a proxied unit's arena otherwise (where
 * its first LOAD puts it). */
uint64_t scn_global(scn *s, int dev);
/* Drops the references kept with s->keep (before sim_world_teardown). */
void scn_drop_refs(scn *s);

/* The configuration of runs with faults: virtual-time timeouts (1 ms, and
 * 5 ms for a running kernel) so that a lost message ends in an error. */
sim_config scn_fault_config(uint64_t seed);

/* The faults of the sweeps, drawn from `seed`: 1 to 3 of a failed MPI call
 * (Isend, Irecv, Test, Improbe, Imrecv, Get_count or Cancel, its n-th on
 * rank 0, 1 or 2, n <= 40), a failed allocation, a delayed message, a
 * stopped worker (1 or 2). Armed on `w`; count[kind] counts them. */
enum { SCN_F_CALL, SCN_F_ALLOC, SCN_F_DELAY, SCN_F_STOP, SCN_F_KINDS };
extern const char *const scn_fault_names[SCN_F_KINDS];
void scn_arm_faults(sim_world *w, uint64_t seed, uint64_t count[SCN_F_KINDS]);

/* A host program using every event kind over two queues and two workers:
 * queue 0 loads worker 1, submits 13 bytes of s->in[1] to its global, runs
 * SIM_K_INC on them and retrieves them into s->out[1] (so s->out[1][i] ==
 * s->in[1][i] + 1 when all went well); queue 1 loads worker 2, waits for
 * the submit, exchanges worker 1's global to worker 2's, allocates on
 * worker 2, submits 1 byte there and retrieves 5 bytes into s->out[2]. */
void scn_enqueue_all_kinds(scn *s);

/* With s->keep set: 1 when every kept event ended (FINISHED, or FAILED
 * with a status other than OTM_OK). */
int scn_all_ended(const scn *s);

/* The positive integer in the environment variable `name` (a test's
 * knob: OTM_SIM_SEEDS, OTM_SIM_EXPLORE_MAX...), or def when it is unset;
 * anything else ends the test binary with a message and status 2. */
uint64_t scn_env_count(const char *name, uint64_t def);

/* Fills `p` with a pattern that depends on `seed` and the position. */
void scn_pattern(uint8_t *p, uint64_t n, unsigned seed);

/* Runs one whole end-to-end case of kind `c` with payload `size` on `cfg`:
 * builds the world, enqueues the case, runs it, checks every byte and
 * status, and moves the trace into *trace (may be NULL). Returns SIM_OK or
 * the failure; a data mismatch is SIM_VIOLATION (and printed). */
sim_result scn_run_case(const sim_config *cfg, scn_case c, uint64_t size,
                        sim_trace *trace);

/* Proxied units end to end (sim/device.h): two workers serving their CPU
 * and two proxied units each (cfg's units and workers raised to 3 and 2).
 * After loads on units (1,1), (1,2), (2,2) and (2,0) (rank, unit): n bytes
 * of in[1] submitted to (1,1)'s global, SIM_K_INC run on them there, then
 * exchanged (1,1) -> (1,2) within the rank, (1,2) -> (2,2) across ranks,
 * (2,2) -> (2,0) to the CPU, retrieved from (2,0) into out[2] and from
 * (1,1) into out[1], and an allocation on (1,2); once that ran, a DELETE
 * of it, and one of the same address on (1,1), which must be refused.
 * Checks both retrieved buffers and (2,2)'s arena against in[1] + 1, the
 * allocation's address, every status, and the world's teardown. n is at
 * most SIM_GLOBAL_SIZE. Returns SIM_OK or the failure; moves the trace
 * into *trace (may be NULL). */
sim_result scn_run_units(const sim_config *cfg, uint64_t n, sim_trace *trace);

/* The smallest case of proxied units, for the exhaustive enumeration: a
 * byte exchanged from unit 1 of rank 1 to unit 1 of rank 2 (both staged),
 * after loads on both. */
sim_result scn_run_unit_exchange(const sim_config *cfg, sim_trace *trace);

/*
 * The end of the job from several host threads, as the plugin's entry
 * points meet it (otm/node.h, "the end of the job"). Two program threads,
 * each a sim_world_thread with a queue of its own: thread 0 runs a region
 * that faults (SIM_K_FAULT) on worker 1; thread 1 runs `rounds` regions
 * (SIM_K_NOP) on worker 2, one at a time, as a program that goes on until
 * it meets the end. Each does what an entry point does: otm_host_enter,
 * enqueue, progress its queue until it is empty, otm_host_leave; then,
 * when a region faulted or a worker was lost (the host's hooks recorded
 * it), it claims the end. The thread elected waits until it is alone in
 * the node, runs the exit protocol and tears the host down; a thread that
 * loses the claim, or is refused at otm_host_enter, parks for good (the
 * plugin's end ends the process under it). A third, the program's main,
 * claims the end once the other two are done or parked (the last
 * unregister_lib), and parks when it loses.
 *
 * The oracle, checked at every step of every thread and after the run:
 * at most one claim succeeds, and one did when the job ended; no thread is
 * inside while the end runs; no thread touches the node after the end tore
 * it down; the job ends (host and workers); every operation of thread 1
 * that ended has a status. Plus the world's own invariants and teardown.
 * Returns SIM_OK or the failure, and moves the trace into *trace (may be
 * NULL).
 */
typedef void (*scn_arm_fn)(sim_world *w, void *ctx);
typedef struct scn_end_plan {
    int rounds;             /* regions thread 1 issues, at least 1 */
    int main_thread;        /* 1: main is there (0: a region always
                             * faults, and one of the two ends the job) */
    int settle;             /* 1: the run's choices stop where the exit
                             * protocol begins (sim_world_settle) */
    scn_arm_fn arm;         /* NULL, or called before anything runs */
    void *arm_ctx;
} scn_end_plan;
sim_result scn_run_end(const sim_config *cfg, const scn_end_plan *plan, sim_trace *trace);

#endif
