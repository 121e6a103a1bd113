/* wire.c - encoding and decoding of notifications and replies. */
#include "otm/wire.h"

#include <string.h>

/* Explicit little-endian stores: the layout must not depend on struct
 * padding or on the compiler. */
static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* The four parameter words of a kind's view, in field order. */
static void params_to_words(uint16_t kind, const otm_params *p, uint64_t w[4])
{
    memset(w, 0, 4 * sizeof *w);
    switch (kind) {
    case OTM_KIND_ALLOC: w[0] = p->alloc.size; w[1] = p->alloc.alloc_kind; break;
    case OTM_KIND_DELETE: w[0] = p->del.addr; break;
    case OTM_KIND_SUBMIT:
        w[0] = p->submit.addr; w[1] = p->submit.size; w[2] = p->submit.frag;
        break;
    case OTM_KIND_RETRIEVE:
        w[0] = p->retrieve.addr; w[1] = p->retrieve.size;
        w[2] = p->retrieve.frag; w[3] = p->retrieve.inline_max;
        break;
    case OTM_KIND_EXCHANGE:
        w[0] = p->exchange.src; w[1] = p->exchange.dst;
        w[2] = p->exchange.size; w[3] = p->exchange.frag;
        break;
    case OTM_KIND_EXECUTE:
        w[0] = p->execute.kernel; w[1] = p->execute.nargs;
        w[2] = p->execute.teams; w[3] = p->execute.threads;
        break;
    case OTM_KIND_LOAD:
        w[0] = p->load.id; w[1] = p->load.entries;
        w[2] = p->load.frag; w[3] = p->load.inline_max;
        break;
    case OTM_KIND_UNLOAD: w[0] = p->unload.id; break;
    default: break;
    }
}

static void words_to_params(uint16_t kind, const uint64_t w[4], otm_params *p)
{
    memset(p, 0, sizeof *p);
    switch (kind) {
    case OTM_KIND_ALLOC: p->alloc.size = w[0]; p->alloc.alloc_kind = w[1]; break;
    case OTM_KIND_DELETE: p->del.addr = w[0]; break;
    case OTM_KIND_SUBMIT:
        p->submit.addr = w[0]; p->submit.size = w[1]; p->submit.frag = w[2];
        break;
    case OTM_KIND_RETRIEVE:
        p->retrieve.addr = w[0]; p->retrieve.size = w[1];
        p->retrieve.frag = w[2]; p->retrieve.inline_max = w[3];
        break;
    case OTM_KIND_EXCHANGE:
        p->exchange.src = w[0]; p->exchange.dst = w[1];
        p->exchange.size = w[2]; p->exchange.frag = w[3];
        break;
    case OTM_KIND_EXECUTE:
        p->execute.kernel = w[0]; p->execute.nargs = w[1];
        p->execute.teams = w[2]; p->execute.threads = w[3];
        break;
    case OTM_KIND_LOAD:
        p->load.id = w[0]; p->load.entries = w[1];
        p->load.frag = w[2]; p->load.inline_max = w[3];
        break;
    case OTM_KIND_UNLOAD: p->unload.id = w[0]; break;
    default: break;
    }
}

void otm_wire_put_notify(uint8_t *buf, const otm_notify *n)
{
    put32(buf, OTM_WIRE_NOTIFY_MAGIC);
    buf[4] = (uint8_t)n->version;
    buf[5] = (uint8_t)(n->version >> 8);
    buf[6] = (uint8_t)n->kind;
    buf[7] = (uint8_t)(n->kind >> 8);
    put32(buf + 8, n->tag);
    put32(buf + 12, n->comm);
    put64(buf + 16, n->id);
    uint64_t w[4];
    params_to_words(n->kind, &n->p, w);
    for (int i = 0; i < 4; i++)
        put64(buf + 24 + 8 * i, w[i]);
    put32(buf + 56, (uint32_t)n->peer);
    put32(buf + 60, n->flags);
    put32(buf + 64, n->inline_len);
    put32(buf + 68, n->after);
    buf[72] = (uint8_t)n->unit;
    buf[73] = (uint8_t)(n->unit >> 8);
    buf[74] = (uint8_t)n->peer_unit;
    buf[75] = (uint8_t)(n->peer_unit >> 8);
    put32(buf + 76, 0);
}

otm_status otm_wire_get_notify(const uint8_t *buf, size_t len, otm_notify *n)
{
    memset(n, 0, sizeof *n);
    if (len < 16 || get32(buf) != OTM_WIRE_NOTIFY_MAGIC)
        return OTM_ERR_BAD_MESSAGE;
    n->version = (uint16_t)(buf[4] | buf[5] << 8);
    n->kind = (uint16_t)(buf[6] | buf[7] << 8);
    n->tag = get32(buf + 8);
    n->comm = get32(buf + 12);
    n->routable = 1;
    if (n->version != OTM_WIRE_VERSION)
        return OTM_ERR_BAD_VERSION;
    if (len < OTM_WIRE_NOTIFY_SIZE)
        return OTM_ERR_BAD_MESSAGE;
    n->id = get64(buf + 16);
    uint64_t w[4];
    for (int i = 0; i < 4; i++)
        w[i] = get64(buf + 24 + 8 * i);
    words_to_params(n->kind, w, &n->p);
    n->peer = (int32_t)get32(buf + 56);
    n->flags = get32(buf + 60);
    n->inline_len = get32(buf + 64);
    n->after = get32(buf + 68);
    n->unit = (uint16_t)(buf[72] | buf[73] << 8);
    n->peer_unit = (uint16_t)(buf[74] | buf[75] << 8);
    if ((size_t)n->inline_len != len - OTM_WIRE_NOTIFY_SIZE)
        return OTM_ERR_BAD_MESSAGE;
    n->inline_data = buf + OTM_WIRE_NOTIFY_SIZE;
    return OTM_OK;
}

void otm_wire_put_reply(uint8_t *buf, const otm_reply *r)
{
    put32(buf, OTM_WIRE_REPLY_MAGIC);
    put32(buf + 4, (uint32_t)r->status);
    put64(buf + 8, r->value);
    put32(buf + 16, r->inline_len);
    put32(buf + 20, 0);
}

otm_status otm_wire_get_reply(const uint8_t *buf, size_t len, otm_reply *r)
{
    memset(r, 0, sizeof *r);
    if (len < OTM_WIRE_REPLY_SIZE || get32(buf) != OTM_WIRE_REPLY_MAGIC)
        return OTM_ERR_BAD_MESSAGE;
    r->status = (int32_t)get32(buf + 4);
    r->value = get64(buf + 8);
    r->inline_len = get32(buf + 16);
    if (!otm_status_valid(r->status) ||
        (size_t)r->inline_len != len - OTM_WIRE_REPLY_SIZE)
        return OTM_ERR_BAD_MESSAGE;
    r->inline_data = buf + OTM_WIRE_REPLY_SIZE;
    return OTM_OK;
}

void otm_wire_put_exec(uint8_t *buf, const otm_exec_result *r)
{
    put64(buf, r->out_len);
    put64(buf + 8, r->err_len);
    put32(buf + 16, (uint32_t)r->signo);
    put32(buf + 20, (uint32_t)r->code);
    put64(buf + 24, r->addr);
    put32(buf + 32, (uint32_t)r->exit_status);
    put32(buf + 36, r->flags);
}

otm_status otm_wire_get_exec(const uint8_t *buf, size_t len, otm_exec_result *r)
{
    memset(r, 0, sizeof *r);
    if (len < OTM_WIRE_EXEC_HEAD)
        return OTM_ERR_BAD_MESSAGE;
    r->out_len = get64(buf);
    r->err_len = get64(buf + 8);
    r->signo = (int32_t)get32(buf + 16);
    r->code = (int32_t)get32(buf + 20);
    r->addr = get64(buf + 24);
    r->exit_status = (int32_t)get32(buf + 32);
    r->flags = get32(buf + 36);
    uint64_t rest = len - OTM_WIRE_EXEC_HEAD;
    if (r->out_len > rest || r->err_len != rest - r->out_len)
        return OTM_ERR_BAD_MESSAGE;
    r->out = buf + OTM_WIRE_EXEC_HEAD;
    r->err = r->out + r->out_len;
    return OTM_OK;
}

uint64_t otm_wire_hash(const void *buf, size_t len, uint64_t seed)
{
    const uint8_t *p = buf;
    uint64_t h = seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
