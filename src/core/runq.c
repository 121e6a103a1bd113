/*
 * runq.c - a worker's two run queues: data events, which the gate runs,
 * and kernel events, which handler threads claim one at a time. Every
 * function takes the node's lock (the gate and the handlers run on
 * different threads), except to find a list empty (otm__none).
 */
#include "internal.h"

uint64_t otm__runq_live_id(otm_node *node, int comm, int tag, int rank)
{
    uint64_t id = 0;
    otm__lock(node);
    for (otm_event *ev = node->all; ev && !id; ev = ev->all_next)
        if (ev->side == OTM_DEST && !otm_event_ended(ev) && ev->comm == comm &&
            ev->tag == tag && ev->rank == rank)
            id = ev->id;
    otm__unlock(node);
    return id;
}

/* Whether an event is past its run step: a kernel event's kernel ran (it
 * only moves its reply and output, or its failure), a SUBMIT's data
 * landed. Read from threads that do not own the event: the flag and the
 * state are atomic. */
static int ran(const otm_event *ev)
{
    return __atomic_load_n(&ev->past_run, __ATOMIC_ACQUIRE) || otm_event_ended(ev);
}

/* Whether the event `id` still holds back one chained behind it: what it
 * does to device memory is not done yet (a SUBMIT's data has not all
 * landed, an EXECUTE's kernel has not run, a RETRIEVE still reads). The
 * lock is held. */
static int holds_back(otm_node *node, uint64_t id)
{
    for (otm_event *ev = node->all; ev; ev = ev->all_next) {
        if (ev->id != id)
            continue;
        if (ev->kind == OTM_KIND_EXECUTE || ev->kind == OTM_KIND_SUBMIT)
            return !ran(ev);
        return !otm_event_ended(ev);
    }
    return 0;
}

/* A chained event that must still wait; the lock is held. */
static int held(otm_node *node, const otm_event *ev)
{
    return ev->after_id && holds_back(node, ev->after_id);
}

int otm__runq_done(otm_node *node, uint64_t id)
{
    otm__lock(node);
    int done = !holds_back(node, id);
    otm__unlock(node);
    return done;
}

int otm__runq_kernels_idle(otm_node *node)
{
    return otm__none(&node->nkern);
}

int otm_node_kernels_waiting(otm_node *node)
{
    if (otm__none(&node->nkern))
        return 0;
    otm__lock(node);
    int waiting = 0;
    for (otm_event *ev = node->kern_head; ev && !waiting; ev = ev->next)
        waiting = !ev->claimed && !held(node, ev);
    otm__unlock(node);
    return waiting;
}

uint64_t otm_node_kernel_next(otm_node *node)
{
    if (otm__none(&node->nkern))
        return 0;
    otm__lock(node);
    uint64_t kernel = 0;
    for (otm_event *ev = node->kern_head; ev && !kernel; ev = ev->next)
        if (!ev->claimed && !ran(ev) && !held(node, ev))
            kernel = ev->p.execute.kernel;
    otm__unlock(node);
    return kernel;
}

int otm_node_kernels_to_run(otm_node *node)
{
    return otm_node_kernel_next(node) != 0;
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
    if (otm__none(&node->ndata))
        return 0;
    otm__lock(node);
    for (otm_event *ev = node->data_head; ev && !streaming; ev = ev->next)
        streaming = otm_event_streaming(ev);
    otm__unlock(node);
    return streaming;
}

static void push(otm_event **head, otm_event **tail, size_t *n, otm_event *ev)
{
    ev->next = NULL;
    if (*tail)
        (*tail)->next = ev;
    else
        *head = ev;
    *tail = ev;
    otm__count(n, 1);
}

void otm__runq_push(otm_node *node, otm_event *ev)
{
    otm__lock(node);
    if (ev->kind == OTM_KIND_EXECUTE && ev->status == OTM_OK)
        push(&node->kern_head, &node->kern_tail, &node->nkern, ev);
    else
        push(&node->data_head, &node->data_tail, &node->ndata, ev);
    otm__unlock(node);
}

otm_event *otm__runq_claim_kernel(otm_node *node, int ran_only)
{
    if (otm__none(&node->nkern))
        return NULL;
    otm__lock(node);
    otm_event *ev = node->kern_head;
    while (ev && (ev->claimed || (ran_only && !ran(ev)) || held(node, ev)))
        ev = ev->next;
    if (ev)
        ev->claimed = 1;
    otm__unlock(node);
    return ev;
}

otm_event *otm__runq_data_first(otm_node *node)
{
    if (otm__none(&node->ndata))
        return NULL;
    otm__lock(node);
    otm_event *ev = node->data_head;
    otm__unlock(node);
    return ev;
}

otm_event *otm__runq_settle_data(otm_node *node, otm_event **prev, otm_event *ev)
{
    otm__lock(node);
    otm_event *next = ev->next;
    if (otm_event_ended(ev)) {
        if (*prev)
            (*prev)->next = next;
        else
            node->data_head = next;
        if (node->data_tail == ev)
            node->data_tail = *prev;
        otm__count(&node->ndata, -1);
    } else {
        *prev = ev;
    }
    otm__unlock(node);
    return next;
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
        otm__count(&node->nkern, -1);
    }
    otm__unlock(node);
}
