/*
 * runq.c - a worker's two run queues: data events, which the gate runs,
 * and kernel events, which handler threads claim one at a time. Every
 * function takes the node's lock: the gate and the handlers run on
 * different threads.
 */
#include "internal.h"

int otm__runq_key_live(otm_node *node, int comm, int tag, int rank)
{
    int found = 0;
    otm__lock(node);
    for (otm_event *ev = node->all; ev && !found; ev = ev->all_next)
        found = ev->side == OTM_DEST && !otm_event_ended(ev) &&
                ev->comm == comm && ev->tag == tag && ev->rank == rank;
    otm__unlock(node);
    return found;
}

int otm__runq_kernels_idle(otm_node *node)
{
    otm__lock(node);
    int idle = node->kern_head == NULL;
    otm__unlock(node);
    return idle;
}

int otm_node_kernels_waiting(otm_node *node)
{
    otm__lock(node);
    int waiting = 0;
    for (otm_event *ev = node->kern_head; ev && !waiting; ev = ev->next)
        waiting = !ev->claimed;
    otm__unlock(node);
    return waiting;
}

/* Whether a kernel event's kernel already ran: past the run step, it only
 * moves its reply and output (or its failure). */
static int ran(const otm_event *ev)
{
    return ev->step > OTM_AT_RUN || otm_event_ended(ev);
}

int otm_node_kernels_to_run(otm_node *node)
{
    otm__lock(node);
    int to_run = 0;
    for (otm_event *ev = node->kern_head; ev && !to_run; ev = ev->next)
        to_run = !ev->claimed && !ran(ev);
    otm__unlock(node);
    return to_run;
}

int otm__runq_drained(otm_node *node, const otm_event *ev)
{
    otm__lock(node);
    int drained = node->data_head == ev && node->data_tail == ev &&
                  node->kern_head == NULL;
    otm__unlock(node);
    return drained;
}

int otm_node_streaming(otm_node *node)
{
    int streaming = 0;
    otm__lock(node);
    for (otm_event *ev = node->data_head; ev && !streaming; ev = ev->next)
        streaming = otm_event_streaming(ev);
    otm__unlock(node);
    return streaming;
}

static void push(otm_event **head, otm_event **tail, otm_event *ev)
{
    ev->next = NULL;
    if (*tail)
        (*tail)->next = ev;
    else
        *head = ev;
    *tail = ev;
}

void otm__runq_push(otm_node *node, otm_event *ev)
{
    otm__lock(node);
    if (ev->kind == OTM_KIND_EXECUTE && ev->status == OTM_OK)
        push(&node->kern_head, &node->kern_tail, ev);
    else
        push(&node->data_head, &node->data_tail, ev);
    otm__unlock(node);
}

otm_event *otm__runq_claim_kernel(otm_node *node, int ran_only)
{
    otm__lock(node);
    otm_event *ev = node->kern_head;
    while (ev && (ev->claimed || (ran_only && !ran(ev))))
        ev = ev->next;
    if (ev)
        ev->claimed = 1;
    otm__unlock(node);
    return ev;
}

/* Unlinks an ended kernel event, or gives an unfinished one back. */
void otm__runq_settle_kernel(otm_node *node, otm_event *ev)
{
    otm__lock(node);
    ev->claimed = 0;
    if (otm_event_ended(ev)) {
        otm_event **p = &node->kern_head, *prev = NULL;
        while (*p != ev) {
            prev = *p;
            p = &(*p)->next;
        }
        *p = ev->next;
        if (node->kern_tail == ev)
            node->kern_tail = prev;
    }
    otm__unlock(node);
}
