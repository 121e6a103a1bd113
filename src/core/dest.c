/*
 * dest.c - the worker's half of each event.
 *
 * All validation of what the host sent is here: the gate asks whether a
 * notification can be answered (otm__dest_unroutable) and what status its
 * event answers with (otm__dest_admit), and each kind's start checks its
 * parameters before memory is touched. A bad pointer or size becomes an
 * error status in the reply, and any payload the host already sent is
 * still received (into a small sink) so the event's tag carries nothing
 * stale afterwards. The reply is always the last message the worker sends
 * on the tag, except for RETRIEVE, LOAD and EXECUTE, whose data (the
 * entries, a region's result) may follow it.
 *
 * Each event works on one of the worker's units (otm/node.h). Unit 0's
 * memory is the worker's own: payloads land in it and leave from it
 * directly. A proxied unit's memory is reached through the device hooks
 * only, so its payloads are staged in the event's scratch: received whole,
 * then put on the device; got from the device whole, then sent.
 */
#include <string.h>

#include "internal.h"

void otm__dest_init(otm_node *node, otm_event *ev, const otm_notify *n,
                    uint8_t *msg, uint32_t len, int src)
{
    ev->rank = src;
    ev->peer = n->peer;
    ev->unit = n->unit;
    ev->peer_unit = n->peer_unit;
    ev->comm = (int)n->comm;
    ev->tag = (int)n->tag;
    ev->flags = (uint8_t)n->flags;
    ev->p = n->p;
    ev->msg = msg;
    ev->msg_len = len;
}

const char *otm__dest_unroutable(const otm_node *node, const otm_notify *n)
{
    int exit_tag = n->kind == OTM_KIND_EXIT && n->tag == OTM_TAG_EXIT && n->comm == 0;
    if (n->comm >= (uint32_t)node->cfg.ncomms || n->tag > (uint32_t)node->tag_ub ||
        (n->tag < OTM_TAG_FIRST && !exit_tag))
        return "communicator or tag out of range";
    return NULL;
}

static otm_status check_execute(otm_node *node, const otm_event *ev)
{
    uint64_t nargs = ev->p.execute.nargs;
    if (nargs > OTM_MAX_ARGS || ev->msg_len - OTM_WIRE_NOTIFY_SIZE != nargs * 16)
        return OTM_ERR_BAD_MESSAGE;
    return otm__table_has_kernel(otm__unit(node, ev->unit), ev->p.execute.kernel)
               ? OTM_OK : OTM_ERR_NO_KERNEL;
}

/* The units an event names exist here: its own, and for a LOCAL exchange
 * the destination's (the other end of SEND and RECV is another rank's). */
static otm_status check_units(otm_node *node, const otm_event *ev)
{
    if (!otm__unit(node, ev->unit))
        return OTM_ERR_NO_DEVICE;
    if (ev->kind == OTM_KIND_EXCHANGE && ev->flags == OTM_XCHG_LOCAL &&
        !otm__unit(node, ev->peer_unit))
        return OTM_ERR_NO_DEVICE;
    return OTM_OK;
}

otm_status otm__dest_admit(otm_node *node, const otm_event *ev, otm_status decoded)
{
    if (decoded)
        return decoded;
    switch (ev->kind) {
    case OTM_KIND_ALLOC: case OTM_KIND_DELETE: case OTM_KIND_SUBMIT:
    case OTM_KIND_RETRIEVE: case OTM_KIND_EXCHANGE: case OTM_KIND_EXECUTE:
    case OTM_KIND_EXIT: case OTM_KIND_LOAD: case OTM_KIND_UNLOAD:
    case OTM_KIND_PING: break;
    default: return OTM_ERR_BAD_KIND;
    }
    if (node->life != OTM_LIFE_RUNNING)
        return OTM_ERR_SHUTDOWN;
    if (__atomic_load_n(&node->failed, __ATOMIC_ACQUIRE) && ev->kind != OTM_KIND_EXIT)
        return OTM_ERR_DEVICE_FAILED;
    otm_status st = check_units(node, ev);
    if (st == OTM_OK && ev->kind == OTM_KIND_EXECUTE)
        st = check_execute(node, ev);
    return st;
}

otm_status otm__dest_chain(otm_node *node, otm_event *ev, uint32_t after)
{
    int kind_ok = ev->kind == OTM_KIND_SUBMIT || ev->kind == OTM_KIND_EXECUTE ||
                  ev->kind == OTM_KIND_RETRIEVE;
    if (!kind_ok || after == (uint32_t)ev->tag || after < OTM_TAG_FIRST ||
        after > (uint32_t)node->tag_ub)
        return OTM_ERR_BAD_MESSAGE;
    /* Notifications arrive in the order the host sent them, and the host
     * hands a tag out again only after the reply of its last event: a live
     * event on that key is the one this was sent behind. None: that one
     * already ended. */
    ev->after_id = otm__runq_live_id(node, ev->comm, (int)after, ev->rank);
    node->stats.chained += ev->after_id != 0;
    return OTM_OK;
}

static const uint8_t *inline_data(const otm_event *ev)
{
    return ev->msg + OTM_WIRE_NOTIFY_SIZE;
}

static uint32_t inline_len(const otm_event *ev)
{
    return ev->msg_len - OTM_WIRE_NOTIFY_SIZE;
}

/* [addr, addr + len) lies in one allocation or global of the unit. */
static otm_status check(otm_node *node, uint16_t unit, uint64_t addr, uint64_t len)
{
    return otm_registry_check(&otm__unit(node, unit)->registry, (uintptr_t)addr, len);
}

/* ---- the memory of a unit -------------------------------------------------- */

static const otm_device_ops *dev(const otm_node *node)
{
    return &node->hooks.device;
}

/* len bytes of the worker's memory at src, into unit's dst. */
static otm_status put(otm_node *node, uint16_t unit, uint64_t dst, const void *src,
                      uint64_t len)
{
    if (!len)
        return OTM_OK;
    if (unit == 0)
        return memcpy((void *)(uintptr_t)dst, src, len), OTM_OK;
    return dev(node)->mem_put ? dev(node)->mem_put(dev(node)->ctx, unit, dst, src, len)
                              : OTM_ERR_NO_DEVICE;
}

/* len bytes of unit's src, into the worker's memory at dst. */
static otm_status get(otm_node *node, uint16_t unit, void *dst, uint64_t src, uint64_t len)
{
    if (!len)
        return OTM_OK;
    if (unit == 0)
        return memcpy(dst, (const void *)(uintptr_t)src, len), OTM_OK;
    return dev(node)->mem_get ? dev(node)->mem_get(dev(node)->ctx, unit, dst, src, len)
                              : OTM_ERR_NO_DEVICE;
}

/* Staging for a proxied unit's payload: ev->scratch, len bytes. */
static otm_status stage(otm_node *node, otm_event *ev, uint64_t len)
{
    if (len > SIZE_MAX / 2)
        return OTM_ERR_NOMEM;
    ev->scratch = otm__alloc(node, len ? (size_t)len : 1);
    return ev->scratch ? OTM_OK : OTM_ERR_NOMEM;
}

/* The staged payload, now received whole, put on the unit (a SUBMIT, the
 * receiving end of an exchange); the staging goes. */
static void land(otm_node *node, otm_event *ev, uint64_t dst, uint64_t len)
{
    if (ev->status == OTM_OK && ev->unit != 0)
        ev->status = put(node, ev->unit, dst, ev->scratch, len);
    if (ev->unit != 0) {
        otm__free(node, ev->scratch);
        ev->scratch = NULL;
    }
}

/* A fragment size the host chose that cannot be planned means the header
 * is corrupt: the host then retires the tag. */
static otm_status check_plan(uint64_t total, uint64_t frag)
{
    return total && otm_frag_check(total, frag) ? OTM_ERR_BAD_MESSAGE : OTM_OK;
}

/* ---- start: validate and act ----------------------------------------------- */

/* The reply is next: the event is done with device memory, but for the
 * data a RETRIEVE sends with or after it (runq.c reads past_run). */
static void at_reply(otm_event *ev)
{
    ev->step = OTM_AT_REPLY;
    __atomic_store_n(&ev->past_run, 1, __ATOMIC_RELEASE);
}

static int to_reply(otm_event *ev, otm_status st)
{
    if (ev->status == OTM_OK)
        ev->status = st;
    at_reply(ev);
    return 1;
}

static int to_payload(otm_node *node, otm_event *ev, otm_status st,
                      uint64_t total, uint64_t frag)
{
    ev->status = st;
    ev->discard = st != OTM_OK;
    otm__plan_payload(node, ev, total, frag);
    ev->step = OTM_AT_PAYLOAD;
    return 1;
}

/* Unit's memory of `size` bytes: the worker's own for unit 0, the
 * device's through its hook otherwise. */
static otm_status unit_alloc(otm_node *node, const otm_event *ev, uint64_t size,
                             uint64_t *addr)
{
    if (ev->unit == 0) {
        void *p = size > SIZE_MAX / 2 ? NULL : otm__alloc(node, size ? size : 1);
        *addr = (uint64_t)(uintptr_t)p;
        return p ? OTM_OK : OTM_ERR_NOMEM;
    }
    if (!dev(node)->mem_alloc)
        return OTM_ERR_NO_DEVICE;
    return dev(node)->mem_alloc(dev(node)->ctx, ev->unit, size, ev->p.alloc.alloc_kind, addr);
}

static void unit_free(otm_node *node, uint16_t unit, uint64_t addr)
{
    if (unit == 0)
        otm__free(node, (void *)(uintptr_t)addr);
    else if (dev(node)->mem_free)
        dev(node)->mem_free(dev(node)->ctx, unit, addr);
}

static int start_alloc(otm_node *node, otm_event *ev)
{
    uint64_t size = ev->p.alloc.size, addr = 0;
    otm_status st = unit_alloc(node, ev, size, &addr);
    if (st)
        return to_reply(ev, st);
    if (otm_registry_add(&otm__unit(node, ev->unit)->registry, (uintptr_t)addr, size,
                         OTM_REGION_ALLOC)) {
        unit_free(node, ev->unit, addr);
        return to_reply(ev, OTM_ERR_NOMEM);
    }
    ev->value = addr;
    return to_reply(ev, OTM_OK);
}

static int start_delete(otm_node *node, otm_event *ev)
{
    otm_status st = otm_registry_remove(&otm__unit(node, ev->unit)->registry,
                                        (uintptr_t)ev->p.del.addr, NULL);
    if (st == OTM_OK)
        unit_free(node, ev->unit, ev->p.del.addr);
    return to_reply(ev, st);
}

static int start_submit(otm_node *node, otm_event *ev)
{
    uint64_t size = ev->p.submit.size;
    otm_status st = check_plan(size, ev->p.submit.frag);
    if (st)
        return to_reply(ev, st);
    st = check(node, ev->unit, ev->p.submit.addr, size);
    if (inline_len(ev) == 0 && size > 0) {
        if (st == OTM_OK && ev->unit != 0)
            st = stage(node, ev, size);
        return to_payload(node, ev, st, size, ev->p.submit.frag);
    }
    if (inline_len(ev) != size)
        return to_reply(ev, OTM_ERR_BAD_MESSAGE);
    if (st == OTM_OK)
        st = put(node, ev->unit, ev->p.submit.addr, inline_data(ev), size);
    return to_reply(ev, st);
}

/* A proxied unit's data is got whole first, into the staging the reply
 * then sends from. */
static int start_retrieve(otm_node *node, otm_event *ev)
{
    uint64_t size = ev->p.retrieve.size;
    otm_status st = check_plan(size, ev->p.retrieve.frag);
    if (st == OTM_OK)
        st = check(node, ev->unit, ev->p.retrieve.addr, size);
    if (st == OTM_OK && ev->unit != 0 && (st = stage(node, ev, size)) == OTM_OK)
        st = get(node, ev->unit, ev->scratch, ev->p.retrieve.addr, size);
    return to_reply(ev, st);
}

/* LOCAL: both addresses are on this worker, on units ev->unit (source)
 * and ev->peer_unit (destination). */
static otm_status copy_local(otm_node *node, const otm_event *ev)
{
    uint64_t src = ev->p.exchange.src, dst = ev->p.exchange.dst;
    uint64_t size = ev->p.exchange.size;
    uint16_t su = ev->unit, du = ev->peer_unit;
    if (!size)
        return OTM_OK;
    if (su == 0 && du == 0)
        return memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, size), OTM_OK;
    if (su == 0)
        return put(node, du, dst, (const void *)(uintptr_t)src, size);
    if (du == 0)
        return get(node, su, (void *)(uintptr_t)dst, src, size);
    return dev(node)->mem_copy ? dev(node)->mem_copy(dev(node)->ctx, su, src, du, dst, size)
                               : OTM_ERR_NO_DEVICE;
}

static int exchange_local(otm_node *node, otm_event *ev)
{
    uint64_t size = ev->p.exchange.size;
    otm_status st = check(node, ev->unit, ev->p.exchange.src, size);
    if (st == OTM_OK)
        st = check(node, ev->peer_unit, ev->p.exchange.dst, size);
    if (st == OTM_OK)
        st = copy_local(node, ev);
    return to_reply(ev, st);
}

/* The bytes a SEND sends: the worker's own for unit 0, else got from the
 * unit into the staging. */
static otm_status exchange_source(otm_node *node, otm_event *ev, uint64_t size)
{
    otm_status st = check(node, ev->unit, ev->p.exchange.src, size);
    if (st == OTM_OK && ev->unit != 0 && size && (st = stage(node, ev, size)) == OTM_OK)
        st = get(node, ev->unit, ev->scratch, ev->p.exchange.src, size);
    return st;
}

/* SEND: the preamble tells the receiving worker whether data follows. */
static int exchange_send(otm_node *node, otm_event *ev)
{
    uint64_t size = ev->p.exchange.size;
    otm_reply pre = {.status = exchange_source(node, ev, size)};
    ev->status = pre.status;
    ev->reply = otm__alloc(node, OTM_WIRE_REPLY_SIZE);
    if (!ev->reply)
        return to_reply(ev, OTM_ERR_NOMEM);
    otm_wire_put_reply(ev->reply, &pre);
    otm_status st = otm__post_send(node, ev, OTM_SLOT_PREAMBLE, ev->reply,
                                   OTM_WIRE_REPLY_SIZE, ev->peer);
    if (st)
        return otm__event_fail(node, ev, st);
    if (pre.status || size == 0)
        return to_reply(ev, pre.status);
    return to_payload(node, ev, OTM_OK, size, ev->p.exchange.frag);
}

/* RECV: the sender's preamble comes first (preamble_step). */
static int exchange_recv(otm_node *node, otm_event *ev)
{
    uint64_t size = ev->p.exchange.size;
    ev->status = check(node, ev->unit, ev->p.exchange.dst, size);
    if (ev->status == OTM_OK && ev->unit != 0 && size)
        ev->status = stage(node, ev, size);
    ev->reply = otm__alloc(node, OTM_WIRE_REPLY_SIZE);
    if (!ev->reply)
        return to_reply(ev, OTM_ERR_NOMEM);
    otm_status st = otm__post_recv(node, ev, OTM_SLOT_PREAMBLE, ev->reply,
                                   OTM_WIRE_REPLY_SIZE, ev->peer);
    if (st)
        return otm__event_fail(node, ev, st);
    ev->step = OTM_AT_PREAMBLE;
    return 1;
}

static int start_exchange(otm_node *node, otm_event *ev)
{
    otm_status st = check_plan(ev->p.exchange.size, ev->p.exchange.frag);
    int remote = ev->flags == OTM_XCHG_SEND || ev->flags == OTM_XCHG_RECV;
    /* The other end must be another worker: MPI would refuse a bad rank,
     * and talking to oneself would never complete. */
    if (remote && (ev->peer < 1 || ev->peer >= node->size || ev->peer == node->rank))
        st = OTM_ERR_BAD_MESSAGE;
    if (st)
        return to_reply(ev, st);
    switch (ev->flags) {
    case OTM_XCHG_LOCAL: return exchange_local(node, ev);
    case OTM_XCHG_SEND: return exchange_send(node, ev);
    case OTM_XCHG_RECV: return exchange_recv(node, ev);
    default: return to_reply(ev, OTM_ERR_BAD_MESSAGE);
    }
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* LOAD's descriptor, from the notification's inline payload. */
static otm_image_ref load_ref(const otm_event *ev)
{
    const uint8_t *d = inline_data(ev);
    otm_image_ref ref = {.id = ev->p.load.id, .size = get64(d), .hash = get64(d + 8),
                         .names_hash = get64(d + 16),
                         .send = (ev->flags & OTM_LOAD_SEND) != 0,
                         .usm = (ev->flags & OTM_LOAD_USM) != 0};
    return ref;
}

/* An image that travels is received into scratch, then loaded. */
static int start_load(otm_node *node, otm_event *ev)
{
    if (inline_len(ev) != OTM_WIRE_LOAD_DESC_SIZE ||
        (ev->flags & ~(OTM_LOAD_SEND | OTM_LOAD_USM)))
        return to_reply(ev, OTM_ERR_BAD_MESSAGE);
    otm_image_ref ref = load_ref(ev);
    if (!ref.send) {
        ev->step = OTM_AT_RUN;
        return 1;
    }
    otm_status st = ref.size == 0 ? OTM_ERR_BAD_MESSAGE : check_plan(ref.size, ev->p.load.frag);
    if (st)
        return to_reply(ev, st);
    if (ref.size > OTM_IMAGE_MAX)
        st = OTM_ERR_BAD_SIZE;
    else if (!(ev->scratch = otm__alloc(node, (size_t)ref.size)))
        st = OTM_ERR_NOMEM;
    return to_payload(node, ev, st, ref.size, ev->p.load.frag);
}

/* Bytes that follow the notification of a SUBMIT or a LOAD in fragments,
 * and their fragment size; 0 when none do or the header says nonsense. */
static uint64_t following(const otm_event *ev, uint64_t *frag)
{
    uint64_t total = 0;
    if (ev->kind == OTM_KIND_SUBMIT && inline_len(ev) == 0)
        total = ev->p.submit.size, *frag = ev->p.submit.frag;
    else if (ev->kind == OTM_KIND_LOAD && (ev->flags & OTM_LOAD_SEND) &&
             inline_len(ev) == OTM_WIRE_LOAD_DESC_SIZE)
        total = load_ref(ev).size, *frag = ev->p.load.frag;
    return total && !check_plan(total, *frag) ? total : 0;
}

/* Refused by the gate (a failed device, the worker exiting): the answer is
 * the refusal, but what the host already sends after the notification is
 * still received (into the sink), so that nothing stale stays on the tag
 * the host may hand out again. A malformed notification is only answered:
 * the host retires its tag. */
static int refuse(otm_node *node, otm_event *ev)
{
    otm_status st = (otm_status)ev->status;
    uint64_t frag = 0, total = 0;
    if (st != OTM_ERR_BAD_KIND && st != OTM_ERR_BAD_VERSION && st != OTM_ERR_BAD_MESSAGE)
        total = following(ev, &frag);
    return total ? to_payload(node, ev, st, total, frag) : to_reply(ev, st);
}

static int start(otm_node *node, otm_event *ev)
{
    if (ev->after_id && !otm__runq_done(node, ev->after_id))
        return 0;                   /* chained: what it runs after is not done */
    /* Admitted before a region faulted, it is refused as if it came after:
     * this process serves only the EXIT now (otm__work_kernel). */
    if (ev->after_id && ev->status == OTM_OK &&
        __atomic_load_n(&node->failed, __ATOMIC_ACQUIRE))
        ev->status = OTM_ERR_DEVICE_FAILED;
    otm__set_state(ev, OTM_RUNNING);
    if (ev->status)                 /* rejected by the gate */
        return refuse(node, ev);
    switch (ev->kind) {
    case OTM_KIND_ALLOC: return start_alloc(node, ev);
    case OTM_KIND_DELETE: return start_delete(node, ev);
    case OTM_KIND_SUBMIT: return start_submit(node, ev);
    case OTM_KIND_RETRIEVE: return start_retrieve(node, ev);
    case OTM_KIND_EXCHANGE: return start_exchange(node, ev);
    case OTM_KIND_EXECUTE: ev->step = OTM_AT_RUN; return 1;
    case OTM_KIND_LOAD: return start_load(node, ev);
    case OTM_KIND_EXIT:
    case OTM_KIND_UNLOAD: ev->step = OTM_AT_DRAIN; return 1;
    case OTM_KIND_PING: return to_reply(ev, OTM_OK);  /* alive: that is all */
    default: return to_reply(ev, OTM_ERR_BAD_KIND);
    }
}

/* ---- exchange preamble --------------------------------------------------- */

static int preamble_step(otm_node *node, otm_event *ev)
{
    int count = 0, r = otm__await_slot(node, ev, OTM_SLOT_PREAMBLE, &count);
    if (r <= 0)
        return r < 0;
    otm_reply pre;
    if (otm_wire_get_reply(ev->reply, (size_t)count, &pre))
        return to_reply(ev, OTM_ERR_BAD_MESSAGE);
    if (pre.status)
        return to_reply(ev, OTM_ERR_PEER);
    if (ev->p.exchange.size == 0)
        return to_reply(ev, (otm_status)ev->status);
    return to_payload(node, ev, (otm_status)ev->status, ev->p.exchange.size,
                      ev->p.exchange.frag);
}

static int run_step(otm_node *node, otm_event *ev)
{
    otm_status st = ev->kind == OTM_KIND_EXECUTE
                        ? otm__work_kernel(node, ev, inline_data(ev))
                        : otm__work_load(node, ev, load_ref(ev));
    return to_reply(ev, st);
}

/* ---- reply, and data after it ---------------------------------------------- */

/* Bytes that follow the reply (RETRIEVE, LOAD, EXECUTE), and where they
 * are. A failed EXECUTE still sends its result: how the region died. */
static uint64_t data_bytes(const otm_event *ev, const uint8_t **src)
{
    if (ev->kind == OTM_KIND_EXECUTE) {
        *src = ev->scratch;
        return ev->scratch ? ev->value : 0;
    }
    if (ev->status != OTM_OK)
        return 0;
    if (ev->kind == OTM_KIND_RETRIEVE) {
        *src = ev->unit != 0 ? ev->scratch : (const uint8_t *)(uintptr_t)ev->p.retrieve.addr;
        return ev->p.retrieve.size;
    }
    if (ev->kind == OTM_KIND_LOAD) {
        *src = ev->scratch;
        return ev->value * 16;
    }
    return 0;
}

static int post_reply(otm_node *node, otm_event *ev)
{
    const uint8_t *src = NULL;
    uint64_t bytes = data_bytes(ev, &src);
    uint64_t cap = otm__reply_inline_max(ev);
    uint32_t inl = bytes && bytes <= cap ? (uint32_t)bytes : 0;
    otm_reply r = {.status = ev->status, .inline_len = inl,
                   .value = ev->kind == OTM_KIND_RETRIEVE ? 0 : ev->value};
    otm__free(node, ev->reply);
    ev->reply = otm__alloc(node, OTM_WIRE_REPLY_SIZE + inl);
    if (!ev->reply)
        return otm__event_fail(node, ev, OTM_ERR_NOMEM);
    otm_wire_put_reply(ev->reply, &r);
    if (inl)
        memcpy(ev->reply + OTM_WIRE_REPLY_SIZE, src, inl);
    otm_status st = otm__post_send(node, ev, OTM_SLOT_REPLY, ev->reply,
                                   OTM_WIRE_REPLY_SIZE + inl, ev->rank);
    if (st)
        return otm__event_fail(node, ev, st);
    ev->replied = 1;
    otm__set_state(ev, OTM_WAITING);
    if (bytes > inl) {
        otm__plan_payload(node, ev, bytes, otm__reply_frag(ev));
        ev->step = OTM_AT_REPLY_DATA;
    }
    return 1;
}

static int reply_step(otm_node *node, otm_event *ev)
{
    if (!ev->replied)
        return post_reply(node, ev);
    int r = otm__await_slot(node, ev, OTM_SLOT_PREAMBLE, NULL);
    if (r > 0)
        r = otm__await_slot(node, ev, OTM_SLOT_REPLY, NULL);
    if (r <= 0)
        return r < 0;
    return otm__finish(node, ev, (otm_status)ev->status, 1);
}

static int payload_step(otm_node *node, otm_event *ev, int after_reply)
{
    otm_status st = OTM_OK;
    const uint8_t *src = NULL;
    uint8_t *base;
    int sending = after_reply || (ev->kind == OTM_KIND_EXCHANGE &&
                                  ev->flags == OTM_XCHG_SEND);
    int peer = ev->kind == OTM_KIND_EXCHANGE ? ev->peer : ev->rank;
    if (after_reply)
        data_bytes(ev, &src), base = (uint8_t *)(uintptr_t)src;
    else if (ev->kind == OTM_KIND_LOAD || ev->unit != 0)
        base = ev->scratch;
    else if (ev->kind == OTM_KIND_EXCHANGE)
        base = (uint8_t *)(uintptr_t)(sending ? ev->p.exchange.src : ev->p.exchange.dst);
    else
        base = (uint8_t *)(uintptr_t)ev->p.submit.addr;
    int moved = otm__pump(node, ev, sending, base, peer, &st);
    if (st)
        return otm__event_fail(node, ev, st);
    if (ev->moved < ev->plan.count)
        return moved;
    if (!after_reply && ev->kind == OTM_KIND_SUBMIT)
        land(node, ev, ev->p.submit.addr, ev->p.submit.size);
    else if (!after_reply && ev->kind == OTM_KIND_EXCHANGE && !sending)
        land(node, ev, ev->p.exchange.dst, ev->p.exchange.size);
    /* A received image is loaded next; otherwise the reply follows. */
    int load = !after_reply && ev->kind == OTM_KIND_LOAD && ev->status == OTM_OK;
    if (load)
        ev->step = OTM_AT_RUN;
    else
        at_reply(ev);
    return 1;
}

/* EXIT waits for every other event of the worker, UNLOAD for its kernels. */
static int drain_step(otm_node *node, otm_event *ev)
{
    if (ev->kind == OTM_KIND_UNLOAD)
        return otm__runq_kernels_idle(node) ? to_reply(ev, otm__work_unload(node, ev)) : 0;
    return otm__runq_drained(node, ev) ? to_reply(ev, OTM_OK) : 0;
}

int otm__dest_step(otm_node *node, otm_event *ev)
{
    switch (ev->step) {
    case OTM_AT_START: return start(node, ev);
    case OTM_AT_PREAMBLE: return preamble_step(node, ev);
    case OTM_AT_PAYLOAD: return payload_step(node, ev, 0);
    case OTM_AT_RUN: return run_step(node, ev);
    case OTM_AT_DRAIN: return drain_step(node, ev);
    case OTM_AT_REPLY: return reply_step(node, ev);
    case OTM_AT_REPLY_DATA: return payload_step(node, ev, 1);
    default: return 0;
    }
}
