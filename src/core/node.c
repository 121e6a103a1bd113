/*
 * node.c - a rank's instance: set-up, tear-down, the host's queues and exit,
 * the worker's gate and handler.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A notification larger than this is malformed whatever the host's
 * configuration: the largest inline payload plus the header. */
#define OTM_NOTIFY_MAX (OTM_WIRE_NOTIFY_SIZE + (1u << 20) + 16u * OTM_MAX_ARGS)

/* ---- hooks ------------------------------------------------------------------ */

void *otm_alloc(otm_node *node, size_t size)
{
    return node->hooks.alloc ? node->hooks.alloc(node->hooks.ctx, size)
                             : malloc(size);
}

void otm_free(otm_node *node, void *p)
{
    if (!p)
        return;
    if (node->hooks.release)
        node->hooks.release(node->hooks.ctx, p);
    else
        free(p);
}

uint64_t otm_now(otm_node *node)
{
    return node->hooks.now ? node->hooks.now(node->hooks.ctx) : 0;
}

void otm_lock(otm_node *node)
{
    if (node->hooks.lock)
        node->hooks.lock(node->hooks.ctx);
}

void otm_unlock(otm_node *node)
{
    if (node->hooks.unlock)
        node->hooks.unlock(node->hooks.ctx);
}

void otm_log(otm_node *node, int level, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    if (!node->hooks.log)
        return;
    int n = snprintf(line, sizeof line, "omptarget-mpi[%d]: ", node->rank);
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    node->hooks.log(node->hooks.ctx, level, line);
}

/* ---- events ---------------------------------------------------------------- */

otm_event *otm_event_new(otm_node *node, otm_kind kind, otm_side side)
{
    otm_event *ev = otm_alloc(node, sizeof *ev);
    if (!ev)
        return NULL;
    memset(ev, 0, sizeof *ev);
    for (int s = 0; s < OTM_SLOTS; s++)
        ev->req[s] = MPI_REQUEST_NULL;
    ev->kind = (uint16_t)kind;
    ev->side = (uint8_t)side;
    ev->tag = ev->comm = -1;
    ev->refs = 1;
    otm_lock(node);
    ev->id = ++node->next_id;
    ev->all_next = node->all;
    ev->all_prev = &node->all;
    if (node->all)
        node->all->all_prev = &ev->all_next;
    node->all = ev;
    node->live++;
    otm_unlock(node);
    return ev;
}

static void release_event(otm_node *node, otm_event *ev)
{
    otm_free(node, ev->msg);
    otm_free(node, ev->reply);
    otm_free(node, ev->scratch);
    otm_free(node, ev);
}

void otm_event_free(otm_node *node, otm_event *ev)
{
    otm_lock(node);
    *ev->all_prev = ev->all_next;
    if (ev->all_next)
        ev->all_next->all_prev = ev->all_prev;
    node->live--;
    if (ev->kind < OTM_KIND_END)
        node->stats.events[ev->kind]++;
    node->stats.failed += ev->state == OTM_FAILED;
    otm_unlock(node);
    if (ev->target)
        otm_event_unref(node, ev->target);
    if (ev->abandoned) {
        /* A detached send may still read its buffers until MPI is
         * finalised: the event waits in the graveyard for otm_node_release. */
        node->stats.abandoned++;
        otm_log(node, OTM_LOG_WARN, "event %llu abandoned its sends",
                (unsigned long long)ev->id);
        otm_lock(node);
        ev->next = node->graveyard;
        node->graveyard = ev;
        otm_unlock(node);
        return;
    }
    release_event(node, ev);
}

void otm_node_release(otm_node *node)
{
    while (node->graveyard) {
        otm_event *ev = node->graveyard;
        node->graveyard = ev->next;
        release_event(node, ev);
    }
}

void otm_event_unref(otm_node *node, otm_event *ev)
{
    otm_lock(node);
    int left = --ev->refs;
    otm_unlock(node);
    if (left == 0)
        otm_event_free(node, ev);
}

/* ---- set-up and tear-down ----------------------------------------------------- */

/* Handles are ints in MPICH and pointers in Open MPI, so they are only
 * assigned and compared with ==, never with numbers. A zeroed node holds
 * the handle 0 (NULL in Open MPI), which names no object in either ABI
 * (MPICH encodes a kind in the top bits of every valid handle), so it is
 * treated as the null handle: otm_node_fini is safe on a zeroed node. */
static int comm_held(MPI_Comm c)
{
    return c != MPI_COMM_NULL && c != (MPI_Comm)0;
}

static int request_held(MPI_Request r)
{
    return r != MPI_REQUEST_NULL && r != (MPI_Request)0;
}

static otm_status dup_comm(MPI_Comm *out)
{
    if (MPI_Comm_dup(MPI_COMM_WORLD, out) != MPI_SUCCESS) {
        *out = MPI_COMM_NULL;
        return OTM_ERR_MPI;
    }
    if (MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN) != MPI_SUCCESS)
        return OTM_ERR_MPI;
    return OTM_OK;
}

static otm_status query_world(otm_node *node)
{
    int *ub = NULL, flag = 0;
    if (MPI_Comm_rank(MPI_COMM_WORLD, &node->rank) != MPI_SUCCESS ||
        MPI_Comm_size(MPI_COMM_WORLD, &node->size) != MPI_SUCCESS ||
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag) != MPI_SUCCESS)
        return OTM_ERR_MPI;
    /* MPI promises at least 32767. */
    node->tag_ub = flag && ub ? *ub : 32767;
    return node->tag_ub > OTM_TAG_FIRST ? OTM_OK : OTM_ERR_MPI;
}

static otm_status make_comms(otm_node *node)
{
    node->control = MPI_COMM_NULL;
    node->comms = otm_alloc(node, sizeof *node->comms * (size_t)node->cfg.ncomms);
    if (!node->comms)
        return OTM_ERR_NOMEM;
    for (int i = 0; i < node->cfg.ncomms; i++)
        node->comms[i] = MPI_COMM_NULL;
    otm_status st = dup_comm(&node->control);
    for (int i = 0; i < node->cfg.ncomms && !st; i++)
        st = dup_comm(&node->comms[i]);
    return st;
}

static otm_status make_tags(otm_node *node)
{
    int last = node->tag_ub;
    if (node->cfg.tag_space < last - OTM_TAG_FIRST + 1)
        last = OTM_TAG_FIRST + node->cfg.tag_space - 1;
    node->tags = otm_alloc(node, sizeof *node->tags * (size_t)node->cfg.ncomms);
    if (!node->tags)
        return OTM_ERR_NOMEM;
    memset(node->tags, 0, sizeof *node->tags * (size_t)node->cfg.ncomms);
    for (int i = 0; i < node->cfg.ncomms; i++) {
        otm_status st = otm_tags_init(&node->tags[i], OTM_TAG_FIRST, last,
                                      node->hooks.alloc, node->hooks.ctx);
        if (st)
            return st;
    }
    return OTM_OK;
}

otm_status otm_node_init(otm_node *node, const otm_config *cfg,
                         const otm_hooks *hooks)
{
    memset(node, 0, sizeof *node);
    if (otm_config_check(cfg))
        return OTM_ERR_INVALID;
    node->cfg = *cfg;
    node->hooks = *hooks;
    node->gate_req = MPI_REQUEST_NULL;
    otm_registry_init(&node->registry, hooks->alloc, hooks->release, hooks->ctx);
    otm_status st = query_world(node);
    if (st == OTM_OK)
        st = make_comms(node);
    if (st == OTM_OK && node->rank == 0)
        st = make_tags(node);
    /* The host discards too: the output of a region it has no memory for. */
    if (st == OTM_OK) {
        node->sink = otm_alloc(node, OTM_SCRATCH_MAX);
        st = node->sink ? OTM_OK : OTM_ERR_NOMEM;
    }
    if (st) {
        otm_node_fini(node);
        memset(node, 0, sizeof *node);
    }
    return st;
}

static void free_comms(otm_node *node)
{
    if (node->comms) {
        for (int i = 0; i < node->cfg.ncomms; i++)
            if (comm_held(node->comms[i]))
                MPI_Comm_free(&node->comms[i]);
        otm_free(node, node->comms);
        node->comms = NULL;
    }
    if (comm_held(node->control))
        MPI_Comm_free(&node->control);
}

static void free_worker(otm_node *node)
{
    for (size_t i = 0; i < node->registry.count; i++)
        if (node->registry.items[i].kind == OTM_REGION_ALLOC)
            otm_free(node, (void *)node->registry.items[i].base);
    otm_registry_fini(&node->registry);
    for (size_t i = 0; i < node->nimages; i++)
        otm_free(node, node->images[i].entries);
    otm_free(node, node->images);
    otm_free(node, node->kernels);
    otm_free(node, node->sink);
    if (request_held(node->gate_req))
        MPI_Request_free(&node->gate_req);
    otm_free(node, node->gate_buf);
    /* A second otm_node_fini (the plugin's, then its owner's) finds nothing. */
    node->images = NULL;
    node->nimages = node->images_cap = 0;
    node->kernels = NULL;
    node->nkernels = node->kernels_cap = 0;
    node->sink = node->gate_buf = NULL;
}

void otm_node_fini(otm_node *node)
{
    while (node->all) {
        otm_event *ev = node->all;
        otm_event_abandon(node, ev);
        ev->target = NULL;   /* freed by this loop on its own */
        otm_event_free(node, ev);
    }
    free_worker(node);
    if (node->tags) {
        for (int i = 0; i < node->cfg.ncomms; i++)
            otm_tags_fini(&node->tags[i], node->hooks.release, node->hooks.ctx);
        otm_free(node, node->tags);
        node->tags = NULL;
    }
    otm_free(node, node->exit_events);
    node->exit_events = NULL;
    free_comms(node);
}

/* ---- host: queues -------------------------------------------------------------- */

void otm_queue_init(otm_node *node, otm_queue *q)
{
    memset(q, 0, sizeof *q);
    otm_lock(node);
    q->next = node->queues;
    q->prev = &node->queues;
    if (node->queues)
        node->queues->prev = &q->next;
    node->queues = q;
    otm_unlock(node);
}

void otm_queue_fini(otm_node *node, otm_queue *q)
{
    otm_lock(node);
    *q->prev = q->next;
    if (q->next)
        q->next->prev = q->prev;
    otm_unlock(node);
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

static otm_event *new_origin(otm_node *node, const otm_op *op, otm_status *st)
{
    otm_event *ev = otm_event_new(node, op->kind, OTM_ORIGIN);
    *st = ev ? otm_origin_init(node, ev, op) : OTM_ERR_NOMEM;
    if (ev && *st) {
        ev->target = NULL;   /* the caller's reference was not taken yet */
        otm_event_free(node, ev);
        return NULL;
    }
    if (ev)
        otm_trace_at(node, ev, OTM_TRACE_BEGIN);
    return ev;
}

otm_status otm_host_enqueue(otm_node *node, otm_queue *q, const otm_op *op,
                            otm_event **out)
{
    otm_status st;
    if (node->life != OTM_LIFE_RUNNING)
        return OTM_ERR_SHUTDOWN;
    if (node->rank != 0 || op->kind == OTM_KIND_EXIT || check_op(node, op))
        return OTM_ERR_INVALID;
    otm_event *ev = new_origin(node, op, &st);
    if (!ev)
        return st;
    otm_lock(node);
    if (op->target)
        op->target->refs++;
    if (out)
        ev->refs++;
    otm_unlock(node);
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

int otm_queue_progress(otm_node *node, otm_queue *q)
{
    int moved = 0;
    otm_event *ev;
    while ((ev = q->head) != NULL) {
        if (!otm_event_ended(ev))
            moved |= otm_event_progress(node, ev);
        if (!otm_event_ended(ev))
            break;
        if (q->status == OTM_OK && ev->state == OTM_FAILED)
            q->status = ev->status;
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

otm_status otm_queue_wait(otm_node *node, otm_queue *q)
{
    while (!otm_queue_empty(q)) {
        if (!otm_queue_progress(node, q) && node->hooks.idle)
            node->hooks.idle(node->hooks.ctx);
    }
    otm_status st = (otm_status)q->status;
    q->status = OTM_OK;
    return st;
}

otm_event *otm_queue_last(otm_node *node, otm_queue *q)
{
    otm_lock(node);
    otm_event *ev = q->tail;
    if (ev)
        ev->refs++;
    otm_unlock(node);
    return ev;
}

/* ---- host: exit ---------------------------------------------------------------- */

void otm_host_exit_begin(otm_node *node)
{
    if (node->life == OTM_LIFE_RUNNING)
        node->life = OTM_LIFE_EXITING;
}

static int start_exit(otm_node *node)
{
    int workers = node->size - 1;
    otm_status st;
    node->exit_events = otm_alloc(node, sizeof(otm_event *) * (size_t)(workers + 1));
    if (!node->exit_events)
        return 0;
    memset(node->exit_events, 0, sizeof(otm_event *) * (size_t)(workers + 1));
    for (int w = 0; w < workers; w++) {
        otm_op op = {.kind = OTM_KIND_EXIT, .rank = w + 1};
        node->exit_events[w] = new_origin(node, &op, &st);
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
            otm_event_free(node, *e);
        }
    }
    otm_free(node, node->exit_events);
    node->exit_events = NULL;
    node->life = OTM_LIFE_DONE;
    return 1;
}

/* ---- worker: registry of entries ------------------------------------------------ */

int otm_node_has_kernel(const otm_node *node, uint64_t kernel)
{
    size_t lo = 0, hi = node->nkernels;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (node->kernels[mid] == kernel)
            return 1;
        if (node->kernels[mid] < kernel)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static otm_status add_kernel(otm_node *node, uint64_t k)
{
    if (otm_node_has_kernel(node, k))
        return OTM_OK;
    if (node->nkernels == node->kernels_cap) {
        size_t cap = node->kernels_cap ? 2 * node->kernels_cap : 16;
        uint64_t *p = otm_alloc(node, cap * sizeof *p);
        if (!p)
            return OTM_ERR_NOMEM;
        if (node->nkernels)
            memcpy(p, node->kernels, node->nkernels * sizeof *p);
        otm_free(node, node->kernels);
        node->kernels = p;
        node->kernels_cap = cap;
    }
    size_t i = node->nkernels;
    while (i > 0 && node->kernels[i - 1] > k) {
        node->kernels[i] = node->kernels[i - 1];
        i--;
    }
    node->kernels[i] = k;
    node->nkernels++;
    return OTM_OK;
}

static void drop_kernel(otm_node *node, uint64_t k)
{
    for (size_t i = 0; i < node->nkernels; i++) {
        if (node->kernels[i] != k)
            continue;
        memmove(&node->kernels[i], &node->kernels[i + 1],
                (node->nkernels - i - 1) * sizeof *node->kernels);
        node->nkernels--;
        return;
    }
}

static otm_status add_entries(otm_node *node, const otm_entry *e, uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
        otm_status st = OTM_OK;
        if (e[i].size == 0)
            st = add_kernel(node, e[i].addr);
        else if (otm_registry_check(&node->registry, (uintptr_t)e[i].addr,
                                    e[i].size) != OTM_OK)
            st = otm_registry_add(&node->registry, (uintptr_t)e[i].addr,
                                  e[i].size, OTM_REGION_GLOBAL);
        if (st)
            return st;
    }
    return OTM_OK;
}

otm_loaded_image *otm_node_image(otm_node *node, uint64_t id)
{
    for (size_t i = 0; i < node->nimages; i++)
        if (node->images[i].id == id)
            return &node->images[i];
    return NULL;
}

/* 1 when a loaded image other than `except` lists an entry at addr. */
static int entry_shared(const otm_node *node, const otm_loaded_image *except,
                        uint64_t addr)
{
    for (size_t i = 0; i < node->nimages; i++) {
        const otm_loaded_image *im = &node->images[i];
        for (uint64_t j = 0; im != except && j < im->count; j++)
            if (im->entries[j].addr == addr)
                return 1;
    }
    return 0;
}

otm_status otm_node_drop_image(otm_node *node, uint64_t id)
{
    otm_loaded_image *im = otm_node_image(node, id);
    if (!im)
        return OTM_ERR_NO_IMAGE;
    for (uint64_t j = 0; j < im->count; j++) {
        const otm_entry *e = &im->entries[j];
        if (entry_shared(node, im, e->addr))
            continue;
        if (e->size == 0)
            drop_kernel(node, e->addr);
        else
            otm_registry_remove_global(&node->registry, (uintptr_t)e->addr);
    }
    otm_free(node, im->entries);
    *im = node->images[--node->nimages];
    return OTM_OK;
}

otm_status otm_node_add_image(otm_node *node, uint64_t id, const otm_entry *e,
                              uint64_t count)
{
    if (node->nimages == node->images_cap) {
        size_t cap = node->images_cap ? 2 * node->images_cap : 8;
        otm_loaded_image *p = otm_alloc(node, cap * sizeof *p);
        if (!p)
            return OTM_ERR_NOMEM;
        if (node->nimages)
            memcpy(p, node->images, node->nimages * sizeof *p);
        otm_free(node, node->images);
        node->images = p;
        node->images_cap = cap;
    }
    otm_entry *copy = otm_alloc(node, (count ? count : 1) * sizeof *copy);
    if (!copy)
        return OTM_ERR_NOMEM;
    if (count)
        memcpy(copy, e, count * sizeof *copy);
    node->images[node->nimages++] = (otm_loaded_image){id, copy, count};
    otm_status st = add_entries(node, e, count);
    if (st)
        otm_node_drop_image(node, id);
    return st;
}

/* ---- worker: gate ----------------------------------------------------------------- */

int otm_node_key_live(otm_node *node, int comm, int tag, int rank)
{
    int found = 0;
    otm_lock(node);
    for (otm_event *ev = node->all; ev && !found; ev = ev->all_next)
        found = ev->side == OTM_DEST && !otm_event_ended(ev) &&
                ev->comm == comm && ev->tag == tag && ev->rank == rank;
    otm_unlock(node);
    return found;
}

int otm_node_kernels_idle(otm_node *node)
{
    otm_lock(node);
    int idle = node->kern_head == NULL;
    otm_unlock(node);
    return idle;
}

int otm_node_kernels_waiting(otm_node *node)
{
    otm_lock(node);
    int waiting = 0;
    for (otm_event *ev = node->kern_head; ev && !waiting; ev = ev->next)
        waiting = !ev->claimed;
    otm_unlock(node);
    return waiting;
}

int otm_node_drained(otm_node *node, const otm_event *ev)
{
    otm_lock(node);
    int drained = node->data_head == ev && node->data_tail == ev &&
                  node->kern_head == NULL;
    otm_unlock(node);
    return drained;
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

static otm_status check_execute(const otm_node *node, const otm_event *ev)
{
    uint64_t nargs = ev->a[1];
    if (nargs > OTM_MAX_ARGS || ev->msg_len - OTM_WIRE_NOTIFY_SIZE != nargs * 16)
        return OTM_ERR_BAD_MESSAGE;
    return otm_node_has_kernel(node, ev->a[0]) ? OTM_OK : OTM_ERR_NO_KERNEL;
}

static otm_status judge(otm_node *node, const otm_event *ev, otm_status decoded)
{
    if (decoded)
        return decoded;
    switch (ev->kind) {
    case OTM_KIND_ALLOC: case OTM_KIND_DELETE: case OTM_KIND_SUBMIT:
    case OTM_KIND_RETRIEVE: case OTM_KIND_EXCHANGE: case OTM_KIND_EXECUTE:
    case OTM_KIND_EXIT: case OTM_KIND_LOAD: case OTM_KIND_UNLOAD: break;
    default: return OTM_ERR_BAD_KIND;
    }
    if (node->life != OTM_LIFE_RUNNING)
        return OTM_ERR_SHUTDOWN;
    if (node->failed && ev->kind != OTM_KIND_EXIT)
        return OTM_ERR_DEVICE_FAILED;
    return ev->kind == OTM_KIND_EXECUTE ? check_execute(node, ev) : OTM_OK;
}

static void drop(otm_node *node, uint8_t *buf, int src, const char *why)
{
    otm_log(node, OTM_LOG_WARN, "dropped a notification from rank %d: %s",
            src, why);
    node->stats.dropped++;
    otm_free(node, buf);
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
    int exit_tag = n.kind == OTM_KIND_EXIT && n.tag == OTM_TAG_EXIT && n.comm == 0;
    if (n.comm >= (uint32_t)node->cfg.ncomms || n.tag > (uint32_t)node->tag_ub ||
        (n.tag < OTM_TAG_FIRST && !exit_tag))
        return drop(node, buf, src, "communicator or tag out of range"), 1;
    if (otm_node_key_live(node, (int)n.comm, (int)n.tag, src))
        return 0;
    otm_event *ev = otm_event_new(node, (otm_kind)n.kind, OTM_DEST);
    if (!ev)
        return drop(node, buf, src, "out of memory"), 1;
    otm_event_init_dest(node, ev, &n, buf, (uint32_t)len, src);
    ev->status = judge(node, ev, st);
    ev->rejected = ev->status != OTM_OK;
    otm_trace_at(node, ev, OTM_TRACE_BEGIN);
    if (ev->status)
        node->stats.rejected++;
    else if (ev->kind == OTM_KIND_EXIT)
        node->life = OTM_LIFE_EXITING;
    otm_lock(node);
    if (ev->kind == OTM_KIND_EXECUTE && ev->status == OTM_OK)
        push(&node->kern_head, &node->kern_tail, ev);
    else
        push(&node->data_head, &node->data_tail, ev);
    otm_unlock(node);
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
    node->gate_buf = otm_alloc(node, (size_t)node->gate_len + 1);
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
    if (node->gate_req == MPI_REQUEST_NULL)
        return gate_post(node);
    MPI_Status st;
    int flag = 0;
    int rc = MPI_Test(&node->gate_req, &flag, &st);
    if (rc != MPI_SUCCESS && node->gate_req != MPI_REQUEST_NULL)
        return 1;                   /* the call failed; try again */
    if (rc == MPI_SUCCESS && !flag)
        return 0;
    node->gate_req = MPI_REQUEST_NULL;
    if (!node->gate_buf)
        drop(node, NULL, node->gate_src, "out of memory");
    else
        gate_dispatch(node);
    return 1;
}

/* Progresses every event of a worker list once; frees the ended ones. */
static int run_list(otm_node *node, otm_event **head, otm_event **tail)
{
    int moved = 0;
    otm_lock(node);
    otm_event *ev = *head, *prev = NULL;
    otm_unlock(node);
    while (ev) {
        moved |= otm_event_progress(node, ev);
        otm_lock(node);
        otm_event *next = ev->next;
        if (otm_event_ended(ev)) {
            if (prev)
                prev->next = next;
            else
                *head = next;
            if (*tail == ev)
                *tail = prev;
        } else {
            prev = ev;
        }
        otm_unlock(node);
        if (otm_event_ended(ev)) {
            /* Only the EXIT the gate accepted ends the service; a
             * malformed one was answered and changes nothing. */
            if (ev->kind == OTM_KIND_EXIT && !ev->rejected)
                node->life = OTM_LIFE_DONE;
            otm_event_free(node, ev);
            moved = 1;
        }
        ev = next;
    }
    return moved;
}

int otm_gate_poll_once(otm_node *node)
{
    int moved = 0;
    if (node->life != OTM_LIFE_DONE)
        moved = gate_receive(node);
    return moved | run_list(node, &node->data_head, &node->data_tail);
}

int otm_node_streaming(otm_node *node)
{
    int streaming = 0;
    otm_lock(node);
    for (otm_event *ev = node->data_head; ev && !streaming; ev = ev->next)
        streaming = otm_event_streaming(ev);
    otm_unlock(node);
    return streaming;
}

static otm_event *claim_kernel(otm_node *node)
{
    otm_lock(node);
    otm_event *ev = node->kern_head;
    while (ev && ev->claimed)
        ev = ev->next;
    if (ev)
        ev->claimed = 1;
    otm_unlock(node);
    return ev;
}

/* Unlinks an ended kernel event, or gives an unfinished one back. */
static void settle_kernel(otm_node *node, otm_event *ev)
{
    otm_lock(node);
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
    otm_unlock(node);
}

int otm_handler_run_once(otm_node *node)
{
    otm_event *ev = claim_kernel(node);
    if (!ev)
        return 0;
    int moved = otm_event_progress(node, ev);
    int ended = otm_event_ended(ev);
    settle_kernel(node, ev);
    if (!ended)
        return moved;
    otm_event_free(node, ev);
    return 1;
}
