/*
 * progress.c - otm_event_progress, the only way an event moves: it runs
 * the event's resume points (the origin's or the destination's half, or
 * the cancellation of a failing event) until one has to wait for a peer,
 * and fails an event that could not move for longer than its timeout.
 */
#include "internal.h"

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
    return limit && otm__now(node) - ev->last_move >= limit;
}

/* Runs resume points until one has to wait. Returns 1 if anything moved. */
static int run_steps(otm_node *node, otm_event *ev)
{
    int moved = 0;
    while (!otm_event_ended(ev)) {
        uint8_t step = ev->step, state = ev->state;
        if (ev->step == OTM_AT_CANCEL)
            moved |= otm__cancel_progress(node, ev);
        else if (ev->side == OTM_ORIGIN)
            moved |= otm__origin_step(node, ev);
        else
            moved |= otm__dest_step(node, ev);
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
        ev->last_move = otm__now(node);
        otm__trace_at(node, ev, OTM_TRACE_RUN);
    }
    if (run_steps(node, ev)) {
        ev->last_move = otm__now(node);
        return 1;
    }
    /* Only an event that could not move has timed out: a host that comes
     * back late to an answer already waiting takes the answer. */
    if (otm_event_ended(ev) || !timed_out(node, ev))
        return 0;
    otm__event_fail(node, ev, OTM_ERR_TIMEOUT);
    run_steps(node, ev);
    return 1;
}
