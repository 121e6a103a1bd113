/*
 * otm/node.h - one rank's instance of the runtime, and the core's API.
 *
 * Everything a rank knows lives in its otm_node: the communicators, the tag
 * allocators, the event lists, the worker's registry and kernel table, and
 * the hooks through which it reaches time, memory, locks and the device. No
 * file-scope mutable state exists, so the simulator can hold every rank of a
 * job in one process.
 *
 * Rank 0 is the host; every other rank is a worker, which serves one or
 * more OpenMP devices, its units (otm/wire.h): unit 0 is its own CPU, whose
 * memory is the worker's own; units 1 and up are the devices of plugins it
 * proxies, whose memory it reaches only through the device hooks.
 *
 * Nothing here blocks. The host enqueues operations on queues and moves
 * them with otm_queue_progress; a worker moves with otm_gate_poll_once (new
 * notifications and data events) and otm_handler_run_once (kernels), which
 * the production shell calls from its threads and the simulator from its
 * scheduler. Whoever waits loops over progress and its own pause (the
 * plugin's wait loop with the idle policy; the simulator's sim_queue_wait
 * runs the other ranks).
 *
 * Threads: the host may progress different queues from different threads;
 * a worker's gate and handler may run on different threads. Shared state
 * (tag allocators, the live-event list, the worker's kernel queue, event
 * references) is guarded by the lock hooks, which may be NULL when one
 * thread drives the node.
 */
#ifndef OTM_NODE_H
#define OTM_NODE_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "otm/config.h"
#include "otm/event.h"
#include "otm/registry.h"
#include "otm/status.h"
#include "otm/tags.h"

/* One entry of a loaded image: a kernel (size 0) or a global. */
typedef struct otm_entry {
    uint64_t addr;
    uint64_t size;
} otm_entry;

/* How a region ended when it did not return: a fault signal, or exit(). */
typedef struct otm_region_fault {
    int32_t signo;          /* the signal, 0 for exit() */
    int32_t code;           /* its si_code */
    uint64_t addr;          /* the faulting address */
    int32_t exit_status;    /* exit()'s argument */
    uint32_t flags;         /* OTM_EXEC_* of otm/wire.h */
} otm_region_fault;

/* The worker's devices: what the core asks of the process it runs in.
 * Every function names the unit it works on (0: the process's own CPU). */
typedef struct otm_device_ops {
    /* How many units the worker serves (0 counts as 1: unit 0 alone). */
    uint16_t units;
    /* Loads the image `ref` names on `unit`: its bytes when ref->bytes is
     * not NULL, else the device's own copy with that size and hash
     * (OTM_ERR_NO_IMAGE when it has none). On success *entries (owned by
     * the device until unload_image or the end of the node) lists its
     * entries in the image's own order, with the unit's addresses.
     * ref->bytes is valid during the call only. On failure nothing of the
     * image is kept. */
    otm_status (*load_image)(void *ctx, uint16_t unit, const otm_image_ref *ref,
                             const otm_entry **entries, uint64_t *count);
    /* Unloads the image of load `id`; no kernel of it runs. May be NULL. */
    void (*unload_image)(void *ctx, uint16_t unit, uint64_t id);
    /* Calls kernel `kernel` of `unit` with `nargs` arguments (the unit's
     * addresses, offsets added). May take long: only the handler calls
     * it. OTM_ERR_KERNEL_FAULT with *fault filled when the region faulted
     * or called exit() (a CPU's region; a proxied device's kernel that
     * fails is any other error, the device saying why in a line). */
    otm_status (*run_kernel)(void *ctx, uint16_t unit, uint64_t kernel, void **args,
                             uint32_t nargs, uint64_t teams, uint64_t threads,
                             otm_region_fault *fault);
    /* Output the regions wrote and nobody took yet, per stream, and taking
     * exactly that many bytes (stdout's, then stderr's) into dst. Either
     * may be NULL: no output is forwarded. */
    void (*output_pending)(void *ctx, uint64_t *out, uint64_t *err);
    otm_status (*output_take)(void *ctx, uint8_t *dst, uint64_t out, uint64_t err);
    /* The memory of units 1 and up, which the worker cannot address: the
     * core allocates, frees and moves it only through these (NULL where
     * there is no such unit). kind is libomptarget's TARGET_ALLOC_*. put
     * copies len bytes of the worker's memory at src to the unit's dst,
     * get the other way, copy between two such units of this worker. */
    otm_status (*mem_alloc)(void *ctx, uint16_t unit, uint64_t size, uint64_t kind,
                            uint64_t *addr);
    otm_status (*mem_free)(void *ctx, uint16_t unit, uint64_t addr);
    otm_status (*mem_put)(void *ctx, uint16_t unit, uint64_t dst, const void *src,
                          uint64_t len);
    otm_status (*mem_get)(void *ctx, uint16_t unit, void *dst, uint64_t src, uint64_t len);
    otm_status (*mem_copy)(void *ctx, uint16_t src_unit, uint64_t src, uint16_t dst_unit,
                           uint64_t dst, uint64_t len);
    void *ctx;
} otm_device_ops;

/* A loaded image on a worker: its entries, to drop them at UNLOAD. */
typedef struct otm_loaded_image {
    uint64_t id;
    otm_entry *entries;
    uint64_t count;
} otm_loaded_image;

/* One device a worker serves: what its events may touch and run. */
typedef struct otm_unit {
    otm_registry registry;          /* its allocations and loaded globals */
    uint64_t *kernels;              /* sorted addresses of loaded kernels */
    size_t nkernels, kernels_cap;
    otm_loaded_image *images;       /* loaded images, by LOAD id */
    size_t nimages, images_cap;
} otm_unit;

/* The points of an event's life the trace hook hears about. */
typedef enum otm_trace_point {
    OTM_TRACE_BEGIN = 0,    /* origin: enqueued; dest: arrived at the gate */
    OTM_TRACE_RUN,          /* first progressed: the origin's notification
                             * goes out, the dest starts serving */
    OTM_TRACE_END           /* FINISHED or FAILED (dest: reply sent) */
} otm_trace_point;

typedef struct otm_hooks {
    void *(*alloc)(void *ctx, size_t size);     /* NULL: malloc */
    void (*release)(void *ctx, void *p);        /* NULL: free */
    uint64_t (*now)(void *ctx);                 /* ns; NULL: no timeouts */
    void (*lock)(void *ctx);                    /* NULL: single thread */
    void (*unlock)(void *ctx);
    void (*log)(void *ctx, int level, const char *msg); /* NULL: silent */
    /* A waiter's pause between rounds of progress. The core never calls
     * it: it is for whoever loops (the simulator's sim_queue_wait). */
    void (*idle)(void *ctx);
    /* NULL: no tracing (one branch per point). Else called at each
     * otm_trace_point of every event that was enqueued or dispatched, on
     * the thread that moved the event, with no core lock held. It may
     * write ev->trace and must not touch anything else of the node. An
     * event torn down live by otm_node_fini gets no END. */
    void (*trace)(void *ctx, otm_event *ev, int point);
    /* NULL: none. Else called with moved = -1 when otm_event_progress
     * starts moving `ev` and with what it returns (1 or 0) when it
     * returns (nested, for the probe an event moves), on that thread: the
     * simulator's oracles learn which event makes each MPI call, and that
     * an event whose step or state changed said so. */
    void (*progress)(void *ctx, otm_event *ev, int moved);
    /* Host: what an EXECUTE's region wrote to stdout (stream 1) and stderr
     * (2) on worker `rank`, and how it died (on its device `unit`); called on the thread that
     * ends the event, before it ends (so before anyone waiting on it
     * returns). NULL: dropped. */
    void (*region_output)(void *ctx, int rank, int stream, const uint8_t *buf,
                          size_t len);
    void (*region_fault)(void *ctx, int rank, uint16_t unit, uint64_t kernel,
                         const otm_region_fault *fault);
    /* Host: worker `rank` stopped answering (src/core/liveness.c): `why`
     * is OTM_ERR_UNRESPONSIVE when it did not answer a liveness probe
     * while a kernel ran on it, OTM_ERR_TIMEOUT when an operation with it
     * (a transfer, an allocation...) made no progress for timeout_ns. From
     * now on every event to it fails at once with OTM_ERR_UNRESPONSIVE,
     * EXIT too. Called once per worker, on the thread that found it, with
     * no core lock held. NULL: none. */
    void (*worker_lost)(void *ctx, int rank, otm_status why);
    /* Host: a region on worker `rank` (its device `unit`) ran longer than kernel_timeout_ns
     * (the EXECUTE of `kernel`, or 0 for an UNLOAD that waited for
     * kernels); the event failed with OTM_ERR_KERNEL_TIMEOUT. The worker
     * still runs the region and cannot hear EXIT, so it is lost for the
     * node as after worker_lost (which is not called for it). Once per
     * event, on the thread that found it, with no core lock held. NULL:
     * none. */
    void (*region_timeout)(void *ctx, int rank, uint16_t unit, uint64_t kernel);
    void *ctx;
    otm_device_ops device;                      /* workers only */
} otm_hooks;

typedef enum otm_life {
    OTM_LIFE_RUNNING = 0,   /* serving */
    OTM_LIFE_EXITING,       /* host: draining; worker: EXIT received */
    OTM_LIFE_DONE           /* exit protocol complete; otm_node_fini next */
} otm_life;

/* A FIFO of host events executed in order (one per __tgt_async_info). */
struct otm_queue {
    otm_event *head, *tail;
    otm_queue *next;        /* in the node's list of queues */
    otm_queue **prev;
    int32_t status;         /* first failure since the last reset */
    int32_t failed_rank;    /* ... its event's device, kind and id */
    uint16_t failed_unit;
    uint8_t failed_kind;
    uint64_t failed_id;
    uint32_t length;
};

typedef struct otm_stats {
    uint64_t events[OTM_KIND_END];  /* events ended, by kind */
    uint64_t failed;                /* events that ended FAILED */
    uint64_t dropped;               /* notifications dropped unanswered */
    uint64_t rejected;              /* notifications answered with an error */
    uint64_t retired_tags;          /* tags quarantined for good */
    uint64_t abandoned;             /* events that detached their sends */
    uint64_t bytes_out, bytes_in;   /* payload bytes sent / received */
    uint64_t chained;               /* events started (host) or arrived
                                     * (worker) while the one ahead lived */
} otm_stats;

struct otm_node {
    int rank, size;
    otm_life life;
    otm_config cfg;
    otm_hooks hooks;
    MPI_Comm control;               /* notifications */
    MPI_Comm *comms;                /* cfg.ncomms event communicators */
    MPI_Comm pages;                 /* the page protocol (otm/page.h) */
    otm_tags *tags;                 /* host: one allocator per comm */
    int tag_ub;
    uint64_t next_id;
    uint64_t next_comm;             /* round-robin over comms */
    otm_event *all;                 /* every live event of this rank */
    otm_event *graveyard;           /* ended, buffers held for detached sends */
    size_t live;
    otm_stats stats;
    /* host */
    otm_queue *queues;
    otm_event **exit_events;        /* one per worker while exiting */
    otm_event *orphans;             /* probes whose event ended before them,
                                     * run to their end (liveness.c) */
    size_t norphans;                /* their number (otm__count) */
    uint8_t *lost;                  /* by rank: workers that stopped answering
                                     * a probe; events to them fail at once */
    int exit_failures;              /* workers that did not acknowledge */
    int end_claimed;                /* otm_host_end_claim succeeded (atomic) */
    int inside;                     /* host threads between otm_host_enter
                                     * and otm_host_leave (atomic) */
    /* worker */
    otm_event *data_head, *data_tail;   /* run by the gate */
    otm_event *kern_head, *kern_tail;   /* run by the handler */
    size_t ndata, nkern;            /* their lengths (otm__count) */
    otm_unit *units;                /* hooks.device.units of them (at least 1) */
    uint16_t nunits;
    int failed;                     /* a region faulted: only EXIT is served */
    uint8_t *sink;                  /* receives payloads being discarded */
    MPI_Request gate_req;           /* notification being received */
    uint8_t *gate_buf;              /* being received, or held until the
                                     * last event on its tag has ended */
    int gate_len;
    int gate_src;
    char errbuf[160];               /* last error, for the log hook */
};

/* Sets up `node` on MPI_COMM_WORLD (MPI must be initialised): queries rank,
 * size and MPI_TAG_UB, duplicates the control, event and page communicators with
 * MPI_ERRORS_RETURN, and prepares the tag allocators. On failure everything
 * made so far is undone and the node is left zeroed. */
otm_status otm_node_init(otm_node *node, const otm_config *cfg,
                         const otm_hooks *hooks);

/* A worker, before it serves: the device hooks, and as many units as they
 * count (ops->units, 0 counting as 1), each empty. OTM_ERR_BUSY when a
 * unit already holds an allocation or an image; OTM_ERR_NOMEM. */
otm_status otm_node_attach_device(otm_node *node, const otm_device_ops *ops);

/* Frees what the node holds: communicators, events still live (after
 * cancelling their requests), buffers, worker allocations. Safe on a zeroed
 * node. Does not finalize MPI. Events whose sends had to be detached keep
 * their buffers (MPI may still read them) until otm_node_release. */
void otm_node_fini(otm_node *node);

/* Frees the buffers of detached sends. Call once MPI is finalised (or the
 * transport is gone), after otm_node_fini. */
void otm_node_release(otm_node *node);

/* ---- host ---------------------------------------------------------------- */

void otm_queue_init(otm_node *node, otm_queue *q);
/* The queue must be empty (drained). */
void otm_queue_fini(otm_node *node, otm_queue *q);

/* Appends an operation. The host buffer of SUBMIT/RETRIEVE/LOAD must stay
 * valid until the event ends. OTM_ERR_SHUTDOWN once exit began,
 * OTM_ERR_INVALID for a bad rank, kind or argument, OTM_ERR_NOMEM. On
 * success *out (may be NULL) receives a reference the caller must drop with
 * otm_event_unref. */
otm_status otm_host_enqueue(otm_node *node, otm_queue *q, const otm_op *op,
                            otm_event **out);

/* Moves the queue's events: they complete in order, and those chained
 * behind the head (otm/event.h) run ahead of it. Returns 1 if anything
 * moved. */
int otm_queue_progress(otm_node *node, otm_queue *q);
static inline int otm_queue_empty(const otm_queue *q) { return !q->head; }
/* 1 while the head of q, or an event chained behind it, moves payload
 * (otm_event_streaming). */
int otm_queue_streaming(const otm_queue *q);

/* A new reference to the last event of q (NULL if q is empty: nothing to
 * wait for). */
otm_event *otm_queue_last(otm_node *node, otm_queue *q);
void otm_event_unref(otm_node *node, otm_event *ev);

/* Starts the exit protocol: no new operation is accepted; once every queue
 * is drained, EXIT goes to each worker. Then call otm_host_exit_progress
 * (it returns 1 if anything moved) until node->life is OTM_LIFE_DONE. The
 * number of workers that did not acknowledge is in node->exit_failures. */
void otm_host_exit_begin(otm_node *node);
int otm_host_exit_progress(otm_node *node);

/* ---- the end of the job, among the host's threads ---------------------- */
/*
 * Several host threads may find at once that the job must end (a region
 * faulted, a worker was lost, the program ends), and any of them may
 * still be progressing queues or holding events when another does. The end
 * (the exit protocol, then the node's teardown) must run once, and alone:
 *   - a host thread is inside the node from otm_host_enter to
 *     otm_host_leave, around everything it does with the node, its queues
 *     and its events (enqueue, progress, wait, take or drop a reference);
 *   - otm_host_end_claim elects the one thread that runs the end;
 *   - that thread waits (outside the node) until otm_host_end_alone, then
 *     runs the exit protocol and tears the node down;
 *   - from the claim on, otm_host_enter refuses: the other threads finish
 *     what they are inside of (every wait ends, by a reply or a timeout)
 *     and never touch the node again.
 * All four are atomic and lock-free (the lock hook is not taken): any
 * thread may call them at any time, also from the hooks' callers.
 */

/* OTM_OK: the caller is inside until its otm_host_leave. OTM_ERR_SHUTDOWN
 * once the end is claimed: the caller is not inside and must not touch the
 * node, its queues or its events again. */
otm_status otm_host_enter(otm_node *node);
void otm_host_leave(otm_node *node);
/* 1 for exactly one caller in the node's life, the first; 0 for every
 * other. The caller it elects runs the end, from outside the node. */
int otm_host_end_claim(otm_node *node);
/* 1 once the end is claimed and no host thread is inside: the claimant
 * may run the exit protocol (otm_host_exit_begin...). */
int otm_host_end_alone(const otm_node *node);

/* ---- worker -------------------------------------------------------------- */

/* Receives and dispatches at most one notification, then progresses every
 * data event once. Returns 1 if anything moved. */
int otm_gate_poll_once(otm_node *node);

/* 1 while one of the worker's data events moves payload
 * (otm_event_streaming): the gate's thread should keep polling. */
int otm_node_streaming(otm_node *node);

/* 1 when a kernel event waits that no handler has claimed: a handler
 * thread started now would have work. */
int otm_node_kernels_waiting(otm_node *node);

/* 1 when, of those, one has not run its kernel yet: a handler started now
 * would run program code. The others only move their reply and output. */
int otm_node_kernels_to_run(otm_node *node);

/* The kernel (its device address, never 0: the gate admits only kernels
 * of the table) that a handler started now would run first, or 0 when no
 * kernel event is there to run: otm_node_kernels_to_run, naming which. */
uint64_t otm_node_kernel_next(otm_node *node);

/* Claims the first kernel event no other handler holds and progresses it
 * once (the first step runs the kernel, which may take long); frees it if
 * it ended. Several handler threads may call this concurrently: each runs a
 * different event. Returns 1 if anything moved. */
int otm_handler_run_once(otm_node *node);

/* As otm_handler_run_once, for a kernel event whose kernel already ran: it
 * moves the event's reply and the output after it and never calls the
 * device, so the gate's thread may call it between polls without stalling
 * anything. Returns 1 if anything moved. */
int otm_handler_reply_once(otm_node *node);

#endif
