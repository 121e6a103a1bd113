/*
 * progress.c - otm_event_progress, the only way an event moves: it runs
 * the event's resume points (the origin's or the destination's half, or
 * the cancellation of a failing event) until one has to wait for a peer,
 * and fails an event that could not move for longer than its timeout.
 */
#include "internal.h"

/* A host EXECUTE or UNLOAD waiting for its reply waits for the user's
 * kernels, which may rightly run for hours: KERNEL_TIMEOUT bounds it (its
 * worker's liveness is probed meanwhile: liveness.c). A probe gets half the
 * timeout, once it holds a tag (tags exhausted on the host say nothing of
 * the worker). */
static uint64_t limit_of(const otm_node *node, const otm_event *ev)
{
    if (ev->kind == OTM_KIND_PING)
        return ev->state == OTM_CREATED ? 0 : otm__probe_period(node);
    return otm__waits_for_kernel(ev) ? node->cfg.kernel_timeout_ns : node->cfg.timeout_ns;
}

static int timed_out(otm_node *node, const otm_event *ev)
{
    if (ev->kind == OTM_KIND_SYNC || ev->step == OTM_AT_DRAIN ||
        ev->step == OTM_AT_CANCEL)
        return 0;
    /* A chained event waits for the one before it, whose own bounds apply
     * (otm/event.h); its clock starts over when it is let go. */
    if ((ev->after_id && ev->state == OTM_CREATED) ||
        (ev->after && !otm_event_ended(ev->after)))
        return 0;
    uint64_t limit = limit_of(node, ev);
    return limit && otm__now(node) - ev->last_move >= limit;
}

int otm__orphans_step(otm_node *node)
{
    otm_event *pr = otm__orphan_take(node);
    if (!pr)
        return 0;
    int moved = otm_event_progress(node, pr);
    return otm__orphan_return(node, pr) | moved;
}

/* The liveness of an origin event waiting for a kernel (liveness.c), and
 * one orphaned probe, after each progress of a host event. */
static int live_step(otm_node *node, otm_event *ev)
{
    if (ev->side != OTM_ORIGIN || ev->kind == OTM_KIND_PING)
        return 0;
    int moved = otm__orphans_step(node) | otm__probe_begin(node, ev);
    if (!ev->probe)
        return moved;
    moved |= otm_event_progress(node, ev->probe);
    if (otm_event_ended(ev->probe))
        moved |= otm__probe_settle(node, ev);
    return moved;
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

static int progress_event(otm_node *node, otm_event *ev)
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
        live_step(node, ev);
        return 1;
    }
    int probed = live_step(node, ev);
    /* Only an event that could not move has timed out: a host that comes
     * back late to an answer already waiting takes the answer. */
    if (otm_event_ended(ev) || !timed_out(node, ev)) {
        if (probed && ev->step == OTM_AT_CANCEL)
            run_steps(node, ev);        /* its probe failed it: unresponsive */
        return probed;
    }
    int overran = otm__waits_for_kernel(ev);
    int silent = !overran && otm__waits_for_worker(ev);
    otm__event_fail(node, ev, overran ? OTM_ERR_KERNEL_TIMEOUT : OTM_ERR_TIMEOUT);
    if (overran)
        otm__overran(node, ev);
    if (silent)
        otm__silent(node, ev);
    run_steps(node, ev);
    live_step(node, ev);                /* failed: its probe goes on alone */
    return 1;
}

int otm_event_progress(otm_node *node, otm_event *ev)
{
    if (!node->hooks.progress)
        return progress_event(node, ev);
    node->hooks.progress(node->hooks.ctx, ev, -1);
    int moved = progress_event(node, ev);
    node->hooks.progress(node->hooks.ctx, ev, moved);
    return moved;
}
