/*
 * page.c - the page protocol of unified shared memory (otm/page.h): a
 * worker's call (ask, then its reply) and the host's server, one ask at a
 * time. No thread, no blocking call: each function posts or tests.
 */
#include <limits.h>
#include <string.h>

#include "internal.h"
#include "otm/page.h"

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static int held(MPI_Request r)
{
    return r != MPI_REQUEST_NULL && r != (MPI_Request)0;
}

static int reply_tag_ok(const otm_node *node, int64_t tag)
{
    return tag >= OTM_PAGE_TAG_FIRST && tag <= node->tag_ub;
}

/* ---- the worker's call ----------------------------------------------------- */

otm_status otm_page_call_start(otm_node *node, otm_page_call *c, otm_page_kind kind,
                               int tag, uint64_t addr, uint64_t len, uint8_t *ask,
                               uint64_t payload, uint8_t *reply, uint64_t reply_cap)
{
    if (kind < OTM_PAGE_RANGES || kind >= OTM_PAGE_KIND_END || !reply_tag_ok(node, tag) ||
        !ask || !reply || reply_cap < OTM_PAGE_REPLY_HEAD || reply_cap > INT_MAX ||
        payload > OTM_PAGE_WRITE_MAX)
        return OTM_ERR_INVALID;
    put32(ask, OTM_PAGE_MAGIC);
    uint16_t v = OTM_PAGE_VERSION, k = (uint16_t)kind;
    memcpy(ask + 4, &v, 2);
    memcpy(ask + 6, &k, 2);
    put32(ask + 8, (uint32_t)tag);
    put32(ask + 12, 0);
    put64(ask + 16, addr);
    put64(ask + 24, len);
    *c = (otm_page_call){.recv = MPI_REQUEST_NULL, .send = MPI_REQUEST_NULL,
                         .reply = reply, .reply_cap = reply_cap, .got = -1};
    if (MPI_Irecv(reply, (int)reply_cap, MPI_BYTE, 0, tag, node->pages, &c->recv) !=
        MPI_SUCCESS)
        return c->recv = MPI_REQUEST_NULL, OTM_ERR_MPI;
    if (MPI_Isend(ask, (int)(OTM_PAGE_ASK_HEAD + payload), MPI_BYTE, 0, OTM_PAGE_TAG_ASK,
                  node->pages, &c->send) != MPI_SUCCESS) {
        c->send = MPI_REQUEST_NULL;
        otm_page_call_cancel(node, c);
        return OTM_ERR_MPI;
    }
    return OTM_OK;
}

/* Tests one request of the call; 0 when it failed (the call then ends
 * with OTM_ERR_MPI). */
static int test_one(MPI_Request *r, int *count)
{
    int flag = 0;
    MPI_Status st;
    if (!held(*r))
        return 1;
    if (MPI_Test(r, &flag, &st) != MPI_SUCCESS)
        return 0;
    if (flag && count && MPI_Get_count(&st, MPI_BYTE, count) != MPI_SUCCESS)
        return 0;
    return 1;
}

int otm_page_call_test(otm_node *node, otm_page_call *c, otm_status *st,
                       uint64_t *value)
{
    (void)node;
    *value = 0;
    if (!test_one(&c->send, NULL) || !test_one(&c->recv, &c->got)) {
        otm_page_call_cancel(node, c);
        return *st = OTM_ERR_MPI, 1;
    }
    if (held(c->send) || held(c->recv))
        return 0;
    int32_t status = (int32_t)get32(c->reply + 4);
    if (c->got < (int)OTM_PAGE_REPLY_HEAD || get32(c->reply) != OTM_PAGE_MAGIC ||
        !otm_status_valid(status))
        return *st = OTM_ERR_BAD_MESSAGE, 1;
    *value = get64(c->reply + 8);
    *st = (otm_status)status;
    return 1;
}

void otm_page_call_cancel(otm_node *node, otm_page_call *c)
{
    (void)node;
    if (held(c->recv)) {
        MPI_Cancel(&c->recv);
        MPI_Request_free(&c->recv);
    }
    if (held(c->send))
        MPI_Request_free(&c->send);
    c->recv = c->send = MPI_REQUEST_NULL;
}

/* ---- the host's server ------------------------------------------------------ */

/* Makes *buf hold at least `need` bytes (its contents are not kept). */
static otm_status room(otm_node *node, uint8_t **buf, uint64_t *cap, uint64_t need)
{
    if (*cap >= need)
        return OTM_OK;
    otm__free(node, *buf);
    *buf = need <= SIZE_MAX / 2 ? otm__alloc(node, (size_t)need) : NULL;
    *cap = *buf ? need : 0;
    return *buf ? OTM_OK : OTM_ERR_NOMEM;
}

/* Takes the next ask, if one came, and starts receiving it: whole into
 * s->in, or only its header into s->head when it is larger than any
 * worker sends (answered OTM_ERR_BAD_MESSAGE) or there is no memory for it
 * (OTM_ERR_NOMEM). */
static int take(otm_node *node, otm_page_server *s)
{
    int flag = 0, count = 0;
    MPI_Message m;
    MPI_Status st;
    if (MPI_Improbe(MPI_ANY_SOURCE, OTM_PAGE_TAG_ASK, node->pages, &flag, &m, &st) !=
            MPI_SUCCESS || !flag)
        return 0;
    if (MPI_Get_count(&st, MPI_BYTE, &count) != MPI_SUCCESS || count < 0)
        count = 0;
    s->src = st.MPI_SOURCE;
    s->in_len = (uint64_t)count;
    s->whole = s->in_len <= OTM_PAGE_ASK_HEAD + OTM_PAGE_WRITE_MAX &&
               room(node, &s->in, &s->in_cap, s->in_len ? s->in_len : 1) == OTM_OK;
    s->nomem = !s->whole && s->in_len <= OTM_PAGE_ASK_HEAD + OTM_PAGE_WRITE_MAX;
    uint8_t *into = s->whole ? s->in : s->head;
    uint64_t len = s->whole ? s->in_len
                            : (s->in_len < OTM_PAGE_ASK_HEAD ? s->in_len : OTM_PAGE_ASK_HEAD);
    if (MPI_Imrecv(into, (int)len, MPI_BYTE, &m, &s->req) != MPI_SUCCESS) {
        otm__log(node, OTM_LOG_ERROR, "a page ask from rank %d could not be received",
                 s->src);
        return 1;
    }
    s->state = 1;
    return 1;
}

/* The records of a WRITE, applied in order until one fails. */
static otm_status apply(const uint8_t *p, uint64_t len, const otm_page_host_ops *ops,
                        uint64_t *written)
{
    *written = 0;
    while (len) {
        if (len < OTM_PAGE_RECORD_HEAD)
            return OTM_ERR_BAD_MESSAGE;
        uint64_t addr = get64(p), n = get64(p + 8);
        if (n > len - OTM_PAGE_RECORD_HEAD)
            return OTM_ERR_BAD_MESSAGE;
        otm_status st = ops->write(ops->ctx, addr, p + OTM_PAGE_RECORD_HEAD, n);
        if (st)
            return st;
        *written += n;
        p += OTM_PAGE_RECORD_HEAD + n;
        len -= OTM_PAGE_RECORD_HEAD + n;
    }
    return OTM_OK;
}

/* The answer to a decoded ask of `kind` into s->out: its status, value
 * and payload length. */
static otm_status answer(otm_node *node, otm_page_server *s, const otm_page_host_ops *ops,
                         unsigned kind, uint64_t *value, uint64_t *payload)
{
    uint64_t addr = get64(s->in + 16), len = get64(s->in + 24);
    uint64_t body = s->in_len - OTM_PAGE_ASK_HEAD;
    *value = *payload = 0;
    switch (kind) {
    case OTM_PAGE_RANGES: {
        uint64_t cap = len < OTM_PAGE_RANGES_MAX ? len : OTM_PAGE_RANGES_MAX;
        if (room(node, &s->out, &s->out_cap, OTM_PAGE_REPLY_HEAD + 16 * cap))
            return OTM_ERR_NOMEM;
        uint64_t *pairs = (uint64_t *)(void *)(s->out + OTM_PAGE_REPLY_HEAD);
        otm_status st = ops->ranges(ops->ctx, pairs, cap, value);
        *payload = st == OTM_OK ? 16 * *value : 0;
        return st;
    }
    case OTM_PAGE_READ:
        if (len > OTM_PAGE_READ_MAX)
            return OTM_ERR_BAD_SIZE;
        if (room(node, &s->out, &s->out_cap, OTM_PAGE_REPLY_HEAD + len))
            return OTM_ERR_NOMEM;
        if (ops->read(ops->ctx, addr, s->out + OTM_PAGE_REPLY_HEAD, len))
            return OTM_ERR_BAD_POINTER;
        *value = *payload = len;
        return OTM_OK;
    case OTM_PAGE_WRITE:
        if (len != body)
            return OTM_ERR_BAD_MESSAGE;
        return apply(s->in + OTM_PAGE_ASK_HEAD, body, ops, value);
    default:
        return OTM_ERR_BAD_KIND;
    }
}

/* The status of the received ask, before its kind is served. */
static otm_status judge(const otm_page_server *s, const uint8_t *in, int failed)
{
    uint16_t version = 0;
    if (s->nomem)
        return OTM_ERR_NOMEM;
    if (failed || !s->whole || s->in_len < OTM_PAGE_ASK_HEAD)
        return OTM_ERR_BAD_MESSAGE;
    memcpy(&version, in + 4, 2);
    return version == OTM_PAGE_VERSION ? OTM_OK : OTM_ERR_BAD_VERSION;
}

/* Judges the received ask and sends the answer; an ask without a tag to
 * answer on is dropped. */
static int respond(otm_node *node, otm_page_server *s, const otm_page_host_ops *ops,
                   int failed)
{
    const uint8_t *in = s->whole ? s->in : s->head;
    uint64_t got = s->whole ? s->in_len : OTM_PAGE_ASK_HEAD;
    uint64_t value = 0, payload = 0;
    int64_t tag = s->in_len >= 12 && got >= 12 && get32(in) == OTM_PAGE_MAGIC
                      ? (int64_t)get32(in + 8) : -1;
    s->state = 0;
    if (!reply_tag_ok(node, tag)) {
        s->dropped++;
        otm__log(node, OTM_LOG_WARN, "dropped a page ask from rank %d that names no "
                 "reply tag", s->src);
        return 1;
    }
    uint16_t kind = 0;
    otm_status st = judge(s, in, failed);
    if (st == OTM_OK) {
        memcpy(&kind, in + 6, 2);
        st = answer(node, s, ops, kind, &value, &payload);
    }
    if (st == OTM_OK)
        s->served[kind]++;
    else
        s->refused++, payload = 0;
    if (room(node, &s->out, &s->out_cap, OTM_PAGE_REPLY_HEAD))
        return 1;       /* no memory for even a header: the call times out */
    put32(s->out, OTM_PAGE_MAGIC);
    put32(s->out + 4, (uint32_t)st);
    put64(s->out + 8, value);
    if (MPI_Isend(s->out, (int)(OTM_PAGE_REPLY_HEAD + payload), MPI_BYTE, s->src, (int)tag,
                  node->pages, &s->req) != MPI_SUCCESS)
        return s->req = MPI_REQUEST_NULL, 1;
    s->state = 2;
    return 1;
}

int otm_page_serve(otm_node *node, otm_page_server *s, const otm_page_host_ops *ops)
{
    int flag = 0;
    MPI_Status st;
    if (s->state == 0)
        return take(node, s);
    int r = MPI_Test(&s->req, &flag, &st);
    if (r == MPI_SUCCESS && !flag)
        return 0;
    if (s->state == 2) {
        s->state = 0;
        return 1;
    }
    return respond(node, s, ops, r != MPI_SUCCESS);
}

void otm_page_server_fini(otm_node *node, otm_page_server *s)
{
    if (held(s->req)) {
        if (s->state == 1)
            MPI_Cancel(&s->req);
        MPI_Request_free(&s->req);
    }
    otm__free(node, s->in);
    otm__free(node, s->out);
    *s = (otm_page_server){0};
}
