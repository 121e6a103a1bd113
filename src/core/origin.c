/*
 * origin.c - the host's half of each event.
 *
 * An origin event is built at enqueue time (its notification, with any
 * inline payload, is encoded then, so the caller's argument arrays need not
 * outlive the call) and starts when it reaches the head of its queue: it
 * takes a tag, posts the receive of its reply before announcing itself, then
 * moves its payload and waits for the reply that carries the worker's
 * status.
 */
#include <string.h>

#include "internal.h"

static int is_exchange_local(const otm_event *ev)
{
    return ev->kind == OTM_KIND_EXCHANGE && ev->rank == ev->peer;
}

static int notifications(const otm_event *ev)
{
    return ev->kind == OTM_KIND_EXCHANGE && !is_exchange_local(ev) ? 2 : 1;
}

uint32_t otm__origin_inline_len(const otm_node *node, const otm_op *op)
{
    if (op->kind == OTM_KIND_SUBMIT && op->size <= node->cfg.inline_max)
        return (uint32_t)op->size;
    if (op->kind == OTM_KIND_EXECUTE)
        return op->nargs * 16u;
    if (op->kind == OTM_KIND_LOAD)
        return OTM_WIRE_LOAD_DESC_SIZE;
    return 0;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Inline payload of SUBMIT (the data), LOAD (the image descriptor) or
 * EXECUTE (values, then offsets). */
static void put_inline(uint8_t *p, const otm_op *op)
{
    if (op->kind == OTM_KIND_SUBMIT) {
        memcpy(p, op->host, op->size);
        return;
    }
    if (op->kind == OTM_KIND_LOAD) {
        put64(p, op->image.size);
        put64(p + 8, op->image.hash);
        put64(p + 16, op->image.names_hash);
        return;
    }
    for (uint32_t i = 0; i < op->nargs; i++) {
        uint64_t v = op->args[i];
        uint64_t o = op->offsets ? (uint64_t)op->offsets[i] : 0;
        memcpy(p + 8 * i, &v, 8);
        memcpy(p + 8 * (op->nargs + i), &o, 8);
    }
}

static void set_params(otm_node *node, otm_event *ev, const otm_op *op)
{
    uint64_t frag = node->cfg.frag_size, inl = node->cfg.inline_max;
    ev->rank = op->rank;
    ev->peer = op->peer;
    ev->unit = op->unit;
    ev->peer_unit = op->peer_unit;
    ev->host = op->host;
    ev->result = op->result;
    ev->target = op->target;
    switch (op->kind) {
    case OTM_KIND_ALLOC: ev->p.alloc.size = op->size; ev->p.alloc.alloc_kind = op->arg; break;
    case OTM_KIND_DELETE: ev->p.del.addr = op->addr; break;
    case OTM_KIND_SUBMIT:
        ev->p.submit.addr = op->addr, ev->p.submit.size = op->size;
        ev->p.submit.frag = frag;
        if (op->size > inl) {
            ev->payload = op->host;
            ev->payload_len = op->size;
        }
        break;
    case OTM_KIND_RETRIEVE:
        ev->p.retrieve.addr = op->addr, ev->p.retrieve.size = op->size;
        ev->p.retrieve.frag = frag, ev->p.retrieve.inline_max = inl;
        break;
    case OTM_KIND_EXCHANGE:
        ev->p.exchange.src = op->addr, ev->p.exchange.dst = op->addr2;
        ev->p.exchange.size = op->size, ev->p.exchange.frag = frag;
        break;
    case OTM_KIND_EXECUTE:
        ev->p.execute.kernel = op->arg, ev->p.execute.nargs = op->nargs;
        ev->p.execute.teams = op->teams, ev->p.execute.threads = op->threads;
        break;
    case OTM_KIND_LOAD:
        ev->p.load.id = op->image.id, ev->p.load.entries = op->size;
        ev->p.load.frag = frag, ev->p.load.inline_max = inl;
        if (op->image.usm)
            ev->flags |= OTM_LOAD_USM;
        if (op->image.send) {
            ev->flags |= OTM_LOAD_SEND;
            ev->payload = op->image.bytes;
            ev->payload_len = op->image.size;
        }
        break;
    case OTM_KIND_UNLOAD: ev->p.unload.id = op->arg; break;
    default: break;
    }
}

otm_event *otm__origin_new(otm_node *node, const otm_op *op, otm_status *st)
{
    otm_event *ev = otm__event_new(node, op->kind, OTM_ORIGIN);
    *st = ev ? otm__origin_init(node, ev, op) : OTM_ERR_NOMEM;
    if (ev && *st) {
        ev->target = NULL;   /* the caller's reference was not taken yet */
        otm__event_free(node, ev);
        return NULL;
    }
    if (ev)
        otm__trace_at(node, ev, OTM_TRACE_BEGIN);
    return ev;
}

otm_status otm__origin_init(otm_node *node, otm_event *ev, const otm_op *op)
{
    set_params(node, ev, op);
    if (op->kind == OTM_KIND_SYNC)
        return OTM_OK;
    uint32_t inl = otm__origin_inline_len(node, op);
    ev->msg_len = OTM_WIRE_NOTIFY_SIZE + inl;
    ev->msg = otm__alloc(node, (size_t)ev->msg_len * (size_t)notifications(ev));
    if (!ev->msg)
        return OTM_ERR_NOMEM;
    if (inl)
        put_inline(ev->msg + OTM_WIRE_NOTIFY_SIZE, op);
    return OTM_OK;
}

/* ---- start ------------------------------------------------------------- */

static otm_status take_tag(otm_node *node, otm_event *ev)
{
    otm_status st = OTM_ERR_TAGS_EXHAUSTED;
    if (ev->kind == OTM_KIND_EXIT) {
        ev->comm = 0;
        ev->tag = OTM_TAG_EXIT;     /* its own tag: see otm/wire.h */
        return OTM_OK;
    }
    /* A chained event names the one before it by tag on its own
     * communicator (otm/wire.h): that communicator, or not now. */
    int first = ev->after ? ev->after->comm : -1;
    int tries = ev->after ? 1 : node->cfg.ncomms;
    otm__lock(node);
    for (int i = 0; i < tries && st; i++) {
        int c = first >= 0 ? first
                           : (int)((node->next_comm + (uint64_t)i) % (uint64_t)node->cfg.ncomms);
        if (otm_tags_alloc(&node->tags[c], &ev->tag) == OTM_OK) {
            ev->comm = c;
            st = OTM_OK;
        }
    }
    node->next_comm += first < 0;
    otm__unlock(node);
    return st;
}

/* `unit` is the device of the worker it goes to, `peer_unit` that of the
 * other end of an EXCHANGE. */
static void put_header(otm_event *ev, uint8_t *buf, int peer, uint32_t role, uint16_t unit,
                       uint16_t peer_unit)
{
    otm_notify n = {
        .version = OTM_WIRE_VERSION, .kind = ev->kind, .tag = (uint32_t)ev->tag,
        .comm = (uint32_t)ev->comm, .id = ev->id, .peer = peer, .flags = role,
        .inline_len = ev->msg_len - OTM_WIRE_NOTIFY_SIZE,
        .after = ev->after ? (uint32_t)ev->after->tag : 0,
        .unit = unit, .peer_unit = peer_unit};
    n.p = ev->p;
    otm_wire_put_notify(buf, &n);
}

static uint32_t reply_capacity(const otm_event *ev)
{
    switch (ev->kind) {
    case OTM_KIND_RETRIEVE:
        return OTM_WIRE_REPLY_SIZE +
               (uint32_t)(ev->p.retrieve.size <= ev->p.retrieve.inline_max
                              ? ev->p.retrieve.size : 0);
    case OTM_KIND_LOAD: return OTM_WIRE_REPLY_SIZE + (uint32_t)ev->p.load.inline_max;
    case OTM_KIND_EXECUTE: return OTM_WIRE_REPLY_SIZE + OTM_EXEC_INLINE_MAX;
    case OTM_KIND_EXCHANGE: return 2 * OTM_WIRE_REPLY_SIZE;
    default: return OTM_WIRE_REPLY_SIZE;
    }
}

/* Posts the receives of the replies first, so an answer never waits in
 * MPI's unexpected queue, then the notification(s). */
static otm_status post_start(otm_node *node, otm_event *ev)
{
    otm_status st = otm__post_recv(node, ev, OTM_SLOT_REPLY, ev->reply,
                                   ev->reply_len, ev->rank);
    if (st)
        return st;
    if (is_exchange_local(ev)) {
        put_header(ev, ev->msg, ev->rank, OTM_XCHG_LOCAL, ev->unit, ev->peer_unit);
        return otm__post_notify(node, ev, OTM_SLOT_NOTIFY, ev->msg, ev->msg_len,
                                ev->rank);
    }
    if (ev->kind == OTM_KIND_EXCHANGE) {
        uint8_t *second = ev->msg + ev->msg_len;
        st = otm__post_recv(node, ev, OTM_SLOT_REPLY2,
                            ev->reply + OTM_WIRE_REPLY_SIZE,
                           OTM_WIRE_REPLY_SIZE, ev->peer);
        if (st)
            return st;
        put_header(ev, second, ev->rank, OTM_XCHG_RECV, ev->peer_unit, ev->unit);
        st = otm__post_notify(node, ev, OTM_SLOT_NOTIFY2, second, ev->msg_len,
                              ev->peer);
        if (st)
            return st;
        put_header(ev, ev->msg, ev->peer, OTM_XCHG_SEND, ev->unit, ev->peer_unit);
    } else {
        put_header(ev, ev->msg, -1, ev->flags, ev->unit, 0);
    }
    return otm__post_notify(node, ev, OTM_SLOT_NOTIFY, ev->msg, ev->msg_len,
                            ev->rank);
}

static int start(otm_node *node, otm_event *ev)
{
    /* A worker lost to a probe would never answer: no message, no wait. */
    if (otm__worker_lost(node, ev->rank) ||
        (ev->kind == OTM_KIND_EXCHANGE && otm__worker_lost(node, ev->peer))) {
        otm__set_state(ev, OTM_RUNNING);
        return otm__finish(node, ev, OTM_ERR_UNRESPONSIVE, 1);
    }
    if (take_tag(node, ev) != OTM_OK)
        return 0;   /* stays CREATED; tags free up as events end */
    ev->reply_len = reply_capacity(ev);
    ev->reply = otm__alloc(node, ev->reply_len);
    otm__set_state(ev, OTM_RUNNING);
    if (!ev->reply)
        return otm__event_fail(node, ev, OTM_ERR_NOMEM);
    otm_status st = post_start(node, ev);
    if (st)
        return otm__event_fail(node, ev, st);
    if (ev->payload_len) {
        otm__plan_payload(node, ev, ev->payload_len, otm__payload_frag(ev));
        ev->step = OTM_AT_PAYLOAD;
    } else {
        otm__set_state(ev, OTM_WAITING);
        ev->step = OTM_AT_REPLY;
    }
    return 1;
}

/* ---- replies ------------------------------------------------------------ */

/* Hands an EXECUTE's result (otm/wire.h) to the hooks: first what the
 * region printed, then how it died. */
static otm_status deliver_result(otm_node *node, otm_event *ev,
                                 const uint8_t *buf, uint64_t len)
{
    otm_exec_result r;
    otm_status st = otm_wire_get_exec(buf, (size_t)len, &r);
    if (st)
        return st;
    otm_hooks *h = &node->hooks;
    if (h->region_output && r.out_len)
        h->region_output(h->ctx, ev->rank, 1, r.out, (size_t)r.out_len);
    if (h->region_output && r.err_len)
        h->region_output(h->ctx, ev->rank, 2, r.err, (size_t)r.err_len);
    if (h->region_fault && (r.flags & (OTM_EXEC_FAULTED | OTM_EXEC_EXITED))) {
        otm_region_fault f = {.signo = r.signo, .code = r.code, .addr = r.addr,
                              .exit_status = r.exit_status, .flags = r.flags};
        h->region_fault(h->ctx, ev->rank, ev->unit, ev->p.execute.kernel, &f);
    }
    return OTM_OK;
}

/* EXECUTE: its result is inline, or follows in fragments into scratch (or
 * into the sink, when memory is short: the output is then lost, said so). */
static otm_status take_result(otm_node *node, otm_event *ev, const otm_reply *r,
                              int *more)
{
    ev->value = r->value;
    if (r->value == 0)
        return r->inline_len ? OTM_ERR_BAD_MESSAGE : OTM_OK;
    if (r->value <= OTM_EXEC_INLINE_MAX)
        return r->inline_len != r->value ? OTM_ERR_BAD_MESSAGE
                                         : deliver_result(node, ev, r->inline_data, r->value);
    if (r->inline_len)
        return OTM_ERR_BAD_MESSAGE;
    ev->scratch = r->value <= SIZE_MAX / 2 ? otm__alloc(node, (size_t)r->value) : NULL;
    if (!ev->scratch) {
        otm__log(node, OTM_LOG_WARN, "no memory for the %llu bytes of output of a "
                 "region on rank %d: they are dropped", (unsigned long long)r->value,
                ev->rank);
        ev->discard = 1;
    }
    *more = 1;
    return OTM_OK;
}

/* Takes what a reply carries. Returns the status to record (a malformed
 * reply); *more is set when fragments follow the reply. */
static otm_status take_reply(otm_node *node, otm_event *ev, const otm_reply *r,
                             int *more)
{
    uint64_t bytes = ev->kind == OTM_KIND_LOAD ? r->value * 16 : ev->p.retrieve.size;
    *more = 0;
    if (ev->kind == OTM_KIND_EXECUTE)
        return take_result(node, ev, r, more);
    if (ev->kind == OTM_KIND_ALLOC && ev->result)
        *ev->result = r->value;
    if (ev->kind != OTM_KIND_RETRIEVE && ev->kind != OTM_KIND_LOAD)
        return OTM_OK;
    if (ev->kind == OTM_KIND_LOAD) {
        if (ev->result)
            *ev->result = r->value;
        if (r->value > ev->p.load.entries || r->value > UINT64_MAX / 16)
            return OTM_ERR_BAD_SIZE;   /* more entries than the host has */
    }
    ev->value = bytes;
    if (bytes > otm__reply_inline_max(ev)) {
        *more = bytes > 0;
        return r->inline_len ? OTM_ERR_BAD_MESSAGE : OTM_OK;
    }
    if (r->inline_len != bytes)
        return OTM_ERR_BAD_MESSAGE;
    if (bytes)
        memcpy(ev->host, r->inline_data, bytes);
    return OTM_OK;
}

/* Decodes the reply in slot s. Returns 1 if fragments follow. A failed
 * EXECUTE still carries its result: how the region died. */
static int on_reply(otm_node *node, otm_event *ev, int s, int count)
{
    const uint8_t *buf = ev->reply + (s == OTM_SLOT_REPLY2 ? OTM_WIRE_REPLY_SIZE : 0);
    otm_reply r;
    int more = 0;
    otm_status st = otm_wire_get_reply(buf, (size_t)count, &r);
    if (st) {
        ev->unclean = 1;            /* cannot tell what else the peer sent */
    } else {
        if (r.status == OTM_OK || ev->kind == OTM_KIND_EXECUTE)
            st = take_reply(node, ev, &r, &more);
        if (st)
            ev->unclean = 1, more = 0;  /* the peer may send fragments on */
        else
            st = (otm_status)r.status;
    }
    if (ev->status == OTM_OK)
        ev->status = st;
    return more;
}

static int await_replies(otm_node *node, otm_event *ev, int *more)
{
    int pending = 0;
    for (int s = OTM_SLOT_REPLY; s <= OTM_SLOT_REPLY2; s++) {
        if (!otm__slot_active(ev, s))
            continue;
        int count = 0, r = otm__await_slot(node, ev, s, &count);
        if (r < 0)
            return -1;
        if (r == 0)
            pending = 1;
        else
            *more |= on_reply(node, ev, s, count);
    }
    return pending;
}

static int reply_step(otm_node *node, otm_event *ev)
{
    int more = 0;
    for (int s = OTM_SLOT_NOTIFY; s <= OTM_SLOT_NOTIFY2; s++)
        if (otm__await_slot(node, ev, s, NULL) < 0)
            return 1;
    int awaited = otm__slot_active(ev, OTM_SLOT_REPLY);
    int pending = await_replies(node, ev, &more);
    if (pending < 0)
        return 1;
    if (more) {
        uint64_t frag = otm__reply_frag(ev);
        otm__plan_payload(node, ev, ev->value, frag);
        ev->step = OTM_AT_REPLY_DATA;
        return 1;
    }
    if (pending || otm__any_active(ev))
        return 0;
    if (ev->after)
        return awaited;             /* ends after the event before it */
    return otm__finish(node, ev, (otm_status)ev->status, 1);
}

/* ---- payload ----------------------------------------------------------- */

/* Where fragments go: from the payload, or into the caller's buffer (an
 * EXECUTE's result into scratch). */
static uint8_t *payload_base(otm_event *ev, int sending)
{
    if (sending)
        return (uint8_t *)(uintptr_t)ev->payload;
    return ev->kind == OTM_KIND_EXECUTE ? ev->scratch : ev->host;
}

static int payload_step(otm_node *node, otm_event *ev, int sending)
{
    otm_status st = OTM_OK;
    int moved = otm__pump(node, ev, sending, payload_base(ev, sending), ev->rank, &st);
    if (st)
        return otm__event_fail(node, ev, st);
    if (ev->moved < ev->plan.count)
        return moved;
    if (sending) {
        otm__set_state(ev, OTM_WAITING);
        ev->step = OTM_AT_REPLY;
        return 1;
    }
    if (ev->after)
        return moved;               /* ends after the event before it */
    if (ev->kind == OTM_KIND_EXECUTE && ev->scratch) {
        st = deliver_result(node, ev, ev->scratch, ev->value);
        if (st && ev->status == OTM_OK)
            ev->status = st;
    }
    return otm__finish(node, ev, (otm_status)ev->status, 1);
}

static int sync_step(otm_node *node, otm_event *ev)
{
    otm_event *t = ev->target;
    if (t && !otm_event_ended(t))
        return 0;
    otm_status st = t && t->state == OTM_FAILED ? OTM_ERR_PEER : OTM_OK;
    ev->target = NULL;
    if (t)
        otm_event_unref(node, t);
    otm__set_state(ev, OTM_RUNNING);
    return otm__finish(node, ev, st, 1);
}

/* Whether an event failed on the host's own account: no answer in time,
 * its worker lost, MPI failing. Its worker may then never answer the
 * events chained behind it either. */
static int failed_here(const otm_event *ev)
{
    return ev->state == OTM_FAILED &&
           (ev->status == OTM_ERR_TIMEOUT || ev->status == OTM_ERR_KERNEL_TIMEOUT ||
            ev->status == OTM_ERR_UNRESPONSIVE || ev->status == OTM_ERR_MPI);
}

/* A chained event (otm/event.h) lets the one before it go once that one
 * ended: from then on it may end too. When that one failed on the host's
 * own account, this one fails with it. Returns 1 when it let go. */
static int release_after(otm_node *node, otm_event *ev)
{
    otm_event *a = ev->after;
    if (!a || !otm_event_ended(a))
        return 0;
    int fail = failed_here(a);
    ev->after = NULL;
    otm_event_unref(node, a);
    if (fail)
        otm__event_fail(node, ev, OTM_ERR_PEER);
    return 1;
}

int otm__origin_step(otm_node *node, otm_event *ev)
{
    if (ev->kind == OTM_KIND_SYNC)
        return sync_step(node, ev);
    int moved = release_after(node, ev);
    if (otm_event_ended(ev) || ev->step == OTM_AT_CANCEL)
        return moved;
    switch (ev->step) {
    case OTM_AT_START: return moved | start(node, ev);
    case OTM_AT_PAYLOAD: return moved | payload_step(node, ev, 1);
    case OTM_AT_REPLY: return moved | reply_step(node, ev);
    case OTM_AT_REPLY_DATA: return moved | payload_step(node, ev, 0);
    default: return moved;
    }
}
