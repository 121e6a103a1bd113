/*
 * host.c - the host's queues (FIFOs of events run in order, one per
 * __tgt_async_info), the exit protocol that ends the job, and the election
 * of the one host thread that runs it.
 */
#include <string.h>

#include "internal.h"

void otm_queue_init(otm_node *node, otm_queue *q)
{
    memset(q, 0, sizeof *q);
    otm__lock(node);
    q->next = node->queues;
    q->prev = &node->queues;
    if (node->queues)
        node->queues->prev = &q->next;
    node->queues = q;
    otm__unlock(node);
}

void otm_queue_fini(otm_node *node, otm_queue *q)
{
    otm__lock(node);
    *q->prev = q->next;
    if (q->next)
        q->next->prev = q->prev;
    otm__unlock(node);
}

static otm_status check_op(const otm_node *node, const otm_op *op)
{
    int workers_ok = op->rank >= 1 && op->rank < node->size;
    switch (op->kind) {
    case OTM_KIND_SYNC: return OTM_OK;
    case OTM_KIND_EXCHANGE:
        if (op->peer < 1 || op->peer >= node->size)
            return OTM_ERR_INVALID;
        break;
    case OTM_KIND_SUBMIT:
    case OTM_KIND_RETRIEVE:
    case OTM_KIND_LOAD:
        if (op->size && !op->host)
            return OTM_ERR_INVALID;
        break;
    case OTM_KIND_EXECUTE:
        if (op->nargs > OTM_MAX_ARGS || (op->nargs && !op->args))
            return OTM_ERR_INVALID;
        break;
    case OTM_KIND_ALLOC:
    case OTM_KIND_DELETE:
    case OTM_KIND_UNLOAD:
    case OTM_KIND_EXIT: break;
    default: return OTM_ERR_INVALID;
    }
    if (op->kind == OTM_KIND_LOAD && op->image.send && (!op->image.bytes || !op->image.size))
        return OTM_ERR_INVALID;
    return workers_ok ? OTM_OK : OTM_ERR_INVALID;
}

otm_status otm_host_enqueue(otm_node *node, otm_queue *q, const otm_op *op,
                            otm_event **out)
{
    otm_status st;
    if (node->life != OTM_LIFE_RUNNING)
        return OTM_ERR_SHUTDOWN;
    if (node->rank != 0 || op->kind == OTM_KIND_EXIT || check_op(node, op))
        return OTM_ERR_INVALID;
    otm_event *ev = otm__origin_new(node, op, &st);
    if (!ev)
        return st;
    otm__lock(node);
    if (op->target)
        op->target->refs++;
    if (out)
        ev->refs++;
    otm__unlock(node);
    if (q->tail)
        q->tail->next = ev;
    else
        q->head = ev;
    q->tail = ev;
    q->length++;
    if (out)
        *out = ev;
    return OTM_OK;
}

/* How many events behind the head of a queue may run ahead of it. */
#define CHAIN_MAX 8

static int chain_kind(int kind)
{
    return kind == OTM_KIND_SUBMIT || kind == OTM_KIND_EXECUTE || kind == OTM_KIND_RETRIEVE;
}

/* Whether `next` may start while `prev`, the event before it in its queue,
 * still runs: both move data or run a kernel on the same worker, and prev
 * announced itself (otm/event.h). Then the worker keeps their order, and
 * their round trips overlap. */
static int chainable(const otm_event *prev, const otm_event *next)
{
    return chain_kind(prev->kind) && chain_kind(next->kind) && next->rank == prev->rank &&
           prev->tag >= OTM_TAG_FIRST && !otm_event_ended(prev) &&
           (prev->step == OTM_AT_PAYLOAD || prev->step == OTM_AT_REPLY) &&
           next->state == OTM_CREATED && !next->armed;
}

/* Progresses the events chained behind the head `ev`, and chains the next
 * one when it may. */
static int progress_chained(otm_node *node, otm_event *ev)
{
    int moved = 0;
    otm_event *prev = ev, *next = ev->next;
    for (int n = 0; next && n < CHAIN_MAX; n++, prev = next, next = next->next) {
        if (otm_event_ended(next))
            continue;
        if (!next->after) {
            if (!chainable(prev, next))
                break;
            otm__lock(node);
            prev->refs++;
            node->stats.chained++;
            otm__unlock(node);
            next->after = prev;
        }
        moved |= otm_event_progress(node, next);
    }
    return moved;
}

int otm_queue_streaming(const otm_queue *q)
{
    /* The head, and the events that may be chained behind it. */
    const otm_event *ev = q->head;
    for (int n = 0; ev && n <= CHAIN_MAX; n++, ev = ev->next)
        if (otm_event_streaming(ev))
            return 1;
    return 0;
}

int otm_queue_progress(otm_node *node, otm_queue *q)
{
    int moved = 0;
    otm_event *ev;
    while ((ev = q->head) != NULL) {
        if (!otm_event_ended(ev))
            moved |= otm_event_progress(node, ev);
        if (!otm_event_ended(ev)) {
            moved |= progress_chained(node, ev);
            break;
        }
        if (q->status == OTM_OK && ev->state == OTM_FAILED && !ev->said) {
            q->status = ev->status;
            q->failed_rank = ev->rank, q->failed_unit = ev->unit;
            q->failed_kind = (uint8_t)ev->kind, q->failed_id = ev->id;
        }
        q->head = ev->next;
        if (!q->head)
            q->tail = NULL;
        q->length--;
        ev->next = NULL;
        otm_event_unref(node, ev);
        moved = 1;
    }
    return moved;
}

otm_event *otm_queue_last(otm_node *node, otm_queue *q)
{
    otm__lock(node);
    otm_event *ev = q->tail;
    if (ev)
        ev->refs++;
    otm__unlock(node);
    return ev;
}

void otm_host_exit_begin(otm_node *node)
{
    if (node->life == OTM_LIFE_RUNNING)
        node->life = OTM_LIFE_EXITING;
}

static int start_exit(otm_node *node)
{
    int workers = node->size - 1;
    otm_status st;
    node->exit_events = otm__alloc(node, sizeof(otm_event *) * (size_t)(workers + 1));
    if (!node->exit_events)
        return 0;
    memset(node->exit_events, 0, sizeof(otm_event *) * (size_t)(workers + 1));
    for (int w = 0; w < workers; w++) {
        otm_op op = {.kind = OTM_KIND_EXIT, .rank = w + 1};
        node->exit_events[w] = otm__origin_new(node, &op, &st);
        if (!node->exit_events[w])
            node->exit_failures++;   /* that worker never hears EXIT */
    }
    return 1;
}

int otm_host_exit_progress(otm_node *node)
{
    int moved = 0, pending = 0;
    if (node->life != OTM_LIFE_EXITING)
        return 0;
    if (!node->exit_events) {
        for (otm_queue *q = node->queues; q; q = q->next) {
            moved |= otm_queue_progress(node, q);
            pending |= !otm_queue_empty(q);
        }
        /* Probes still running would outlive the workers' exit. */
        moved |= otm__orphans_step(node);
        pending |= otm__orphans_live(node);
        if (pending || !start_exit(node))
            return moved;
    }
    for (otm_event **e = node->exit_events; e < node->exit_events + node->size - 1; e++) {
        if (!*e || otm_event_ended(*e))
            continue;
        moved |= otm_event_progress(node, *e);
        pending |= !otm_event_ended(*e);
    }
    if (pending)
        return moved;
    for (otm_event **e = node->exit_events; e < node->exit_events + node->size - 1; e++) {
        if (*e) {
            node->exit_failures += (*e)->state == OTM_FAILED;
            otm__event_free(node, *e);
        }
    }
    otm__free(node, node->exit_events);
    node->exit_events = NULL;
    node->life = OTM_LIFE_DONE;
    return 1;
}

/* The election is a Dekker pair: a thread entering adds itself, then
 * looks for a claim; the claimant claims, then counts who is inside. In
 * one total order (sequentially consistent) either the claimant sees the
 * entering thread, or the entering thread sees the claim and backs out. */
otm_status otm_host_enter(otm_node *node)
{
    __atomic_add_fetch(&node->inside, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&node->end_claimed, __ATOMIC_SEQ_CST))
        return OTM_OK;
    __atomic_sub_fetch(&node->inside, 1, __ATOMIC_SEQ_CST);
    return OTM_ERR_SHUTDOWN;
}

void otm_host_leave(otm_node *node)
{
    __atomic_sub_fetch(&node->inside, 1, __ATOMIC_SEQ_CST);
}

int otm_host_end_claim(otm_node *node)
{
    int none = 0;
    return __atomic_compare_exchange_n(&node->end_claimed, &none, 1, 0, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}

int otm_host_end_alone(const otm_node *node)
{
    return __atomic_load_n(&node->end_claimed, __ATOMIC_SEQ_CST) &&
           __atomic_load_n(&node->inside, __ATOMIC_SEQ_CST) == 0;
}
