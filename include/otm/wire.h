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
 *   24  32   a[4]     kind-specific parameters (see otm/event.h)
 *   56   4   peer     a second worker rank (EXCHANGE), else -1
 *   60   4   flags    kind-specific
 *   64   4   inline   bytes of inline payload that follow
 *   68   4   reserved 0
 *   72   -   inline payload
 *
 * The first 16 bytes (magic, version, kind, tag, comm) keep their meaning in
 * every future version, so a worker can answer a notification of a version
 * it does not speak on the right (communicator, tag).
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
 * Decoding never trusts a length field: it is checked against the number
 * of bytes actually received.
 */
#ifndef OTM_WIRE_H
#define OTM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "otm/status.h"

#define OTM_WIRE_VERSION 1u
#define OTM_WIRE_NOTIFY_MAGIC 0x4e4d544fu   /* "OTMN" */
#define OTM_WIRE_REPLY_MAGIC 0x524d544fu    /* "OTMR" */
#define OTM_WIRE_NOTIFY_SIZE 72u
#define OTM_WIRE_REPLY_SIZE 24u
/* Control tags. Notifications travel on OTM_TAG_CONTROL (control
 * communicator). EXIT talks on OTM_TAG_EXIT of event communicator 0: it is
 * sent once per worker, and must get through even when every event tag is
 * in use or retired. Event tags start at OTM_TAG_FIRST. */
#define OTM_TAG_CONTROL 0
#define OTM_TAG_EXIT 1
#define OTM_TAG_FIRST 2

typedef struct otm_notify {
    uint16_t version;
    uint16_t kind;
    uint32_t tag;
    uint32_t comm;
    uint64_t id;
    uint64_t a[4];
    int32_t peer;
    uint32_t flags;
    uint32_t inline_len;
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

#endif
