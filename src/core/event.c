/*
 * event.c - the state machines of every event kind, both halves.
 *
 * otm_event_progress is the only way an event moves. It loops over the
 * event's resume points until one of them has to wait for a peer, so a call
 * goes as far as it can without blocking. All MPI traffic of an event uses
 * its own (communicator, tag); the order of fragments relies on MPI's
 * non-overtaking rule on one (source, destination, communicator), so both
 * sides always post fragments in increasing order.
 */
#include <limits.h>
#include <string.h>

#include "internal.h"

/* ---- request slots -------------------------------------------------------- */

typedef enum test_result {
    T_PENDING = 0,  /* still in flight */
    T_DONE,         /* completed successfully */
    T_ERROR,        /* completed with an error (e.g. truncated) */
    T_FAILED        /* the call itself failed; the request is still live */
} test_result;

int otm_slot_active(const otm_event *ev, int s)
{
    return ev->req[s] != MPI_REQUEST_NULL;
}

static int slot_is_recv(const otm_event *ev, int s)
{
    return (ev->recv_mask >> s) & 1u;
}

static MPI_Comm event_comm(const otm_node *node, const otm_event *ev)
{
    return node->comms[ev->comm];
}

static otm_status isend(otm_event *ev, int s, const void *buf, uint64_t len,
                        int dest, int tag, MPI_Comm comm)
{
    int rc = MPI_Isend(buf, (int)len, MPI_BYTE, dest, tag, comm, &ev->req[s]);
    ev->recv_mask &= (uint16_t)~(1u << s);
    if (rc != MPI_SUCCESS) {
        ev->req[s] = MPI_REQUEST_NULL;
        return OTM_ERR_MPI;
    }
    return OTM_OK;
}

otm_status otm_post_send(otm_node *node, otm_event *ev, int s,
                         const void *buf, uint64_t len, int dest)
{
    return isend(ev, s, buf, len, dest, ev->tag, event_comm(node, ev));
}

otm_status otm_post_notify(otm_node *node, otm_event *ev, int s,
                           const void *buf, uint64_t len, int dest)
{
    return isend(ev, s, buf, len, dest, OTM_TAG_CONTROL, node->control);
}

otm_status otm_post_recv(otm_node *node, otm_event *ev, int s, void *buf,
                            uint64_t len, int src)
{
    int rc = MPI_Irecv(buf, (int)len, MPI_BYTE, src, ev->tag,
                       event_comm(node, ev), &ev->req[s]);
    if (rc != MPI_SUCCESS) {
        ev->req[s] = MPI_REQUEST_NULL;
        return OTM_ERR_MPI;
    }
    ev->recv_mask |= (uint16_t)(1u << s);
    return OTM_OK;
}

/* Tests slot s; on completion of a receive, *count gets the bytes. A failed
 * call that left the request live must not be mistaken for completion:
 * MPI frees a request that completed (even with an error). */
static test_result test_slot(otm_event *ev, int s, int *count)
{
    MPI_Status st;
    int flag = 0;
    int rc = MPI_Test(&ev->req[s], &flag, &st);
    if (rc != MPI_SUCCESS)
        return ev->req[s] == MPI_REQUEST_NULL ? T_ERROR : T_FAILED;
    if (!flag)
        return T_PENDING;
    ev->req[s] = MPI_REQUEST_NULL;
    if (count && MPI_Get_count(&st, MPI_BYTE, count) != MPI_SUCCESS)
        return T_ERROR;
    return T_DONE;
}

/* Tests a slot that must end cleanly. Returns 1 when it is free now, 0 while
 * pending; on error starts failing the event and returns -1. */
int otm_await_slot(otm_node *node, otm_event *ev, int s, int *count)
{
    if (!otm_slot_active(ev, s))
        return 1;
    switch (test_slot(ev, s, count)) {
    case T_PENDING: return 0;
    case T_DONE: return 1;
    default: otm_event_fail(node, ev, OTM_ERR_MPI); return -1;
    }
}

/* ---- small helpers ------------------------------------------------------- */

void otm_set_state(otm_event *ev, otm_state st)
{
    /* Our own invariant, checked by the simulator on every step too. */
    if (st < ev->state)
        __builtin_trap();
    /* Atomic: a worker's gate reads the state of every live event (is a
     * key still in use?) while a handler thread moves a kernel event it
     * owns; see otm_event_ended. */
    __atomic_store_n(&ev->state, (uint8_t)st, __ATOMIC_RELEASE);
}

int otm_any_active(const otm_event *ev)
{
    for (int s = 0; s < OTM_SLOTS; s++)
        if (otm_slot_active(ev, s))
            return 1;
    return 0;
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The event's tag can be handed out again only if both sides provably
 * consumed every message on it; otherwise a late message could meet the
 * next event on that tag, so it is retired. */
static void drop_tag(otm_node *node, otm_event *ev, int clean)
{
    if (ev->side != OTM_ORIGIN || ev->tag < OTM_TAG_FIRST)
        return;
    otm_lock(node);
    if (clean) {
        otm_tags_release(&node->tags[ev->comm], ev->tag);
    } else {
        otm_tags_retire(&node->tags[ev->comm], ev->tag);
        node->stats.retired_tags++;
    }
    otm_unlock(node);
    ev->tag = -1;
}

/* Ends an event whose requests are all complete. */
int otm_finish(otm_node *node, otm_event *ev, otm_status st, int clean)
{
    if (ev->status == OTM_OK)
        ev->status = st;
    /* A peer that could not parse the event may not have consumed what
     * followed it. */
    if (ev->status == OTM_ERR_BAD_KIND || ev->status == OTM_ERR_BAD_VERSION ||
        ev->status == OTM_ERR_BAD_MESSAGE)
        ev->unclean = 1;
    otm_set_state(ev, ev->status == OTM_OK ? OTM_FINISHED : OTM_FAILED);
    ev->step = OTM_AT_END;
    /* Before the tag goes, so that the trace can name it. */
    otm_trace_at(node, ev, OTM_TRACE_END);
    drop_tag(node, ev, clean && !ev->unclean);
    return 1;
}

/* ---- failing ------------------------------------------------------------- */

int otm_event_fail(otm_node *node, otm_event *ev, otm_status st)
{
    if (ev->status == OTM_OK)
        ev->status = st;
    ev->step = OTM_AT_CANCEL;
    if (ev->state < OTM_WAITING)
        otm_set_state(ev, OTM_WAITING);
    ev->last_move = otm_now(node);
    for (int s = 0; s < OTM_SLOTS; s++) {
        if (otm_slot_active(ev, s) && slot_is_recv(ev, s) &&
            MPI_Cancel(&ev->req[s]) == MPI_SUCCESS)
            ev->cancel_mask |= (uint16_t)(1u << s);
    }
    return 1;
}

/* Waits for cancelled receives and in-flight sends to complete. A send to a
 * peer that never receives could pin the event forever, so after another
 * timeout period the sends are detached and their buffers abandoned. */
static int cancel_progress(otm_node *node, otm_event *ev)
{
    int moved = 0;
    int late = node->cfg.timeout_ns &&
               otm_now(node) - ev->last_move >= node->cfg.timeout_ns;
    for (int s = 0; s < OTM_SLOTS; s++) {
        if (!otm_slot_active(ev, s))
            continue;
        if (slot_is_recv(ev, s) && !((ev->cancel_mask >> s) & 1u) &&
            MPI_Cancel(&ev->req[s]) == MPI_SUCCESS)
            ev->cancel_mask |= (uint16_t)(1u << s);
        test_result r = test_slot(ev, s, NULL);
        if (r == T_DONE || r == T_ERROR) {
            ev->req[s] = MPI_REQUEST_NULL;
            moved = 1;
        } else if (late && !slot_is_recv(ev, s) &&
                   MPI_Request_free(&ev->req[s]) == MPI_SUCCESS) {
            ev->req[s] = MPI_REQUEST_NULL;
            ev->abandoned = 1;
            moved = 1;
        }
    }
    if (!otm_any_active(ev))
        return otm_finish(node, ev, ev->status, 0);
    return moved;
}

void otm_event_abandon(otm_node *node, otm_event *ev)
{
    for (int s = 0; s < OTM_SLOTS; s++) {
        if (!otm_slot_active(ev, s))
            continue;
        if (slot_is_recv(ev, s))
            MPI_Cancel(&ev->req[s]);
        if (MPI_Request_free(&ev->req[s]) == MPI_SUCCESS && !slot_is_recv(ev, s))
            ev->abandoned = 1;
        ev->req[s] = MPI_REQUEST_NULL;
    }
}

/* ---- fragments ------------------------------------------------------------ */

/* Keeps up to `window` fragments in flight with `peer`, sending from or
 * receiving into `base` (or the scratch sink when discarding). Returns 1 if
 * anything moved; *st is set on failure. Complete when moved == count. */
int otm_pump(otm_node *node, otm_event *ev, int sending, uint8_t *base,
                int peer, otm_status *st)
{
    int moved = 0;
    for (int i = 0; i < ev->window && ev->moved < ev->plan.count; i++) {
        int s = OTM_SLOT_FRAG0 + i;
        if (otm_slot_active(ev, s)) {
            test_result r = test_slot(ev, s, NULL);
            if (r == T_PENDING)
                continue;
            if (r == T_FAILED || (r == T_ERROR && !ev->discard)) {
                *st = OTM_ERR_MPI;
                return 1;
            }
            ev->moved++;
            moved = 1;
        }
        if (ev->posted < ev->plan.count) {
            uint64_t off = otm_frag_offset(&ev->plan, ev->posted);
            uint64_t len = (uint64_t)otm_frag_length(&ev->plan, ev->posted);
            otm_status rc;
            if (sending)
                rc = otm_post_send(node, ev, s, base + off, len, peer);
            else if (ev->discard)
                rc = otm_post_recv(node, ev, s, node->sink,
                                   min_u64(len, OTM_SCRATCH_MAX), peer);
            else
                rc = otm_post_recv(node, ev, s, base + off, len, peer);
            if (rc) {
                *st = rc;
                return 1;
            }
            ev->posted++;
            moved = 1;
        }
    }
    return moved;
}

/* Plans a payload of `total` bytes in fragments of `frag`. */
void otm_plan_payload(otm_node *node, otm_event *ev, uint64_t total,
                               uint64_t frag)
{
    ev->plan = otm_frag_make(total, frag);
    ev->posted = ev->moved = 0;
    /* Receives into the shared sink must not overlap in time. */
    ev->window = ev->discard ? 1 : (uint8_t)node->cfg.window;
}


/* ---- entry point ---------------------------------------------------------- */

/* A host EXECUTE waiting for its reply is waiting for the user's kernel,
 * which may rightly run for hours: it has a limit of its own. So has an
 * UNLOAD, which waits for the worker's kernels to end. */
static int running_kernel(const otm_event *ev)
{
    return (ev->kind == OTM_KIND_EXECUTE || ev->kind == OTM_KIND_UNLOAD) &&
           ev->side == OTM_ORIGIN && ev->step == OTM_AT_REPLY;
}

static int timed_out(otm_node *node, const otm_event *ev)
{
    if (ev->kind == OTM_KIND_SYNC || ev->step == OTM_AT_DRAIN ||
        ev->step == OTM_AT_CANCEL)
        return 0;
    uint64_t limit = running_kernel(ev) ? node->cfg.kernel_timeout_ns
                                        : node->cfg.timeout_ns;
    return limit && otm_now(node) - ev->last_move >= limit;
}

/* Runs resume points until one has to wait. Returns 1 if anything moved. */
static int run_steps(otm_node *node, otm_event *ev)
{
    int moved = 0;
    while (!otm_event_ended(ev)) {
        uint8_t step = ev->step, state = ev->state;
        if (ev->step == OTM_AT_CANCEL)
            moved |= cancel_progress(node, ev);
        else if (ev->side == OTM_ORIGIN)
            moved |= otm_origin_step(node, ev);
        else
            moved |= otm_dest_step(node, ev);
        if (ev->step == step && ev->state == state)
            break;
    }
    return moved;
}

int otm_event_progress(otm_node *node, otm_event *ev)
{
    /* Timeouts count from the first time the event could run, not from
     * when it was queued behind others. */
    if (!ev->armed) {
        ev->armed = 1;
        ev->last_move = otm_now(node);
        otm_trace_at(node, ev, OTM_TRACE_RUN);
    }
    if (run_steps(node, ev)) {
        ev->last_move = otm_now(node);
        return 1;
    }
    /* Only an event that could not move has timed out: a host that comes
     * back late to an answer already waiting takes the answer. */
    if (otm_event_ended(ev) || !timed_out(node, ev))
        return 0;
    otm_event_fail(node, ev, OTM_ERR_TIMEOUT);
    run_steps(node, ev);
    return 1;
}

/* ---- names ------------------------------------------------------------- */

const char *otm_kind_name(int kind)
{
    static const char *const names[] = {
        "?", "ALLOC", "DELETE", "SUBMIT", "RETRIEVE", "EXCHANGE",
        "EXECUTE", "SYNC", "EXIT", "LOAD", "UNLOAD"};
    return kind > 0 && kind < OTM_KIND_END ? names[kind] : "?";
}

const char *otm_state_name(int state)
{
    static const char *const names[] = {"CREATED", "RUNNING", "WAITING",
                                        "FINISHED", "FAILED"};
    return state >= 0 && state <= OTM_FAILED ? names[state] : "?";
}

const char *otm_step_name(int step)
{
    static const char *const names[] = {
        "START", "NOTIFY", "PREAMBLE", "PAYLOAD", "RUN", "DRAIN",
        "REPLY", "REPLY_DATA", "CANCEL", "END"};
    return step >= 0 && step <= OTM_AT_END ? names[step] : "?";
}
