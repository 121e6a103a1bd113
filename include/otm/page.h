/*
 * otm/page.h - the page protocol of unified shared memory: a worker asks
 * rank 0 for its address ranges, for one page of its memory, or to write
 * back what a region changed; rank 0 answers from its own memory.
 *
 * The asks go the other way from events (worker to host), so they have a
 * communicator of their own (node->pages, duplicated at set-up by every
 * rank): asks on tag OTM_PAGE_TAG_ASK, each answered on the reply tag it
 * names. A worker posts the receive of the answer before it sends the ask,
 * and a reply tag names one call in flight: the caller keeps them apart.
 * The host serves one ask at a time, in the order they arrive, so writes
 * sent one after the other by one worker land in that order.
 *
 * Wire format, little-endian, all of it in one message each way:
 *
 *   ask (worker -> host)                reply (host -> worker)
 *    0  4  magic OTM_PAGE_MAGIC           0  4  magic
 *    4  2  version OTM_PAGE_VERSION       4  4  otm_status
 *    6  2  kind (otm_page_kind)           8  8  value (below)
 *    8  4  reply tag                     16  ..  payload
 *   12  4  0
 *   16  8  addr
 *   24  8  len
 *   32  ..  payload
 *
 *   RANGES: len = the most ranges the worker takes; the reply's value is
 *           how many the host has, its payload that many (start, end)
 *           pairs of 64-bit words (start's low bit set: the host keeps the
 *           range read-only, otm/pager.h; since version 2), or none with
 *           OTM_ERR_BAD_SIZE when they are more than len (ask again with
 *           room).
 *   READ:   addr, len = the bytes (at most OTM_PAGE_READ_MAX); the reply
 *           carries them (value = len), or OTM_ERR_BAD_POINTER when rank 0
 *           has no such memory.
 *   WRITE:  the payload is records (addr 8, len 8, then len bytes), len
 *           its length (at most OTM_PAGE_WRITE_MAX); the reply's value is
 *           the bytes written: all, or those before the first record that
 *           does not land in writable memory (OTM_ERR_BAD_POINTER) or
 *           does not fit the payload (OTM_ERR_BAD_MESSAGE).
 *
 * An ask that does not decode is answered OTM_ERR_BAD_VERSION,
 * OTM_ERR_BAD_KIND or OTM_ERR_BAD_MESSAGE when its reply tag is in range,
 * else dropped with a log line; the host serves the next either way.
 */
#ifndef OTM_PAGE_H
#define OTM_PAGE_H

#include <stdint.h>

#include "otm/node.h"

#define OTM_PAGE_MAGIC 0x504d544fu      /* "OTMP" */
#define OTM_PAGE_VERSION 2u
#define OTM_PAGE_ASK_HEAD 32u
#define OTM_PAGE_REPLY_HEAD 16u
#define OTM_PAGE_TAG_ASK 0
#define OTM_PAGE_TAG_FIRST 1            /* the lowest reply tag */
#define OTM_PAGE_READ_MAX (2u << 20)
#define OTM_PAGE_WRITE_MAX (16u << 20)
#define OTM_PAGE_RANGES_MAX (1u << 16)
#define OTM_PAGE_RECORD_HEAD 16u

typedef enum otm_page_kind {
    OTM_PAGE_RANGES = 1,
    OTM_PAGE_READ = 2,
    OTM_PAGE_WRITE = 3,
    OTM_PAGE_KIND_END
} otm_page_kind;

/* ---- the worker's side: one call ----------------------------------------- */

typedef struct otm_page_call {
    MPI_Request recv, send;
    uint8_t *reply;
    uint64_t reply_cap;
    int got;                /* the reply's bytes once received, else -1:
                             * MPI may say the ask was sent only after
                             * the reply came, at a later test */
} otm_page_call;

/* Starts a call: writes the ask's header into ask[0..OTM_PAGE_ASK_HEAD),
 * before the `payload` bytes the caller placed after it, posts the
 * receive of the reply (at most reply_cap bytes, header included) on
 * `tag`, then sends the ask. Both buffers must live until the call ends.
 * OTM_ERR_INVALID for a bad kind, tag or size; OTM_ERR_MPI (nothing left
 * posted) when MPI refuses. */
otm_status otm_page_call_start(otm_node *node, otm_page_call *c, otm_page_kind kind,
                               int tag, uint64_t addr, uint64_t len, uint8_t *ask,
                               uint64_t payload, uint8_t *reply, uint64_t reply_cap);

/* 0 while the call is in flight. 1 once it ended: *st is the host's
 * status (OTM_ERR_BAD_MESSAGE for a reply that does not decode,
 * OTM_ERR_MPI when MPI failed it), *value the reply's value; the payload
 * is at reply + OTM_PAGE_REPLY_HEAD. */
int otm_page_call_test(otm_node *node, otm_page_call *c, otm_status *st,
                       uint64_t *value);

/* Gives up a call in flight (the worker's end): the receive is
 * cancelled, the send left to complete. */
void otm_page_call_cancel(otm_node *node, otm_page_call *c);

/* ---- the host's side ----------------------------------------------------- */

/* How rank 0 reaches its own memory (otm/pager.h's host end in the
 * plugin, a buffer in the tests). Addresses come from a peer. */
typedef struct otm_page_host_ops {
    otm_status (*read)(void *ctx, uint64_t addr, void *dst, uint64_t len);
    otm_status (*write)(void *ctx, uint64_t addr, const void *src, uint64_t len);
    /* Up to cap (start, end) pairs into dst, *count = how many there are;
     * OTM_ERR_BAD_SIZE when more than cap. */
    otm_status (*ranges)(void *ctx, uint64_t *dst, uint64_t cap, uint64_t *count);
    void *ctx;
} otm_page_host_ops;

typedef struct otm_page_server {
    int state;                  /* 0 waiting for an ask, 1 receiving, 2 replying */
    MPI_Request req;
    uint8_t *in, *out;
    uint64_t in_cap, out_cap, in_len;
    uint8_t head[OTM_PAGE_ASK_HEAD];    /* an ask received in part */
    int src, whole, nomem;
    uint64_t served[OTM_PAGE_KIND_END];     /* asks answered OTM_OK, by kind */
    uint64_t refused;                       /* asks answered with an error */
    uint64_t dropped;                       /* asks with no tag to answer on */
} otm_page_server;

/* One step of the host's server: takes an ask, or finishes receiving one
 * (and answers it), or finishes sending the answer. Returns 1 when it
 * moved, 0 when it waits. Never blocks. OTM_ERR_NOMEM for an ask turns
 * into the answer OTM_ERR_NOMEM. */
int otm_page_serve(otm_node *node, otm_page_server *s, const otm_page_host_ops *ops);

/* Frees the server's buffers; a request in flight is cancelled or left
 * to complete. */
void otm_page_server_fini(otm_node *node, otm_page_server *s);

#endif
