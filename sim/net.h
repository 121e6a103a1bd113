/*
 * sim/net.h - a deterministic, single-threaded model of the MPI subset in
 * sim/mpi_functions.h.
 *
 * The net holds N ranks. Test binaries link with -Wl,--wrap=MPI_<fn> for every
 * function of that list; each __wrap_MPI_<fn> (sim/wrap.c, through
 * sim/net_calls.h) acts on the installed net as the rank set by
 * sim_net_set_rank (the world harness sets it before running an actor of
 * that rank). Nothing happens on its own: a sent message stays in
 * flight until the harness calls sim_net_deliver on its channel, so the
 * harness chooses every interleaving.
 *
 * Semantics modelled (MPI-3, as MPICH behaves here):
 *  - Communicators: MPI_COMM_WORLD and the ones made by MPI_Comm_dup. The
 *    k-th dup made by a rank gets the same handle on every rank (dup is
 *    collective, so ranks dup in the same order); the model does not block.
 *    MPI_Comm_free invalidates the handle for that rank only.
 *  - A channel is (source, destination, communicator). Messages of a channel
 *    leave in send order and only the oldest in-flight message of a channel
 *    can be delivered (non-overtaking). Delivered messages join the
 *    destination's arrived list, where receives and probes match them in
 *    arrival order on (source or MPI_ANY_SOURCE, tag or MPI_ANY_TAG, comm).
 *  - A posted receive matches at once if an arrived message matches;
 *    otherwise it waits and matches the first matching message to arrive
 *    (posted receives are matched in post order). Receiving more bytes than
 *    posted completes with MPI_ERR_TRUNCATE in the status (and the request),
 *    copying what fits; it is legal MPI, not misuse.
 *  - Isend copies the payload at the call if its size is <= the eager limit
 *    and its request completes at once (or, with eager_at_delivery, when the
 *    message is delivered); above the limit (rendezvous) the
 *    payload is copied from the sender's buffer only when a receive matches
 *    it, and the send request completes then. A send to oneself always
 *    behaves as rendezvous (never completes before its receive).
 *  - Improbe removes a matched message from the arrived list and returns an
 *    MPI_Message for Imrecv; Imrecv's request completes at once.
 *  - MPI_Cancel of an unmatched receive completes it as cancelled
 *    (MPI_Test_cancelled reports 1); of a matched one or of a send, it has
 *    no effect.
 *  - MPI_Request_free on a completed request frees it; on a pending send it
 *    detaches it (the transfer still happens, the handle is gone); on a
 *    pending receive it is allowed as in MPI and the message, when matched,
 *    is dropped.
 *  - MPI_Comm_get_attr(MPI_TAG_UB) returns the configured tag upper bound;
 *    Isend/Irecv with a tag above it (or a negative tag other than ANY_TAG on
 *    receives) fail with MPI_ERR_TAG. Bad ranks give MPI_ERR_RANK, bad
 *    communicators MPI_ERR_COMM, bad requests MPI_ERR_REQUEST. Every such
 *    error is returned (as with MPI_ERRORS_RETURN) and has no side effect.
 *  - Statuses are filled (MPI_SOURCE, MPI_TAG, MPI_ERROR, count for
 *    MPI_Get_count with MPI_BYTE); MPI_STATUS_IGNORE is honoured.
 *  - Only MPI_BYTE is supported as a datatype (others: MPI_ERR_TYPE).
 *
 * Faults: sim_net_fail_call makes the n-th call (1-based, counted per rank
 * and function from net creation) return MPI_ERR_OTHER without any side
 * effect. sim_net_delay makes the n-th Isend of a rank undeliverable until
 * virtual time reaches a given value. sim_net_stop_rank makes a rank dead:
 * messages to it are dropped at delivery (their send requests complete, as
 * if the data had left) and its calls fail with MPI_ERR_OTHER.
 * sim_net_freeze_rank makes it stopped as a process under SIGSTOP is: as
 * dead, but messages to it are never delivered, so that a send waiting
 * for its receiver (rendezvous, or eager completing on delivery) never
 * completes, as MPICH's to a stopped process does not.
 *
 * Misuse by the code under test (a request tested after it was freed, a
 * buffer too small...) is returned as an MPI error and also counted in
 * sim_net_misuse, which the harness checks after every step.
 */
#ifndef SIM_NET_H
#define SIM_NET_H

#include <stddef.h>
#include <stdint.h>

typedef enum sim_fn {
#define OTM_MPI_FN(name) SIM_FN_##name,
#include "mpi_functions.h"
#undef OTM_MPI_FN
    SIM_FN_COUNT
} sim_fn;

/* "Isend" for SIM_FN_Isend; NULL when out of range. */
const char *sim_fn_name(sim_fn fn);
/* The sim_fn named `name` ("Isend" or "MPI_Isend"), or SIM_FN_COUNT. */
sim_fn sim_fn_from_name(const char *name);

typedef struct sim_net sim_net;

/* The cost of a message in virtual time (the scaling model, DESIGN.md §7):
 * all zero, the default, costs nothing. Otherwise a message of n bytes
 * from rank a to rank b leaves when the link a->b is free (messages on one
 * link go one after another), occupies it for overhead_ns + n / bandwidth,
 * and becomes deliverable latency_ns after that. A message to oneself costs
 * nothing. */
typedef struct sim_link {
    uint64_t latency_ns;    /* the wire's one-way latency */
    uint64_t overhead_ns;   /* per message: the software's own cost */
    uint64_t bytes_per_s;   /* 0: infinite bandwidth */
} sim_link;

typedef struct sim_net_config {
    int nranks;             /* 1..64 */
    int tag_ub;             /* value of MPI_TAG_UB, >= 1 */
    size_t eager_limit;     /* bytes; sends up to this are eager */
    int eager_at_delivery;  /* 0: an eager send completes in MPI_Isend;
                             * 1: when its message is delivered (as a
                             * real transport may report it later) */
    sim_link link;          /* the cost of messages; zero: none */
    int late_send_tests;    /* 1: the first MPI_Test of a completed send
                             * still says it runs (MPICH's may, until its
                             * progress engine saw the send end), so a
                             * reply can be seen before the ask's end */
} sim_net_config;

/* A channel that has a deliverable message. */
typedef struct sim_chan {
    int src, dst;
    int comm;               /* communicator handle */
} sim_chan;

/* NULL on allocation failure or a bad config. */
sim_net *sim_net_create(const sim_net_config *cfg);
/* Frees everything, including undelivered messages. */
void sim_net_destroy(sim_net *net);

/* Makes `net` the one the __wrap_MPI_* functions act on (NULL: none, and
 * every wrapped call then aborts with a message: a test bug). */
void sim_net_install(sim_net *net);
sim_net *sim_net_installed(void);

/* The rank whose calls the wrappers serve next. */
void sim_net_set_rank(sim_net *net, int rank);

/* Virtual time in nanoseconds; delayed messages become deliverable when it
 * reaches their release time. Time never goes back. */
void sim_net_set_time(sim_net *net, uint64_t now_ns);
/* The earliest release time of a delayed in-flight message, or UINT64_MAX. */
uint64_t sim_net_next_release(const sim_net *net);

/* Fills `out` with up to `max` channels whose oldest in-flight message is
 * deliverable now (not delayed), in a deterministic order; returns how many
 * there are in all (may exceed max). */
size_t sim_net_ready(const sim_net *net, sim_chan *out, size_t max);
/* Delivers the oldest in-flight message of channel `c` (must be ready). */
void sim_net_deliver(sim_net *net, const sim_chan *c);
/* 1 when the oldest message of channel `c` was sent eagerly: delivering it
 * touches only the destination (no send request completes). */
int sim_net_head_eager(const sim_net *net, const sim_chan *c);
/* Messages sent but not yet delivered (all channels). */
size_t sim_net_in_flight(const sim_net *net);

/* Faults. */
void sim_net_fail_call(sim_net *net, int rank, sim_fn fn, uint64_t nth);
void sim_net_delay(sim_net *net, int rank, uint64_t nth_isend,
                   uint64_t until_ns);
void sim_net_stop_rank(sim_net *net, int rank);
void sim_net_freeze_rank(sim_net *net, int rank);
/* 1 for a stopped or frozen rank. */
int sim_net_rank_stopped(const sim_net *net, int rank);

/* Introspection for invariant checks and determinism. */
uint64_t sim_net_calls(const sim_net *net, int rank, sim_fn fn);
uint64_t sim_net_faults_fired(const sim_net *net);
/* Requests of `rank` that are allocated and not yet freed (a completed
 * request freed by a successful MPI_Test counts as freed). */
size_t sim_net_live_requests(const sim_net *net, int rank);
/* Communicators of `rank` made by dup and not freed. */
size_t sim_net_live_comms(const sim_net *net, int rank);
/* Messages delivered to `rank` that no receive has taken yet. */
size_t sim_net_unreceived(const sim_net *net, int rank);
/* Peeks for the world's scheduler, as `rank`, counted as no call (no
 * fault fires on them): 1 when `request` has completed (or is
 * MPI_REQUEST_NULL, or not one of the rank's: the call that names it will
 * say so); 1 when a message of any source with `tag` on `comm` arrived at
 * the rank and no receive or probe took it yet. */
int sim_net_request_done(const sim_net *net, int rank, int request);
int sim_net_arrived(const sim_net *net, int rank, int tag, int comm);
/* Calls fn for every message no receive has taken yet (in flight, arrived,
 * or probed): its number (net-wide send order), source, destination,
 * communicator handle, tag, and its payload (the net's copy, or the
 * sender's buffer for a rendezvous one). */
typedef void (*sim_msg_fn)(void *ctx, uint64_t id, int src, int dst, int comm, int tag,
                           const void *data, size_t len);
void sim_net_each_pending(const sim_net *net, sim_msg_fn fn, void *ctx);
/* Messages sent so far: the number the next one gets. */
uint64_t sim_net_sent(const sim_net *net);

/* Misuse detected (see above), all ranks. */
uint64_t sim_net_misuse(const sim_net *net);

/* The oracle of matches: `fn` says which event of `rank` makes the call
 * being served (a number both sides of one operation share; 0: none, or
 * not known). The net stamps each send and each posted receive with it,
 * and counts a receive stamped by one event that takes a message stamped
 * by another: a message matched by an event that did not post it. NULL:
 * nothing stamped (the default). */
typedef uint64_t (*sim_owner_fn)(void *ctx, int rank);
void sim_net_set_owner(sim_net *net, sim_owner_fn fn, void *ctx);
/* The oracle of buffers: every rank of the simulated job shares one
 * address space, where a worker could send from or receive into another
 * rank's memory without MPI noticing. `fn` says whether [buf, buf+len) is
 * memory of `rank`; a send or receive on a buffer that is not counts as a
 * mismatch too. NULL: not checked (the default). */
typedef int (*sim_buffer_fn)(void *ctx, int rank, const void *buf, size_t len);
void sim_net_set_buffer_check(sim_net *net, sim_buffer_fn fn, void *ctx);
/* Such matches and buffers so far; *first (if not NULL) describes the
 * first. */
uint64_t sim_net_mismatches(const sim_net *net, const char **first);
/* A hash of the whole observable state (messages, requests, counters). */
uint64_t sim_net_hash(const sim_net *net);
/* A counter bumped whenever something outside `rank` changes what its MPI
 * calls would see: a message arrives for it, one of its requests completes.
 * The scheduler wakes the rank's actors when it moves. */
uint64_t sim_net_epoch(const sim_net *net, int rank);
/* 1 once `rank` called MPI_Init_thread, MPI_Finalize, successfully. */
int sim_net_initialized(const sim_net *net, int rank);
int sim_net_finalized(const sim_net *net, int rank);

#endif
