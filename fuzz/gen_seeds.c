/*
 * gen_seeds.c - writes the seed notifications of fuzz_gate: one valid
 * notification of each kind the worker serves, encoded with
 * otm_wire_put_notify (so the seeds follow the wire format if it changes),
 * plus a few malformed ones. Usage: gen_seeds DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "otm/event.h"
#include "otm/wire.h"

static int put(const char *dir, const char *name, const otm_notify *n,
               const uint8_t *payload, size_t extra)
{
    uint8_t buf[OTM_WIRE_NOTIFY_SIZE + 256] = {0};
    char path[512];
    otm_wire_put_notify(buf, n);
    if (payload)
        memcpy(buf + OTM_WIRE_NOTIFY_SIZE, payload, n->inline_len);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return perror(path), 1;
    size_t len = OTM_WIRE_NOTIFY_SIZE + n->inline_len + extra;
    int bad = fwrite(buf, 1, len, f) != len;
    return fclose(f) || bad;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return fprintf(stderr, "usage: %s DIR\n", argv[0]), 2;
    const char *d = argv[1];
    uint8_t pay[64];
    for (size_t i = 0; i < sizeof pay; i++)
        pay[i] = (uint8_t)i;
    otm_notify base = {.version = OTM_WIRE_VERSION, .tag = OTM_TAG_FIRST + 3,
                       .comm = 1, .id = 7, .peer = -1};
    otm_notify n;
    int rc = 0;
#define SEED(name, ...) (n = base, __VA_ARGS__, rc |= put(d, name, &n, pay, 0))
    SEED("alloc", n.kind = OTM_KIND_ALLOC, n.p.alloc.size = 64);
    SEED("alloc-huge", n.kind = OTM_KIND_ALLOC, n.p.alloc.size = 1ull << 62);
    SEED("delete-wild", n.kind = OTM_KIND_DELETE, n.p.del.addr = 0x1000);
    SEED("submit-inline", n.kind = OTM_KIND_SUBMIT, n.p.submit.addr = 0x1000, n.p.submit.size = 4,
         n.p.submit.frag = 4, n.inline_len = 4);
    SEED("submit-frags", n.kind = OTM_KIND_SUBMIT, n.p.submit.addr = 0x1000, n.p.submit.size = 16,
         n.p.submit.frag = 4);
    SEED("retrieve", n.kind = OTM_KIND_RETRIEVE, n.p.retrieve.addr = 0x1000, n.p.retrieve.size = 8,
         n.p.retrieve.frag = 4, n.p.retrieve.inline_max = 4);
    /* A RETRIEVE chained behind an event that already ended (none lives
     * on that tag), and an EXECUTE that may not be chained. */
    SEED("retrieve-after", n.kind = OTM_KIND_RETRIEVE, n.p.retrieve.addr = 0x1000,
         n.p.retrieve.size = 8, n.p.retrieve.frag = 4, n.p.retrieve.inline_max = 4,
         n.after = OTM_TAG_FIRST + 1);
    SEED("execute-after", n.kind = OTM_KIND_EXECUTE, n.p.execute.kernel = 0x1234,
         n.after = OTM_TAG_FIRST + 1);
    SEED("exchange-send", n.kind = OTM_KIND_EXCHANGE, n.p.exchange.src = 0x1000, n.p.exchange.dst = 0x2000,
         n.p.exchange.size = 8, n.p.exchange.frag = 4, n.peer = 1, n.flags = OTM_XCHG_SEND);
    SEED("exchange-local", n.kind = OTM_KIND_EXCHANGE, n.p.exchange.src = 0x1000,
         n.p.exchange.dst = 0x2000, n.p.exchange.size = 8, n.p.exchange.frag = 4, n.peer = 1, n.flags = OTM_XCHG_LOCAL);
    SEED("execute-args", n.kind = OTM_KIND_EXECUTE, n.p.execute.kernel = 0x1234, n.p.execute.nargs = 2,
         n.p.execute.teams = 1, n.p.execute.threads = 1, n.inline_len = 32);
    /* LOAD carries its 24-byte image descriptor inline (pay's bytes: an
     * image of no known size and hash). */
    SEED("load", n.kind = OTM_KIND_LOAD, n.p.load.id = 1, n.p.load.entries = 8, n.p.load.frag = 4,
         n.p.load.inline_max = 4096, n.inline_len = OTM_WIRE_LOAD_DESC_SIZE);
    SEED("load-frags", n.kind = OTM_KIND_LOAD, n.p.load.id = 2, n.p.load.entries = 8, n.p.load.frag = 4,
         n.p.load.inline_max = 0, n.inline_len = OTM_WIRE_LOAD_DESC_SIZE);
    SEED("load-send", n.kind = OTM_KIND_LOAD, n.p.load.id = 3, n.p.load.entries = 8, n.p.load.frag = 4,
         n.p.load.inline_max = 64, n.flags = OTM_LOAD_SEND, n.inline_len = OTM_WIRE_LOAD_DESC_SIZE);
    SEED("unload", n.kind = OTM_KIND_UNLOAD, n.p.unload.id = 1);
    /* The worker's proxied units (fuzz_gate's world has two), and one it
     * does not have. */
    SEED("unit-alloc", n.kind = OTM_KIND_ALLOC, n.p.alloc.size = 64, n.unit = 1);
    SEED("unit-submit-frags", n.kind = OTM_KIND_SUBMIT, n.p.submit.addr = 0xa000010000000000ull,
         n.p.submit.size = 16, n.p.submit.frag = 4, n.unit = 1);
    SEED("unit-retrieve", n.kind = OTM_KIND_RETRIEVE, n.p.retrieve.addr = 0xa000020000000000ull,
         n.p.retrieve.size = 8, n.p.retrieve.frag = 4, n.p.retrieve.inline_max = 4, n.unit = 2);
    SEED("unit-exchange-local", n.kind = OTM_KIND_EXCHANGE, n.p.exchange.src = 0xa000010000000000ull,
         n.p.exchange.dst = 0xa000020000000000ull, n.p.exchange.size = 8, n.p.exchange.frag = 4,
         n.peer = 1, n.flags = OTM_XCHG_LOCAL, n.unit = 1, n.peer_unit = 2);
    SEED("unit-load", n.kind = OTM_KIND_LOAD, n.p.load.id = 4, n.p.load.entries = 8, n.p.load.frag = 4,
         n.p.load.inline_max = 4096, n.inline_len = OTM_WIRE_LOAD_DESC_SIZE, n.unit = 2);
    SEED("unit-missing", n.kind = OTM_KIND_ALLOC, n.p.alloc.size = 8, n.unit = 9);
    SEED("ping", n.kind = OTM_KIND_PING);
    SEED("bad-version", n.kind = OTM_KIND_ALLOC, n.version = OTM_WIRE_VERSION + 1);
    SEED("bad-kind", n.kind = 99);
    SEED("sync-kind", n.kind = OTM_KIND_SYNC);
    SEED("exit-bad-version", n.kind = OTM_KIND_EXIT, n.tag = OTM_TAG_EXIT,
         n.comm = 0, n.version = 0);
    SEED("comm-out-of-range", n.kind = OTM_KIND_ALLOC, n.comm = 64);
    SEED("tag-control", n.kind = OTM_KIND_ALLOC, n.tag = OTM_TAG_CONTROL);
    n = base, n.kind = OTM_KIND_ALLOC, n.p.alloc.size = 8;
    rc |= put(d, "trailing", &n, NULL, 5);
    /* Inline length larger than what follows. */
    n = base, n.kind = OTM_KIND_SUBMIT, n.p.submit.size = 4, n.p.submit.frag = 4, n.inline_len = 10;
    FILE *f;
    char path[512];
    snprintf(path, sizeof path, "%s/short-inline", d);
    if ((f = fopen(path, "wb"))) {
        uint8_t hdr[OTM_WIRE_NOTIFY_SIZE];
        otm_wire_put_notify(hdr, &n);
        fwrite(hdr, 1, sizeof hdr, f);
        fwrite("ab", 1, 2, f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/garbage", d);
    if ((f = fopen(path, "wb"))) {
        fwrite("hello gate", 1, 10, f);
        fclose(f);
    }
    return rc;
}
