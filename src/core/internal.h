/*
 * internal.h - what the core's files share and nobody else may use.
 *
 * Internal names carry the prefix otm__ (public ones otm_). Declarations
 * are grouped by the file that defines them, in the core's dependency
 * order: each file uses only the ones above its own section (see
 * tools/code-map.sh graph and docs/DESIGN.md §3).
 *
 *   log.c, request.c -> event.c -> payload.c, table.c, runq.c
 *     -> origin.c, dest.c -> progress.c -> host.c, gate.c -> node.c
 *
 * Everything here assumes the invariants stated in otm/event.h and
 * otm/node.h.
 */
#ifndef OTM_INTERNAL_H
#define OTM_INTERNAL_H

#include <stdlib.h>

#include "otm/event.h"
#include "otm/node.h"
#include "otm/wire.h"

/* Sink for a payload a rank must receive but not keep. */
#define OTM_SCRATCH_MAX 65536u
/* Largest device image a worker accepts over the wire. */
#define OTM_IMAGE_MAX (1ull << 30)

/* ---- the hooks (otm/node.h), with their defaults ---------------------------- */

static inline void *otm__alloc(otm_node *node, size_t size)
{
    return node->hooks.alloc ? node->hooks.alloc(node->hooks.ctx, size)
                             : malloc(size);
}

static inline void otm__free(otm_node *node, void *p)
{
    if (!p)
        return;
    if (node->hooks.release)
        node->hooks.release(node->hooks.ctx, p);
    else
        free(p);
}

/* 0 without a clock: then nothing times out. */
static inline uint64_t otm__now(otm_node *node)
{
    return node->hooks.now ? node->hooks.now(node->hooks.ctx) : 0;
}

static inline void otm__lock(otm_node *node)
{
    if (node->hooks.lock)
        node->hooks.lock(node->hooks.ctx);
}

static inline void otm__unlock(otm_node *node)
{
    if (node->hooks.unlock)
        node->hooks.unlock(node->hooks.ctx);
}

/* The length of a list the lock guards, kept beside it so that a thread
 * polling an empty list skips the lock (most polls find the lists empty):
 * changed with the lock held, read without it. A length read as 0 while
 * an event is being added is read again at the next poll; a thread that
 * decides to sleep on it reads it after taking the mutex the adder's
 * wake-up takes, as it did the list. */
static inline void otm__count(size_t *n, int delta)
{
    __atomic_store_n(n, *n + (size_t)delta, __ATOMIC_RELEASE);
}

static inline int otm__none(const size_t *n)
{
    return __atomic_load_n(n, __ATOMIC_ACQUIRE) == 0;
}

/* Tells the trace hook, if there is one, that `ev` reached `point`. */
static inline void otm__trace_at(otm_node *node, otm_event *ev, otm_trace_point point)
{
    if (node->hooks.trace)
        node->hooks.trace(node->hooks.ctx, ev, (int)point);
}

/* ---- parameters shared by kinds ---------------------------------------------- */

/* Fragment size of the payload the origin sends after its notification. */
static inline uint64_t otm__payload_frag(const otm_event *ev)
{
    switch (ev->kind) {
    case OTM_KIND_SUBMIT: return ev->p.submit.frag;
    case OTM_KIND_EXCHANGE: return ev->p.exchange.frag;
    case OTM_KIND_LOAD: return ev->p.load.frag;
    default: return 0;
    }
}

/* The data that answers RETRIEVE, LOAD (the entries) and EXECUTE (the
 * region's result): how much may travel inside the reply, and the
 * fragment size of the rest. EXECUTE's are protocol constants. */
static inline uint64_t otm__reply_inline_max(const otm_event *ev)
{
    switch (ev->kind) {
    case OTM_KIND_RETRIEVE: return ev->p.retrieve.inline_max;
    case OTM_KIND_LOAD: return ev->p.load.inline_max;
    case OTM_KIND_EXECUTE: return OTM_EXEC_INLINE_MAX;
    default: return 0;
    }
}

static inline uint64_t otm__reply_frag(const otm_event *ev)
{
    switch (ev->kind) {
    case OTM_KIND_RETRIEVE: return ev->p.retrieve.frag;
    case OTM_KIND_LOAD: return ev->p.load.frag;
    case OTM_KIND_EXECUTE: return OTM_EXEC_FRAG;
    default: return 0;
    }
}

/* ---- log.c ------------------------------------------------------------------- */

/* Appends a line to the node's log hook, prefixed with the rank. */
void otm__log(otm_node *node, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- request.c: one MPI request per slot ------------------------------------- */

typedef enum otm__test_result {
    OTM__T_PENDING = 0, /* still in flight */
    OTM__T_DONE,        /* completed successfully */
    OTM__T_ERROR,       /* completed with an error (e.g. truncated) */
    OTM__T_FAILED       /* the call itself failed; the request is still live */
} otm__test_result;

void otm__slots_init(otm_event *ev);
int otm__slot_active(const otm_event *ev, int s);
int otm__slot_is_recv(const otm_event *ev, int s);
int otm__any_active(const otm_event *ev);
/* Isend/Irecv on the event's (communicator, tag); notifications go on the
 * control communicator. Errors leave the slot empty. */
otm_status otm__post_send(otm_node *node, otm_event *ev, int s,
                          const void *buf, uint64_t len, int dest);
otm_status otm__post_notify(otm_node *node, otm_event *ev, int s,
                            const void *buf, uint64_t len, int dest);
otm_status otm__post_recv(otm_node *node, otm_event *ev, int s, void *buf,
                          uint64_t len, int src);
/* Tests slot s; on completion of a receive, *count (may be NULL) gets the
 * bytes received. */
otm__test_result otm__slot_test(otm_event *ev, int s, int *count);
/* Failing: cancels every receive (recorded in cancel_mask); then, slot by
 * slot, settle tests what is left, and when `late` detaches a send that
 * never completed (ev->abandoned). settle returns 1 if the slot moved. */
void otm__slots_cancel(otm_event *ev);
int otm__slot_settle(otm_event *ev, int s, int late);
/* Releases every request without waiting (tear-down only). */
void otm__slots_abandon(otm_event *ev);

/* ---- event.c: an event's life -------------------------------------------- */

/* Allocates a zeroed event, links it into node->all and gives it an id.
 * Returns NULL when memory is short. */
otm_event *otm__event_new(otm_node *node, otm_kind kind, otm_side side);
/* Unlinks and frees an ended event with no request outstanding; one whose
 * sends were detached goes to the graveyard instead. */
void otm__event_free(otm_node *node, otm_event *ev);
/* Frees the graveyard (otm_node_release). */
void otm__event_bury(otm_node *node);
/* States only grow (a trap otherwise); stored atomically. */
void otm__set_state(otm_event *ev, otm_state st);
/* 1: slot free, 0: pending, -1: failed (the event is now failing). */
int otm__await_slot(otm_node *node, otm_event *ev, int s, int *count);
/* Ends an event whose requests are all complete; `clean` says both sides
 * consumed every message on the tag (else the tag is retired). Returns 1. */
int otm__finish(otm_node *node, otm_event *ev, otm_status st, int clean);
/* Starts failing `ev` with `st`: cancels its receives and lets
 * otm__cancel_progress finish. Returns 1 (it moved). */
int otm__event_fail(otm_node *node, otm_event *ev, otm_status st);
int otm__cancel_progress(otm_node *node, otm_event *ev);

/* ---- payload.c: fragments ------------------------------------------------ */

/* Plans a payload of `total` bytes in fragments of `frag`. */
void otm__plan_payload(otm_node *node, otm_event *ev, uint64_t total,
                       uint64_t frag);
/* Keeps up to `window` fragments in flight with `peer`, sending from or
 * receiving into `base` (or the sink when discarding). Returns 1 if
 * anything moved; *st is set on failure. Complete when moved == count. */
int otm__pump(otm_node *node, otm_event *ev, int sending, uint8_t *base,
              int peer, otm_status *st);

/* ---- table.c: each unit's images and kernels -------------------------------- */

/* Records the image of load `id` on unit u and its entries (kernels go to
 * the unit's kernel table, globals to its registry); on failure nothing
 * stays. */
otm_status otm__table_add_image(otm_node *node, otm_unit *u, uint64_t id, const otm_entry *e,
                                uint64_t count);
/* Forgets the image of load `id` and the entries no other image loaded on
 * the unit lists. OTM_ERR_NO_IMAGE when there is no such load. */
otm_status otm__table_drop_image(otm_node *node, otm_unit *u, uint64_t id);
otm_loaded_image *otm__table_image(otm_unit *u, uint64_t id);
int otm__table_has_kernel(const otm_unit *u, uint64_t kernel);
void otm__table_fini(otm_node *node, otm_unit *u);

/* The unit an event of this worker works on: NULL when the worker has no
 * such unit (the gate refuses it first). */
static inline otm_unit *otm__unit(otm_node *node, uint16_t unit)
{
    return unit < node->nunits ? &node->units[unit] : NULL;
}

/* ---- work.c: the device's work for an event ---------------------------------- */

/* Runs EXECUTE's kernel with the arguments of `args` (the inline
 * payload: nargs base values, then nargs offsets). The region's output
 * and, when it faulted, how, go to ev->scratch (ev->value its length); a
 * fault marks the node failed: from then on it serves only the EXIT. */
otm_status otm__work_kernel(otm_node *node, otm_event *ev, const uint8_t *args);
/* Loads the image `ref` (its bytes received into ev->scratch when
 * ref.send, else the device's own copy) and keeps its entry list,
 * serialised as the reply's payload, in ev->scratch (ev->value the count);
 * on failure nothing stays loaded. */
otm_status otm__work_load(otm_node *node, otm_event *ev, otm_image_ref ref);
/* Drops the entries of UNLOAD's image, then unloads it. */
otm_status otm__work_unload(otm_node *node, otm_event *ev);

/* ---- runq.c: a worker's run queues (each call takes the lock) --------------- */

/* An admitted EXECUTE goes to the kernel queue, anything else to the
 * data queue. */
void otm__runq_push(otm_node *node, otm_event *ev);
/* The id of the live event that talks on (comm, tag, rank), 0 if none. */
uint64_t otm__runq_live_id(otm_node *node, int comm, int tag, int rank);
/* 1 when the event `id` no longer holds back one chained behind it: its
 * data landed (SUBMIT), its kernel ran (EXECUTE), it ended, or it is
 * gone. Kernel events held back are invisible to the calls below. */
int otm__runq_done(otm_node *node, uint64_t id);
/* 1 when no kernel event is queued or running. */
int otm__runq_kernels_idle(otm_node *node);
/* 1 when the EXIT event `ev` is the only thing left to run. */
int otm__runq_drained(otm_node *node, const otm_event *ev);
/* The first kernel event no handler holds (with `ran_only`, the first
 * whose kernel already ran), now claimed (NULL: none); then settle gives
 * it back, unlinked when it ended. */
otm_event *otm__runq_claim_kernel(otm_node *node, int ran_only);
void otm__runq_settle_kernel(otm_node *node, otm_event *ev);
/* The first data event (NULL: none); then settle, for each in turn, gives
 * the one after it and unlinks it when it ended. `*prev` follows the
 * walk: NULL before the first. Only the gate walks the data queue. */
otm_event *otm__runq_data_first(otm_node *node);
otm_event *otm__runq_settle_data(otm_node *node, otm_event **prev, otm_event *ev);

/* ---- origin.c, dest.c: the two halves ----------------------------------------- */

/* A host event that waits for the worker's kernels (EXECUTE, UNLOAD) while
 * it waits for its reply: bounded by KERNEL_TIMEOUT, probed for liveness. */
static inline int otm__waits_for_kernel(const otm_event *ev)
{
    return (ev->kind == OTM_KIND_EXECUTE || ev->kind == OTM_KIND_UNLOAD) &&
           ev->side == OTM_ORIGIN && ev->step == OTM_AT_REPLY;
}

/* A host event to one worker, past its start: its progress is that
 * worker's. (A tag that never came says nothing of the worker; an
 * EXCHANGE waits for two; a probe's, the exit's and a SYNC's silence have
 * meanings of their own.) */
static inline int otm__waits_for_worker(const otm_event *ev)
{
    return ev->side == OTM_ORIGIN && ev->state != OTM_CREATED &&
           ev->kind != OTM_KIND_EXCHANGE && ev->kind != OTM_KIND_PING &&
           ev->kind != OTM_KIND_EXIT && ev->kind != OTM_KIND_SYNC;
}

/* 1 when the worker of `rank` stopped answering a liveness probe: lost for
 * good (liveness.c marks it, the origin's start reads it). */
static inline int otm__worker_lost(otm_node *node, int rank)
{
    otm__lock(node);
    int lost = node->lost && rank > 0 && rank < node->size && node->lost[rank];
    otm__unlock(node);
    return lost;
}

/* A new origin event for `op`, its notification built and its trace begun;
 * NULL with *st set when memory is short. */
otm_event *otm__origin_new(otm_node *node, const otm_op *op, otm_status *st);
/* Bytes of payload a notification of this origin event carries inline. */
uint32_t otm__origin_inline_len(const otm_node *node, const otm_op *op);
/* Fills the origin event from `op`; builds the notification buffer. */
otm_status otm__origin_init(otm_node *node, otm_event *ev, const otm_op *op);
/* All validation of what the host sent, in three steps: the gate asks
 * unroutable (a reason to drop, or NULL) before an event exists, then
 * admit (the status the event answers with: the decoding's, then kind,
 * life and device checks), and the event's start checks its parameters. */
const char *otm__dest_unroutable(const otm_node *node, const otm_notify *n);
otm_status otm__dest_admit(otm_node *node, const otm_event *ev,
                           otm_status decoded);
/* For an admitted notification that names an event to run after (`after`,
 * otm/wire.h): OTM_ERR_BAD_MESSAGE unless it is a SUBMIT, EXECUTE or
 * RETRIEVE naming another event tag; else records the event it waits for
 * (ev->after_id), if that one is still live. */
otm_status otm__dest_chain(otm_node *node, otm_event *ev, uint32_t after);
/* Sets up the destination half from a decoded notification; takes
 * ownership of `msg`. */
void otm__dest_init(otm_node *node, otm_event *ev, const otm_notify *n,
                    uint8_t *msg, uint32_t len, int src);

/* One resume point of each half. Return 1 if moved. */
int otm__origin_step(otm_node *node, otm_event *ev);
int otm__dest_step(otm_node *node, otm_event *ev);

/* ---- liveness.c: probes of a worker running a kernel -------------------------- */

/* How long a probe may wait for its answer, and how long an event waiting
 * for a kernel stays quiet before it probes: half of the timeout (0: no
 * probes), so that a dead or stopped worker is found within one timeout of
 * its last answer. */
static inline uint64_t otm__probe_period(const otm_node *node)
{
    return node->cfg.timeout_ns / 2;
}
/* After each progress of the origin event `ev` (progress.c drives):
 * begin hands the probe of an event no longer waiting for its kernel to
 * the node's orphans, or starts a probe (a PING to its worker) when it has
 * been quiet for a period; returns 1 if it did either. Once the probe
 * ended, settle frees it and fails `ev` with OTM_ERR_UNRESPONSIVE when it
 * got no answer, else notes the answer; returns 1. */
int otm__probe_begin(otm_node *node, otm_event *ev);
int otm__probe_settle(otm_node *node, otm_event *ev);
/* `ev` just failed waiting for its kernel longer than KERNEL_TIMEOUT: its
 * worker, inside the region still, is lost for the node, and the
 * region_timeout hook hears of it. */
void otm__overran(otm_node *node, const otm_event *ev);
/* `ev`, which waited for its worker (otm__waits_for_worker) with no
 * progress for a timeout, just failed with OTM_ERR_TIMEOUT: the worker is
 * lost (the worker_lost hook hears of it), and the event's cancellation
 * detaches its sends at once rather than after another timeout. */
void otm__silent(otm_node *node, otm_event *ev);
/* The orphans: take one off the list (NULL: none), return it after a
 * progress (freed when it ended: returns 1), and whether any is live. */
otm_event *otm__orphan_take(otm_node *node);
int otm__orphan_return(otm_node *node, otm_event *pr);
int otm__orphans_live(otm_node *node);

/* ---- progress.c ---------------------------------------------------------------- */

/* Runs one orphaned probe a little further (the exit protocol runs them
 * all to their end). Returns 1 if moved. */
int otm__orphans_step(otm_node *node);

#endif
