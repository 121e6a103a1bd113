/*
 * gate.c - a worker's gate and handler. The gate receives notifications on
 * the control communicator, turns each into a destination event (or
 * answers it with an error, or drops it when there is no channel to answer
 * on) and runs the data events; a handler runs the kernel events.
 */
#include "internal.h"

/* A notification larger than this is malformed whatever the host's
 * configuration: the largest inline payload plus the header. */
#define OTM_NOTIFY_MAX (OTM_WIRE_NOTIFY_SIZE + (1u << 20) + 16u * OTM_MAX_ARGS)

static void drop(otm_node *node, uint8_t *buf, int src, const char *why)
{
    otm__log(node, OTM_LOG_WARN, "dropped a notification from rank %d: %s",
             src, why);
    node->stats.dropped++;
    otm__free(node, buf);
}

/* Turns a received notification into an event, or answers it with an
 * error, or drops it when there is no channel to answer on; then it owns
 * `buf` and returns 1. Returns 0 (and keeps nothing) when the event that
 * last used the same (communicator, tag) has not ended yet: the host saw
 * its reply and reused the tag, but that event still waits for its own
 * send to complete. The caller holds the notification and tries again. */
static int dispatch(otm_node *node, uint8_t *buf, int len, int src)
{
    otm_notify n;
    otm_status st = otm_wire_get_notify(buf, (size_t)len, &n);
    if (!n.routable)
        return drop(node, buf, src, "not a notification"), 1;
    const char *why = otm__dest_unroutable(node, &n);
    if (why)
        return drop(node, buf, src, why), 1;
    if (otm__runq_live_id(node, (int)n.comm, (int)n.tag, src))
        return 0;
    otm_event *ev = otm__event_new(node, (otm_kind)n.kind, OTM_DEST);
    if (!ev)
        return drop(node, buf, src, "out of memory"), 1;
    otm__dest_init(node, ev, &n, buf, (uint32_t)len, src);
    ev->status = otm__dest_admit(node, ev, st);
    /* A refused event keeps its place in the chain too: the one chained
     * behind it waits for it, and it for the one before it, so a refused
     * kernel does not let a RETRIEVE overtake the SUBMIT before both. */
    if (n.after) {
        otm_status chained = otm__dest_chain(node, ev, n.after);
        if (ev->status == OTM_OK)
            ev->status = chained;
    }
    ev->rejected = ev->status != OTM_OK;
    otm__trace_at(node, ev, OTM_TRACE_BEGIN);
    if (ev->status)
        node->stats.rejected++;
    else if (ev->kind == OTM_KIND_EXIT)
        node->life = OTM_LIFE_EXITING;
    otm__runq_push(node, ev);
    return 1;
}

/* Starts receiving the next notification, if one is there. Oversized ones
 * are received truncated: they are malformed, but their first bytes may
 * still say where to send the error. */
static int gate_post(otm_node *node)
{
    MPI_Message m;
    MPI_Status st;
    int flag = 0, count = 0;
    if (MPI_Improbe(MPI_ANY_SOURCE, OTM_TAG_CONTROL, node->control, &flag, &m,
                    &st) != MPI_SUCCESS)
        return 1;                   /* an error is news: poll again */
    if (!flag)
        return 0;
    if (MPI_Get_count(&st, MPI_BYTE, &count) != MPI_SUCCESS || count < 0)
        count = 0;
    node->gate_len = count > (int)OTM_NOTIFY_MAX ? (int)OTM_WIRE_NOTIFY_SIZE : count;
    node->gate_src = st.MPI_SOURCE;
    node->gate_buf = otm__alloc(node, (size_t)node->gate_len + 1);
    void *into = node->gate_buf ? (void *)node->gate_buf : (void *)node->sink;
    if (!node->gate_buf)
        node->gate_len = count < (int)OTM_SCRATCH_MAX ? count : (int)OTM_SCRATCH_MAX;
    if (MPI_Imrecv(into, node->gate_len, MPI_BYTE, &m, &node->gate_req) != MPI_SUCCESS) {
        node->gate_req = MPI_REQUEST_NULL;
        drop(node, node->gate_buf, node->gate_src, "receive failed");
        node->gate_buf = NULL;
    }
    return 1;
}

/* Dispatches the notification held in gate_buf. Returns 1 if it went. */
static int gate_dispatch(otm_node *node)
{
    if (!dispatch(node, node->gate_buf, node->gate_len, node->gate_src))
        return 0;
    node->gate_buf = NULL;
    return 1;
}

static int gate_receive(otm_node *node)
{
    if (node->gate_req == MPI_REQUEST_NULL && node->gate_buf)
        return gate_dispatch(node);     /* held: its tag was still in use */
    /* A notification is small: its receive is mostly complete once
     * posted, so it is tested at once rather than a round later. */
    int posted = 0;
    if (node->gate_req == MPI_REQUEST_NULL) {
        posted = gate_post(node);
        if (node->gate_req == MPI_REQUEST_NULL)
            return posted;          /* nothing there, or news of a failure */
    }
    MPI_Status st;
    int flag = 0;
    int rc = MPI_Test(&node->gate_req, &flag, &st);
    if (rc != MPI_SUCCESS && node->gate_req != MPI_REQUEST_NULL)
        return 1;                   /* the call failed; try again */
    if (rc == MPI_SUCCESS && !flag)
        return posted;
    node->gate_req = MPI_REQUEST_NULL;
    if (!node->gate_buf)
        drop(node, NULL, node->gate_src, "out of memory");
    else
        gate_dispatch(node);
    return 1;
}

/* Progresses every data event once; frees the ended ones. */
static int run_data(otm_node *node)
{
    int moved = 0;
    otm_event *prev = NULL, *next;
    for (otm_event *ev = otm__runq_data_first(node); ev; ev = next) {
        moved |= otm_event_progress(node, ev);
        next = otm__runq_settle_data(node, &prev, ev);
        if (otm_event_ended(ev)) {
            /* Only the EXIT the gate accepted ends the service; a
             * malformed one was answered and changes nothing. */
            if (ev->kind == OTM_KIND_EXIT && !ev->rejected)
                node->life = OTM_LIFE_DONE;
            otm__event_free(node, ev);
            moved = 1;
        }
    }
    return moved;
}

int otm_gate_poll_once(otm_node *node)
{
    int moved = 0;
    if (node->life != OTM_LIFE_DONE)
        moved = gate_receive(node);
    return moved | run_data(node);
}

static int handler_step(otm_node *node, int ran_only)
{
    otm_event *ev = otm__runq_claim_kernel(node, ran_only);
    if (!ev)
        return 0;
    int moved = otm_event_progress(node, ev);
    int ended = otm_event_ended(ev);
    otm__runq_settle_kernel(node, ev);
    if (!ended)
        return moved;
    otm__event_free(node, ev);
    return 1;
}

int otm_handler_run_once(otm_node *node)
{
    return handler_step(node, 0);
}

int otm_handler_reply_once(otm_node *node)
{
    return handler_step(node, 1);
}
