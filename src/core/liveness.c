/*
 * liveness.c - the probes of a host event that waits for a kernel.
 *
 * An EXECUTE (or an UNLOAD, which waits for the worker's kernels) may wait
 * for its reply as long as the user's region runs, so OMPTARGET_MPI_TIMEOUT
 * cannot bound it, and a worker that died or was stopped would keep it
 * waiting for ever. So while it waits it asks: once it has been quiet for a
 * probe period (half the timeout), it sends the worker a PING, an event of
 * its own (its own tag) that the worker's gate answers at once, whatever
 * its handlers run. Any answer proves the worker alive and the quiet starts
 * over; no answer within a period (the PING's own timeout), or MPI unable
 * to reach the worker, fails the waiting event with OTM_ERR_UNRESPONSIVE:
 * found within one timeout of the worker's last answer, whatever the
 * region's length. KERNEL_TIMEOUT stays the bound on the region's length:
 * answers to probes do not restart it (they do not move the event).
 *
 * An event that stops waiting for its kernel while its probe is out (its
 * reply came, it failed) does not wait for the probe, which is orphaned:
 * the node keeps it and each progress of a host event runs one orphan a
 * little further (progress.c), until its answer or its timeout ends it;
 * the exit protocol waits for them.
 *
 * This file decides; progress.c, which moves events, drives it.
 */
#include "internal.h"

static void push_orphan(otm_node *node, otm_event *pr)
{
    otm__lock(node);
    pr->next = node->orphans;
    node->orphans = pr;
    otm__count(&node->norphans, 1);
    otm__unlock(node);
}

otm_event *otm__orphan_take(otm_node *node)
{
    if (otm__none(&node->norphans))
        return NULL;
    otm__lock(node);
    otm_event *pr = node->orphans;
    if (pr) {
        node->orphans = pr->next;
        otm__count(&node->norphans, -1);
    }
    otm__unlock(node);
    if (pr)
        pr->next = NULL;
    return pr;
}

int otm__orphan_return(otm_node *node, otm_event *pr)
{
    if (!otm_event_ended(pr)) {
        push_orphan(node, pr);
        return 0;
    }
    otm__event_free(node, pr);
    return 1;
}

int otm__orphans_live(otm_node *node)
{
    return !otm__none(&node->norphans);
}

/* Quiet for a period since its last move or the last answer to a probe. */
static int due(otm_node *node, const otm_event *ev)
{
    uint64_t period = otm__probe_period(node);
    uint64_t since = ev->alive_at > ev->last_move ? ev->alive_at : ev->last_move;
    return period && otm__waits_for_kernel(ev) && otm__now(node) - since >= period;
}

int otm__probe_begin(otm_node *node, otm_event *ev)
{
    if (ev->probe && !otm__waits_for_kernel(ev)) {
        /* Its reply came, or it failed or ended: the probe goes on alone. */
        push_orphan(node, ev->probe);
        ev->probe = NULL;
        return 1;
    }
    if (ev->probe || !due(node, ev))
        return 0;
    otm_op op = {.kind = OTM_KIND_PING, .rank = ev->rank};
    otm_status st;
    ev->probe = otm__origin_new(node, &op, &st);   /* NULL: next time */
    return ev->probe != NULL;
}

/* The worker is lost for the node: events to it fail at once from now on
 * (origin.c), so that neither the program's next calls nor the exit wait a
 * timeout each for it. Returns 1 the first time. */
static int lose(otm_node *node, int rank)
{
    otm__lock(node);
    int first = !node->lost[rank];
    node->lost[rank] = 1;
    otm__unlock(node);
    return first;
}

void otm__silent(otm_node *node, otm_event *ev)
{
    if (!node->lost)
        return;
    /* The worker has been silent for a timeout already: waiting another
     * for the sends it will never take only delays the end. */
    ev->last_move = otm__now(node) - node->cfg.timeout_ns;
    if (lose(node, ev->rank) && node->hooks.worker_lost)
        node->hooks.worker_lost(node->hooks.ctx, ev->rank, OTM_ERR_TIMEOUT);
}

void otm__overran(otm_node *node, const otm_event *ev)
{
    lose(node, ev->rank);
    if (node->hooks.region_timeout)
        node->hooks.region_timeout(node->hooks.ctx, ev->rank, ev->unit,
                                   ev->kind == OTM_KIND_EXECUTE ? ev->p.execute.kernel : 0);
}

/* An answer of any kind, a refusal too, came from a live worker; silence,
 * or MPI unable to reach it, means it is not. */
int otm__probe_settle(otm_node *node, otm_event *ev)
{
    otm_event *pr = ev->probe;
    otm_status st = pr->state == OTM_FAILED ? (otm_status)pr->status : OTM_OK;
    ev->probe = NULL;
    otm__event_free(node, pr);
    if (st == OTM_ERR_TIMEOUT || st == OTM_ERR_MPI) {
        otm__log(node, OTM_LOG_INFO, "rank %d did not answer a liveness probe within "
                 "%llu ms while event %llu waited for its kernel", ev->rank,
                 (unsigned long long)(otm__probe_period(node) / 1000000),
                 (unsigned long long)ev->id);
        if (lose(node, ev->rank) && node->hooks.worker_lost)
            node->hooks.worker_lost(node->hooks.ctx, ev->rank, OTM_ERR_UNRESPONSIVE);
        return otm__event_fail(node, ev, OTM_ERR_UNRESPONSIVE);
    }
    ev->alive_at = otm__now(node);
    return 1;
}
