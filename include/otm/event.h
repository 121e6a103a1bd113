/*
 * otm/event.h - the event record and its state machine.
 *
 * An event is one operation between two ranks: the origin (the host, which
 * created it) and the destination (a worker, whose gate created its half
 * from the notification). Each side owns its own record. A record moves only
 * through otm_event_progress, which never blocks: it tests the event's
 * outstanding MPI requests, posts new ones and advances the resume point.
 *
 * States only move forward:
 *   CREATED  -> the origin has not got a tag yet (tags may be exhausted)
 *   RUNNING  -> messages are being posted or moved
 *   WAITING  -> everything is posted; waiting for the last completion
 *   FINISHED | FAILED, with `status` saying why.
 * The resume point (otm_step) says where, inside a state, the next call of
 * progress continues; it is a plain enum so the simulator can print it.
 *
 * Parameters per kind (the view of otm_params named after the kind, in
 * otm/wire.h; then peer and flags):
 *   ALLOC     size, alloc_kind (the libomptarget kind) -> reply value: address
 *   DELETE    addr
 *   SUBMIT    addr (device), size, frag (fragment size); the payload is
 *             inline when it fits, else follows in fragments
 *   RETRIEVE  addr (device), size, frag, inline_max: the largest reply
 *             payload the origin accepts inline; larger data follows the
 *             reply in fragments
 *   EXCHANGE  src, dst (device addresses), size, frag; peer = the other
 *             worker, flags = role (SEND: this worker sends to peer, RECV:
 *             receives from peer, LOCAL: both addresses are on this worker)
 *   EXECUTE   kernel, nargs, teams, threads (the thread limit); inline:
 *             nargs 64-bit argument values then nargs 64-bit offsets;
 *             reply value = bytes of its result (otm/wire.h: the region's
 *             output, how it faulted), inline up to OTM_EXEC_INLINE_MAX,
 *             else in fragments of OTM_EXEC_FRAG after the reply
 *   LOAD      id (the host's number for this load), entries (how many the
 *             host has), frag, inline_max (as for RETRIEVE); flags
 *             OTM_LOAD_SEND when the image's bytes follow; inline: the
 *             image descriptor (otm/wire.h); reply value = number of
 *             entries, payload = entries as (address, size) pairs
 *   UNLOAD    id (of a LOAD); the worker waits until no kernel runs, then
 *             drops the image's entries and unloads it
 *   EXIT      none; the worker drains its events first, then acknowledges
 *   PING      none; the worker's gate answers at once, whatever runs: the
 *             liveness probe of a host event waiting for a kernel
 *             (liveness.c), never the user's
 *   SYNC      host-local: finishes when the event it waits on has ended,
 *             FAILED with OTM_ERR_PEER if that one failed.
 *
 * Chained events. A queue runs its events in order, but a SUBMIT, EXECUTE
 * or RETRIEVE behind another of these three kinds on the same worker
 * starts as soon as that one announced itself (otm_queue_progress; up to
 * 8 behind the head): its notification names it (`after` in otm/wire.h).
 * The worker holds the event until the one ahead is done with device
 * memory (a SUBMIT's data landed, an EXECUTE's kernel ran, a RETRIEVE
 * ended); the host ends it only after the one ahead ended, and fails it
 * (OTM_ERR_PEER) when that one failed on the host's own account (timeout,
 * lost worker, MPI), since its worker may never answer. So a region's
 * transfers and its kernel cost one round trip instead of one each.
 */
#ifndef OTM_EVENT_H
#define OTM_EVENT_H

#include <stdint.h>

#include <mpi.h>

#include "otm/config.h"
#include "otm/frag.h"
#include "otm/status.h"
#include "otm/wire.h"

typedef enum otm_side { OTM_ORIGIN = 0, OTM_DEST = 1 } otm_side;

typedef enum otm_state {
    OTM_CREATED = 0,
    OTM_RUNNING,
    OTM_WAITING,
    OTM_FINISHED,
    OTM_FAILED
} otm_state;

/* Resume points. Each kind uses the subset its state machine needs. */
typedef enum otm_step {
    OTM_AT_START = 0,       /* origin: get a tag; dest: validate */
    OTM_AT_NOTIFY,          /* origin: notification(s) posted */
    OTM_AT_PREAMBLE,        /* exchange: source -> destination status */
    OTM_AT_PAYLOAD,         /* fragments moving */
    OTM_AT_RUN,             /* dest: call the device (kernel, alloc...) */
    OTM_AT_DRAIN,           /* exit: waiting for the worker's other events */
    OTM_AT_REPLY,           /* reply posted / awaited */
    OTM_AT_REPLY_DATA,      /* origin: fragments after the reply */
    OTM_AT_CANCEL,          /* failing: waiting for cancelled requests */
    OTM_AT_END
} otm_step;

typedef enum otm_exchange_role {
    OTM_XCHG_SEND = 0,
    OTM_XCHG_RECV = 1,
    OTM_XCHG_LOCAL = 2
} otm_exchange_role;

/* Request slots of an event. The reply slot also serves the exchange
 * preamble; FRAG slots form the window of fragments in flight. */
enum {
    OTM_SLOT_NOTIFY = 0,    /* origin: the notification to the worker */
    OTM_SLOT_NOTIFY2,       /* origin: second notification (EXCHANGE) */
    OTM_SLOT_REPLY,         /* the reply (sent by dest, received by origin) */
    OTM_SLOT_REPLY2,        /* origin: second reply (EXCHANGE) */
    OTM_SLOT_PREAMBLE,      /* exchange: source -> destination */
    OTM_SLOT_FRAG0,         /* first of OTM_WINDOW_MAX fragment slots */
};
#define OTM_SLOTS (OTM_SLOT_FRAG0 + OTM_WINDOW_MAX)

typedef struct otm_node otm_node;
typedef struct otm_queue otm_queue;
typedef struct otm_event otm_event;

/* LOAD: which image, and whether its bytes travel. */
typedef struct otm_image_ref {
    uint64_t id;            /* the host's number for this load */
    const void *bytes;      /* the image (origin: sent when `send`; dest:
                             * the received bytes, or NULL: use your own) */
    uint64_t size;          /* bytes of the image */
    uint64_t hash;          /* otm_wire_hash of the bytes */
    uint64_t names_hash;    /* otm_wire_hash over the host's entry names */
    int send;
    int usm;                /* the program uses unified shared memory: the
                             * device serves its regions the host's pages
                             * (otm/pager.h) */
} otm_image_ref;

/* The most arguments an EXECUTE carries: the host refuses more, and so
 * does a worker's gate. */
#define OTM_MAX_ARGS 4096u

/* What an origin asks for; otm_host_enqueue copies it into an event. */
typedef struct otm_op {
    otm_kind kind;
    int rank;               /* worker that serves it (source for EXCHANGE) */
    int peer;               /* EXCHANGE: destination worker */
    uint16_t unit;          /* the worker's device (source for EXCHANGE):
                             * 0 its own CPU, 1.. those it proxies */
    uint16_t peer_unit;     /* EXCHANGE: the destination's device */
    uint64_t addr;          /* device address (source for EXCHANGE) */
    uint64_t addr2;         /* EXCHANGE: destination address */
    uint64_t size;          /* bytes; ALLOC: bytes to allocate */
    uint64_t arg;           /* ALLOC: kind; EXECUTE: kernel; UNLOAD: id */
    void *host;             /* SUBMIT source / RETRIEVE, LOAD destination */
    otm_image_ref image;    /* LOAD */
    uint64_t *result;       /* ALLOC address, LOAD entry count (optional) */
    uint32_t nargs;         /* EXECUTE: at most OTM_MAX_ARGS */
    const uint64_t *args;   /* EXECUTE: argument values */
    const int64_t *offsets; /* EXECUTE: added to each argument */
    uint64_t teams, threads;
    otm_event *target;      /* SYNC: the event waited on */
} otm_op;

struct otm_event {
    otm_event *next;        /* in its queue */
    otm_event *all_next;    /* in the node's list of live events */
    otm_event **all_prev;
    uint64_t id;
    uint16_t kind;          /* otm_kind */
    uint8_t side;           /* otm_side */
    uint8_t state;          /* otm_state */
    uint8_t step;           /* otm_step */
    uint8_t window;         /* fragment slots in use, <= OTM_WINDOW_MAX */
    uint8_t discard;        /* dest: receive payload into scratch */
    uint8_t flags;          /* EXCHANGE role */
    uint8_t replied;        /* dest: reply posted */
    uint8_t unclean;        /* a protocol error: the tag must be retired */
    uint8_t abandoned;      /* sends detached: buffers may still be read */
    uint8_t claimed;        /* worker: a handler is running this event */
    uint8_t armed;          /* progressed at least once (timeouts run) */
    uint8_t rejected;       /* dest: refused by the gate, answered only */
    uint8_t said;           /* origin: its failure was returned to its
                             * caller: its queue does not record it */
    uint8_t past_run;       /* dest: at its reply or failing: done with
                             * device memory, but for the data a RETRIEVE
                             * sends (atomic: other threads read it) */
    int32_t status;         /* otm_status once ended */
    int refs;               /* queue + external references (record_event) */
    int rank;               /* the peer rank this half talks to */
    int peer;               /* EXCHANGE: the other worker */
    uint16_t unit;          /* the worker's device (otm/wire.h); origin of
                             * an EXCHANGE: the source's */
    uint16_t peer_unit;     /* EXCHANGE: the device at the other end;
                             * origin: the destination's */
    int comm;               /* index into the communicator pool, -1 none */
    int tag;                /* -1 until a tag is held */
    otm_params p;           /* parameters, as in the notification */
    uint64_t value;         /* result carried by the reply */
    void *host;             /* origin: user buffer */
    const uint8_t *payload; /* origin: bytes sent after the notification */
    uint64_t payload_len;
    uint64_t *result;
    uint8_t *msg;           /* notification (origin builds / dest owns) */
    uint32_t msg_len;
    uint8_t *reply;         /* reply buffer */
    uint32_t reply_len;
    uint8_t *scratch;       /* dest: LOAD's image, then what follows the
                             * reply; origin: EXECUTE's result */
    otm_frag_plan plan;
    uint64_t posted;        /* fragments posted */
    uint64_t moved;         /* fragments completed */
    uint64_t last_move;     /* clock value of its last progress (timeouts) */
    otm_event *target;      /* SYNC */
    otm_event *after;       /* origin, chained: the event ahead of it (a
                             * reference), until that one ended */
    uint64_t after_id;      /* dest, chained: the id of the event ahead of
                             * it, 0 when none was live at its arrival */
    otm_event *probe;       /* origin waiting for a kernel: its PING */
    uint64_t alive_at;      /* clock value of the last answer to a probe */
    MPI_Request req[OTM_SLOTS];
    uint64_t trace[3];      /* owned by the trace hook (otm/node.h) */
    uint16_t recv_mask;     /* which slots hold receives */
    uint16_t cancel_mask;   /* receives cancelled while failing */
};

/* Advances `ev` as far as it can without blocking. Returns 1 if anything
 * changed (a request completed or was posted, the step or state moved), 0 if
 * the event is waiting on its peer. Never called on an ended event. */
int otm_event_progress(otm_node *node, otm_event *ev);

/* 1 once the event is FINISHED or FAILED. Safe to call from a thread that
 * does not own the event (the state only grows, stored atomically). */
static inline int otm_event_ended(const otm_event *ev)
{
    return __atomic_load_n(&ev->state, __ATOMIC_ACQUIRE) >= OTM_FINISHED;
}

/* 1 while the event moves payload fragments. MPI advances a large transfer
 * only while a thread polls it, so whoever waits on such an event should
 * not sleep. */
static inline int otm_event_streaming(const otm_event *ev)
{
    return ev->step == OTM_AT_PAYLOAD || ev->step == OTM_AT_REPLY_DATA;
}

/* "SUBMIT", "ALLOC"...; "?" for values outside the enum. */
const char *otm_kind_name(int kind);
const char *otm_state_name(int state);
const char *otm_step_name(int step);

#endif
