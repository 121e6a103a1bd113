/*
 * event.c - an event's life: creation, references, the end (FINISHED or
 * FAILED, and what happens to its tag), failing and the cancellation that
 * follows, and the graveyard of events whose sends were detached.
 */
#include <string.h>

#include "internal.h"

otm_event *otm__event_new(otm_node *node, otm_kind kind, otm_side side)
{
    otm_event *ev = otm__alloc(node, sizeof *ev);
    if (!ev)
        return NULL;
    memset(ev, 0, sizeof *ev);
    otm__slots_init(ev);
    ev->kind = (uint16_t)kind;
    ev->side = (uint8_t)side;
    ev->tag = ev->comm = -1;
    ev->refs = 1;
    otm__lock(node);
    ev->id = ++node->next_id;
    ev->all_next = node->all;
    ev->all_prev = &node->all;
    if (node->all)
        node->all->all_prev = &ev->all_next;
    node->all = ev;
    node->live++;
    otm__unlock(node);
    return ev;
}

static void release_event(otm_node *node, otm_event *ev)
{
    otm__free(node, ev->msg);
    otm__free(node, ev->reply);
    otm__free(node, ev->scratch);
    otm__free(node, ev);
}

void otm__event_free(otm_node *node, otm_event *ev)
{
    otm__lock(node);
    *ev->all_prev = ev->all_next;
    if (ev->all_next)
        ev->all_next->all_prev = ev->all_prev;
    node->live--;
    if (ev->kind < OTM_KIND_END)
        node->stats.events[ev->kind]++;
    node->stats.failed += ev->state == OTM_FAILED;
    otm__unlock(node);
    if (ev->target)
        otm_event_unref(node, ev->target);
    if (ev->after)
        otm_event_unref(node, ev->after);
    if (ev->abandoned) {
        /* A detached send may still read its buffers until MPI is
         * finalised: the event waits in the graveyard for otm_node_release. */
        node->stats.abandoned++;
        otm__log(node, OTM_LOG_WARN, "event %llu abandoned its sends",
                 (unsigned long long)ev->id);
        otm__lock(node);
        ev->next = node->graveyard;
        node->graveyard = ev;
        otm__unlock(node);
        return;
    }
    release_event(node, ev);
}

void otm_event_unref(otm_node *node, otm_event *ev)
{
    otm__lock(node);
    int left = --ev->refs;
    otm__unlock(node);
    if (left == 0)
        otm__event_free(node, ev);
}

/* Tests a slot that must end cleanly. Returns 1 when it is free now, 0 while
 * pending; on error starts failing the event and returns -1. */
void otm__event_bury(otm_node *node)
{
    while (node->graveyard) {
        otm_event *ev = node->graveyard;
        node->graveyard = ev->next;
        release_event(node, ev);
    }
}

int otm__await_slot(otm_node *node, otm_event *ev, int s, int *count)
{
    if (!otm__slot_active(ev, s))
        return 1;
    switch (otm__slot_test(ev, s, count)) {
    case OTM__T_PENDING: return 0;
    case OTM__T_DONE: return 1;
    default: otm__event_fail(node, ev, OTM_ERR_MPI); return -1;
    }
}

void otm__set_state(otm_event *ev, otm_state st)
{
    /* Our own invariant, checked by the simulator on every step too. */
    if (st < ev->state)
        __builtin_trap();
    /* Atomic: a worker's gate reads the state of every live event (is a
     * key still in use?) while a handler thread moves a kernel event it
     * owns; see otm_event_ended. */
    __atomic_store_n(&ev->state, (uint8_t)st, __ATOMIC_RELEASE);
}

/* The event's tag can be handed out again only if both sides provably
 * consumed every message on it; otherwise a late message could meet the
 * next event on that tag, so it is retired. */
static void drop_tag(otm_node *node, otm_event *ev, int clean)
{
    if (ev->side != OTM_ORIGIN || ev->tag < OTM_TAG_FIRST)
        return;
    otm__lock(node);
    if (clean) {
        otm_tags_release(&node->tags[ev->comm], ev->tag);
    } else {
        otm_tags_retire(&node->tags[ev->comm], ev->tag);
        node->stats.retired_tags++;
    }
    otm__unlock(node);
    ev->tag = -1;
}

/* Ends an event whose requests are all complete. */
int otm__finish(otm_node *node, otm_event *ev, otm_status st, int clean)
{
    if (ev->status == OTM_OK)
        ev->status = st;
    /* A peer that could not parse the event may not have consumed what
     * followed it. */
    if (ev->status == OTM_ERR_BAD_KIND || ev->status == OTM_ERR_BAD_VERSION ||
        ev->status == OTM_ERR_BAD_MESSAGE)
        ev->unclean = 1;
    otm__set_state(ev, ev->status == OTM_OK ? OTM_FINISHED : OTM_FAILED);
    ev->step = OTM_AT_END;
    /* Before the tag goes, so that the trace can name it. */
    otm__trace_at(node, ev, OTM_TRACE_END);
    drop_tag(node, ev, clean && !ev->unclean);
    return 1;
}

int otm__event_fail(otm_node *node, otm_event *ev, otm_status st)
{
    if (ev->status == OTM_OK)
        ev->status = st;
    ev->step = OTM_AT_CANCEL;
    __atomic_store_n(&ev->past_run, 1, __ATOMIC_RELEASE);
    if (ev->state < OTM_WAITING)
        otm__set_state(ev, OTM_WAITING);
    ev->last_move = otm__now(node);
    otm__slots_cancel(ev);
    return 1;
}

/* Waits for cancelled receives and in-flight sends to complete. A send to a
 * peer that never receives could pin the event forever, so after another
 * timeout period the sends are detached and their buffers abandoned. */
int otm__cancel_progress(otm_node *node, otm_event *ev)
{
    int moved = 0;
    int late = node->cfg.timeout_ns &&
               otm__now(node) - ev->last_move >= node->cfg.timeout_ns;
    for (int s = 0; s < OTM_SLOTS; s++)
        moved |= otm__slot_settle(ev, s, late);
    if (!otm__any_active(ev))
        return otm__finish(node, ev, ev->status, 0);
    return moved;
}

const char *otm_kind_name(int kind)
{
    static const char *const names[] = {
        "?", "ALLOC", "DELETE", "SUBMIT", "RETRIEVE", "EXCHANGE",
        "EXECUTE", "SYNC", "EXIT", "LOAD", "UNLOAD", "PING"};
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
