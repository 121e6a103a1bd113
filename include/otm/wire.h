/*
 * otm/wire.h - the bytes that travel between ranks.
 *
 * Two message layouts exist, both little-endian with fixed offsets (encoded
 * field by field, never by copying structs, so padding never leaks):
 *
 * Notification (host -> worker gate, control communicator, OTM_TAG_CONTROL).
 * It is the event's only header: it announces the event and carries all of
 * its parameters, plus small payloads inline, so a small event costs one
 * message each way.
 *
 *   off size field
 *    0   4   magic    OTM_WIRE_NOTIFY_MAGIC
 *    4   2   version  OTM_WIRE_VERSION
 *    6   2   kind     otm_kind
 *    8   4   tag      the event's tag on its communicator
 *   12   4   comm     index into the pool of event communicators
 *   16   8   id       the origin's event id (for logs and traces)
 *   24  32   params   four 64-bit words: otm_params, by kind (below)
 *   56   4   peer     a second worker rank (EXCHANGE), else -1
 *   60   4   flags    kind-specific
 *   64   4   inline   bytes of inline payload that follow
 *   68   4   after    0, or the tag (on the same communicator) of the
 *                     event this one runs behind (below)
 *   72   2   unit     which of the worker's devices serves it (below)
 *   74   2   peer_unit  EXCHANGE: the device at the other end
 *   76   4   reserved 0
 *   80   -   inline payload
 *
 * The first 16 bytes (magic, version, kind, tag, comm) keep their meaning in
 * every future version, so a worker can answer a notification of a version
 * it does not speak on the right (communicator, tag).
 *
 * `unit` and `peer_unit` (version 4): a worker rank serves several OpenMP
 * devices, its units: unit 0 is its own CPU (its process's memory), units
 * 1 and up the devices of the plugins it proxies (an accelerator's memory,
 * which the worker reaches only through that plugin). Every kind names the
 * unit it works on; EXCHANGE names both ends (the other rank's for SEND
 * and RECV, this rank's for LOCAL).
 *
 * `after` (version 3) lets the host send a SUBMIT, EXECUTE or RETRIEVE
 * while the event before it in its queue still runs: the worker holds it
 * until that event is done with device memory (a SUBMIT's data landed, an
 * EXECUTE's kernel ran, a RETRIEVE ended), so the round trips overlap. It
 * names that event by its tag on this event's own communicator; an event
 * of another kind with it is malformed.
 *
 * Reply (destination -> origin, on the event's communicator and tag). It
 * carries the completion status, so a failure on the worker reaches the
 * host as a value:
 *
 *    0   4   magic    OTM_WIRE_REPLY_MAGIC
 *    4   4   status   otm_status
 *    8   8   value    kind-specific result (an address, a count)
 *   16   4   inline   bytes of inline payload that follow
 *   20   4   reserved 0
 *   24   -   inline payload
 *
 * Two kinds carry a small record of their own in their payload:
 *
 * LOAD's descriptor (the notification's inline payload, 24 bytes): the
 * image's size, its otm_wire_hash, and the otm_wire_hash over the host's
 * entry names (each name with its NUL, in table order). With OTM_LOAD_SEND
 * in flags, the image's bytes follow the notification in fragments;
 * without it the worker uses its own copy of the image, found by size and
 * hash (one it registered at start-up), or answers OTM_ERR_NO_IMAGE.
 * With OTM_LOAD_USM the program requires unified shared memory: from then
 * on the worker serves its regions rank 0's pages (otm/pager.h).
 *
 * EXECUTE's result (the reply's payload, present when the reply's value,
 * its length, is not 0): what the region wrote to stdout and stderr and,
 * for OTM_ERR_KERNEL_FAULT, how it died. Up to OTM_EXEC_INLINE_MAX bytes
 * travel inline; a longer one follows the reply in fragments of
 * OTM_EXEC_FRAG bytes (protocol constants: both sides know them).
 *
 *    0   8   stdout bytes that follow (n1)
 *    8   8   stderr bytes that follow (n2)
 *   16   4   signal (0: none, or exit() when exit flag is set)
 *   20   4   si_code
 *   24   8   faulting address
 *   32   4   exit status, when the region called exit()
 *   36   4   flags: OTM_EXEC_FAULTED, OTM_EXEC_EXITED, OTM_EXEC_FOREIGN,
 *               OTM_EXEC_PAGE_REFUSED
 *   40   -   n1 bytes of stdout, then n2 bytes of stderr
 *
 * Decoding never trusts a length field: it is checked against the number
 * of bytes actually received.
 */
#ifndef OTM_WIRE_H
#define OTM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "otm/status.h"

#define OTM_WIRE_VERSION 4u
#define OTM_WIRE_NOTIFY_MAGIC 0x4e4d544fu   /* "OTMN" */
#define OTM_WIRE_REPLY_MAGIC 0x524d544fu    /* "OTMR" */
#define OTM_WIRE_NOTIFY_SIZE 80u
#define OTM_WIRE_REPLY_SIZE 24u
/* Control tags. Notifications travel on OTM_TAG_CONTROL (control
 * communicator). EXIT talks on OTM_TAG_EXIT of event communicator 0: it is
 * sent once per worker, and must get through even when every event tag is
 * in use or retired. Event tags start at OTM_TAG_FIRST. */
#define OTM_TAG_CONTROL 0
#define OTM_TAG_EXIT 1
#define OTM_TAG_FIRST 2

#define OTM_WIRE_LOAD_DESC_SIZE 24u
#define OTM_LOAD_SEND 1u            /* LOAD flags: the image's bytes follow */
#define OTM_LOAD_USM 2u             /* the program uses unified shared memory */
#define OTM_WIRE_EXEC_HEAD 40u
#define OTM_EXEC_INLINE_MAX 4096u
#define OTM_EXEC_FRAG (1u << 20)
#define OTM_EXEC_FAULTED 1u         /* a fault signal ended the region */
#define OTM_EXEC_EXITED 2u          /* the region called exit() */
#define OTM_EXEC_FOREIGN 4u         /* on another thread of the region */
/* The faulting address lies in a page of rank 0's that the device rank
 * could not place (out of memory, rank 0 not answering: its line in the
 * region's output says why), under unified shared memory. */
#define OTM_EXEC_PAGE_REFUSED 8u

/* The kinds of event (otm/event.h says what each does). */
typedef enum otm_kind {
    OTM_KIND_ALLOC = 1,
    OTM_KIND_DELETE,
    OTM_KIND_SUBMIT,
    OTM_KIND_RETRIEVE,
    OTM_KIND_EXCHANGE,
    OTM_KIND_EXECUTE,
    OTM_KIND_SYNC,
    OTM_KIND_EXIT,
    OTM_KIND_LOAD,
    OTM_KIND_UNLOAD,
    OTM_KIND_PING,          /* added in version 2 without a bump: an older
                             * worker answers it as an unknown kind, which
                             * is an answer all the same */
    OTM_KIND_END            /* one past the last valid kind */
} otm_kind;

/* The parameters of a notification, one view per kind; otm/event.h says
 * what each field means. Only this layer knows how a view sits in the
 * four parameter words (in field order, unused words 0), so a decoded
 * notification is read by name everywhere else. EXIT has none. */
typedef union otm_params {
    struct { uint64_t size, alloc_kind; } alloc;
    struct { uint64_t addr; } del;
    struct { uint64_t addr, size, frag; } submit;
    struct { uint64_t addr, size, frag, inline_max; } retrieve;
    struct { uint64_t src, dst, size, frag; } exchange;
    struct { uint64_t kernel, nargs, teams, threads; } execute;
    struct { uint64_t id, entries, frag, inline_max; } load;
    struct { uint64_t id; } unload;
} otm_params;

typedef struct otm_notify {
    uint16_t version;
    uint16_t kind;
    uint32_t tag;
    uint32_t comm;
    uint64_t id;
    otm_params p;                /* by kind; zero for an unknown kind */
    int32_t peer;
    uint32_t flags;
    uint32_t inline_len;
    uint32_t after;              /* the tag of the event it runs behind, 0 */
    uint16_t unit;               /* the worker's device that serves it */
    uint16_t peer_unit;          /* EXCHANGE: the device at the other end */
    const uint8_t *inline_data;  /* points into the decoded buffer */
    int routable;                /* tag, comm and kind were read */
} otm_notify;

typedef struct otm_reply {
    int32_t status;
    uint64_t value;
    uint32_t inline_len;
    const uint8_t *inline_data;  /* points into the decoded buffer */
} otm_reply;

/* Writes the notification header into buf (>= OTM_WIRE_NOTIFY_SIZE bytes);
 * the caller copies n->inline_len payload bytes after it. The version field
 * of `n` is written as given (tests send wrong versions on purpose). */
void otm_wire_put_notify(uint8_t *buf, const otm_notify *n);

/* Decodes `len` received bytes. On success fills *n (inline_data points
 * into buf). Errors, in the order they are checked:
 *   OTM_ERR_BAD_MESSAGE  fewer than 16 bytes, or bad magic
 *   OTM_ERR_BAD_VERSION  version != OTM_WIRE_VERSION (tag/comm/kind valid)
 *   OTM_ERR_BAD_MESSAGE  shorter than the header, or inline length not
 *                        equal to the bytes that follow (tag/comm valid)
 * When the error is not the first kind, n->routable is 1 and n->tag,
 * n->comm and n->kind are filled so the caller can answer on the right
 * channel. */
otm_status otm_wire_get_notify(const uint8_t *buf, size_t len, otm_notify *n);

/* Writes a reply header into buf (>= OTM_WIRE_REPLY_SIZE bytes). */
void otm_wire_put_reply(uint8_t *buf, const otm_reply *r);

/* Decodes a reply of `len` bytes: OTM_ERR_BAD_MESSAGE on bad magic, short
 * length or an inline length that does not match; a status outside the enum
 * is reported as OTM_ERR_BAD_MESSAGE too. */
otm_status otm_wire_get_reply(const uint8_t *buf, size_t len, otm_reply *r);

typedef struct otm_exec_result {
    uint64_t out_len, err_len;
    int32_t signo, code;
    uint64_t addr;
    int32_t exit_status;
    uint32_t flags;
    const uint8_t *out, *err;    /* point into the decoded buffer */
} otm_exec_result;

/* Writes the 40-byte head of an EXECUTE result into buf; the caller puts
 * out_len + err_len bytes after it. */
void otm_wire_put_exec(uint8_t *buf, const otm_exec_result *r);

/* Decodes an EXECUTE result of `len` bytes: OTM_ERR_BAD_MESSAGE unless
 * len is the head plus exactly out_len + err_len bytes. */
otm_status otm_wire_get_exec(const uint8_t *buf, size_t len, otm_exec_result *r);

/* A 64-bit hash of `len` bytes (FNV-1a): how the two sides name the same
 * image without sending it. Not a defence against a hostile peer. */
uint64_t otm_wire_hash(const void *buf, size_t len, uint64_t seed);
#define OTM_WIRE_HASH_SEED 0xcbf29ce484222325ull

#endif
