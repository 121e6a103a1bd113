/*
 * sim/net.c - the deterministic MPI model of sim/net.h: ranks,
 * communicators, messages and requests, and what each MPI call does to them
 * (sim/net_calls.h). The __wrap_MPI_* functions that check a call's
 * arguments and reach the model are sim/wrap.c.
 *
 * Where things live:
 *  - in-flight messages: one FIFO per channel, the channels kept in an array
 *    sorted by (src, dst, comm), so sim_net_ready is a walk in a fixed order
 *    and non-overtaking holds by construction (only a FIFO head can leave);
 *  - delivered messages: the destination rank's `arrived` FIFO;
 *  - probed messages (Improbe without Imrecv yet): one list, found by their
 *    MPI_Message handle;
 *  - requests: an array sorted by handle. Handles only grow, so that order is
 *    also the post order in which MPI matches pending receives.
 *
 * Nothing here reads a clock, draws a random number or hashes a pointer: the
 * same calls in the same order give the same state and the same hash.
 */
#include "net.h"
#include "net_calls.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Handles we make up. Each kind has its own range, away from MPICH's
 * predefined constants, so that a handle of one kind passed where another is
 * expected is reported instead of silently working. Dup'ed communicators
 * start at 0x84000000 as in MPICH (so they are negative ints there too).
 */
#define COMM_DUP_BASE (INT_MIN + 0x04000000) /* 0x84000000 */
#define COMM_DUP_MAX 0x00ffffff
#define REQ_FIRST 0x10000000
#define REQ_LAST 0x2bffffff /* MPI_REQUEST_NULL is 0x2c000000 */
#define MSG_FIRST 0x30000000
#define MSG_LAST 0x6bffffff /* MPI_MESSAGE_NO_PROC is 0x6c000000 */

#define MAX_RANKS 64

typedef struct sim_msg sim_msg;
struct sim_msg {
    sim_msg *next;
    uint64_t id;           /* net-wide send order */
    int src, dst, comm, tag;
    int handle;            /* MPI_Message once probed, else 0 */
    size_t len;
    unsigned char *data;   /* our copy of the payload (eager), or NULL */
    const void *sbuf;      /* rendezvous: the sender's buffer, read at match */
    int sreq;              /* rendezvous: the send request to complete, or 0 */
    uint64_t release;      /* deliverable once net->now reaches it */
    uint64_t owner;        /* the event that sent it (sim_net_set_owner), or 0 */
};

typedef struct msg_queue {
    sim_msg *head, *tail;
} msg_queue;

typedef struct chan_queue {
    sim_chan key;
    msg_queue q;           /* never empty: empty channels are removed */
} chan_queue;

typedef struct sim_req {
    int handle, rank;
    int is_recv;
    int done;              /* completed; st holds the result */
    int freed;             /* MPI_Request_free'd while pending: no handle */
    int tested;            /* a send MPI_Test said runs (late_send_tests) */
    void *buf;             /* receive: where the payload goes */
    size_t cap;            /* receive: bytes posted */
    int src, tag, comm;    /* receive: what it matches */
    uint64_t owner;        /* receive: the event that posted it, or 0 */
    MPI_Status st;
} sim_req;

typedef struct sim_rank {
    uint64_t calls[SIM_FN_COUNT];
    int initialized, finalized, stopped;
    int frozen;             /* stopped and taking nothing (SIGSTOP) */
    unsigned char *dup_live; /* [k]: the k-th dup is not freed */
    size_t ndups, dup_cap;
    msg_queue arrived;
    uint64_t epoch;        /* bumped whenever others change this rank, or a
                            * late send test (late_send_tests) */
} sim_rank;

typedef struct fail_spec {
    int rank;
    sim_fn fn;
    uint64_t nth;
} fail_spec;

typedef struct delay_spec {
    int rank;
    uint64_t nth, until;
} delay_spec;

struct sim_net {
    sim_net_config cfg;    /* cfg.tag_ub is what MPI_TAG_UB points at */
    int rank;              /* whose calls the wrappers serve */
    uint64_t now;
    sim_rank ranks[MAX_RANKS];
    chan_queue *chans;
    size_t nchans, chans_cap, in_flight;
    sim_req **reqs;
    size_t nreqs, reqs_cap;
    msg_queue probed;
    fail_spec *fails;
    size_t nfails, fails_cap;
    delay_spec *delays;
    size_t ndelays, delays_cap;
    uint64_t link_free[MAX_RANKS][MAX_RANKS];  /* when link a->b is free */
    uint64_t next_msg_id;
    int next_req, next_mhandle;
    uint64_t faults_fired, misuse;
    int delivering;        /* inside sim_net_deliver: all news is foreign */
    sim_owner_fn owner_fn; /* who makes the current call (oracle) */
    void *owner_ctx;
    sim_buffer_fn buffer_fn; /* whose memory a buffer is (oracle) */
    void *buffer_ctx;
    uint64_t mismatches;   /* receives that took another event's message */
    char mismatch[200];    /* the first of them */
};

/* The one piece of file-scope state: which net the wrappers act on. */
static sim_net *installed;

static const char *const fn_names[SIM_FN_COUNT] = {
#define OTM_MPI_FN(name) #name,
#include "mpi_functions.h"
#undef OTM_MPI_FN
};

/* ---- small helpers ------------------------------------------------------ */

/* The simulator's own failures (and harness bugs) stop the test loudly:
 * they are not behaviour of the code under test. */
static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("sim/net: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        die("out of memory");
    return p;
}

/* Makes room for `need` elements in a growable array. */
static void *grow(void *arr, size_t *cap, size_t need, size_t elem)
{
    size_t ncap = *cap ? *cap : 8;
    void *p;

    if (need <= *cap)
        return arr;
    while (ncap < need)
        ncap *= 2;
    p = realloc(arr, ncap * elem);
    if (!p)
        die("out of memory");
    *cap = ncap;
    return p;
}

static int misuse(sim_net *net, int err)
{
    net->misuse++;
    return err;
}

static MPI_Status status_empty(void)
{
    MPI_Status st = {0, 0, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_SUCCESS};
    return st;
}

static void put_status(MPI_Status *out, const MPI_Status *st)
{
    if (out != MPI_STATUS_IGNORE)
        *out = *st;
}

/* ---- function names ----------------------------------------------------- */

const char *sim_fn_name(sim_fn fn)
{
    if ((int)fn < 0 || fn >= SIM_FN_COUNT)
        return NULL;
    return fn_names[fn];
}

sim_fn sim_fn_from_name(const char *name)
{
    if (!name)
        return SIM_FN_COUNT;
    if (strncmp(name, "MPI_", 4) == 0)
        name += 4;
    for (int i = 0; i < SIM_FN_COUNT; i++)
        if (strcmp(fn_names[i], name) == 0)
            return (sim_fn)i;
    return SIM_FN_COUNT;
}

/* ---- message queues ----------------------------------------------------- */

static int msg_matches(const sim_msg *m, int src, int tag, int comm)
{
    return m->comm == comm && (src == MPI_ANY_SOURCE || m->src == src) &&
           (tag == MPI_ANY_TAG || m->tag == tag);
}

static void q_push(msg_queue *q, sim_msg *m)
{
    m->next = NULL;
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
}

static void q_unlink(msg_queue *q, sim_msg *prev, sim_msg *m)
{
    if (prev)
        prev->next = m->next;
    else
        q->head = m->next;
    if (q->tail == m)
        q->tail = prev;
    m->next = NULL;
}

/* Removes and returns the oldest message matching (src, tag, comm). */
static sim_msg *q_take(msg_queue *q, int src, int tag, int comm)
{
    sim_msg *prev = NULL;

    for (sim_msg *m = q->head; m; prev = m, m = m->next) {
        if (msg_matches(m, src, tag, comm)) {
            q_unlink(q, prev, m);
            return m;
        }
    }
    return NULL;
}

/* Removes and returns the probed message `handle` if `rank` owns it. */
static sim_msg *q_take_handle(msg_queue *q, int handle, int rank)
{
    sim_msg *prev = NULL;

    for (sim_msg *m = q->head; m; prev = m, m = m->next) {
        if (m->handle == handle && m->dst == rank) {
            q_unlink(q, prev, m);
            return m;
        }
    }
    return NULL;
}

static void msg_free(sim_msg *m)
{
    free(m->data);
    free(m);
}

static void q_free(msg_queue *q)
{
    sim_msg *next;

    for (sim_msg *m = q->head; m; m = next) {
        next = m->next;
        msg_free(m);
    }
    q->head = q->tail = NULL;
}

/* ---- requests ----------------------------------------------------------- */

/* Index of request `handle` in net->reqs, or where it would be inserted. */
static size_t req_index(const sim_net *net, int handle, int *found)
{
    size_t lo = 0, hi = net->nreqs;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (net->reqs[mid]->handle < handle)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < net->nreqs && net->reqs[lo]->handle == handle;
    return lo;
}

static sim_req *req_get(const sim_net *net, int handle)
{
    int found;
    size_t i = req_index(net, handle, &found);
    return found ? net->reqs[i] : NULL;
}

/* The request the current rank may name by `handle`, or NULL (misuse). */
static sim_req *req_user(const sim_net *net, int handle)
{
    sim_req *rq = req_get(net, handle);

    if (!rq || rq->freed || rq->rank != net->rank)
        return NULL;
    return rq;
}

static sim_req *req_new(sim_net *net, int is_recv)
{
    sim_req *rq;

    if (net->next_req > REQ_LAST)
        die("request handles exhausted");
    rq = xcalloc(1, sizeof *rq);
    rq->handle = net->next_req++;
    rq->rank = net->rank;
    rq->is_recv = is_recv;
    /* Handles grow, so appending keeps the array sorted. */
    net->reqs = grow(net->reqs, &net->reqs_cap, net->nreqs + 1, sizeof *net->reqs);
    net->reqs[net->nreqs++] = rq;
    return rq;
}

static void req_remove(sim_net *net, sim_req *rq)
{
    int found;
    size_t i = req_index(net, rq->handle, &found);

    memmove(&net->reqs[i], &net->reqs[i + 1],
            (net->nreqs - i - 1) * sizeof *net->reqs);
    net->nreqs--;
    free(rq);
}

static void req_complete(sim_net *net, sim_req *rq, const MPI_Status *st)
{
    /* Only news from outside counts: a rank's own eager send completing at
     * its call changes nothing its actors have not seen. */
    if (net->delivering || rq->rank != net->rank)
        net->ranks[rq->rank].epoch++;
    rq->done = 1;
    rq->st = *st;
    /* A detached request has no handle left to test it with. */
    if (rq->freed)
        req_remove(net, rq);
}

/* ---- matching ------------------------------------------------------------ */

/* A receive matched `m`'s send: a rendezvous send completes now. */
static void send_matched(sim_net *net, const sim_msg *m)
{
    sim_req *rq = m->sreq ? req_get(net, m->sreq) : NULL;
    MPI_Status st = status_empty();

    if (rq)
        req_complete(net, rq, &st);
}

/* The event making the current call, as the owner function says. */
static uint64_t owner_now(const sim_net *net)
{
    return net->owner_fn ? net->owner_fn(net->owner_ctx, net->rank) : 0;
}

/* A receive that one event posted taking a message another event sent. */
static void check_owner(sim_net *net, const sim_req *rq, const sim_msg *m)
{
    if (!rq->owner || !m->owner || rq->owner == m->owner)
        return;
    if (!net->mismatches++)
        snprintf(net->mismatch, sizeof net->mismatch, "rank %d: a receive posted by "
                 "event %" PRIu64 " took message %" PRIu64 " of event %" PRIu64
                 " (from rank %d, communicator %d, tag %d)", rq->rank, rq->owner, m->id,
                 m->owner, m->src, m->comm, m->tag);
}

/* A send or receive of the current rank on memory that is not its own. */
static void check_buffer(sim_net *net, const void *buf, size_t len, const char *what)
{
    if (!net->buffer_fn || !len || net->buffer_fn(net->buffer_ctx, net->rank, buf, len))
        return;
    if (!net->mismatches++)
        snprintf(net->mismatch, sizeof net->mismatch, "rank %d: %s of %zu bytes at %p, "
                 "memory that is not the rank's own", net->rank, what, len, buf);
}

/* Completes receive `rq` with message `m` and frees the message. */
static void recv_complete(sim_net *net, sim_req *rq, sim_msg *m)
{
    size_t n = m->len < rq->cap ? m->len : rq->cap;
    const void *from = m->data ? (const void *)m->data : m->sbuf;
    MPI_Status st = {(int)n, 0, m->src, m->tag, MPI_SUCCESS};

    check_owner(net, rq, m);
    /* A freed receive still consumes its message, which is dropped. */
    if (!rq->freed && n > 0)
        memcpy(rq->buf, from, n);
    /* Truncation is legal MPI (the receive completes with an error); the
     * code under test uses it to swallow oversized input. */
    if (m->len > rq->cap)
        st.MPI_ERROR = MPI_ERR_TRUNCATE;
    send_matched(net, m);
    msg_free(m);
    req_complete(net, rq, &st);
}

/* The oldest pending receive of m->dst that matches m, or NULL. */
static sim_req *posted_match(const sim_net *net, const sim_msg *m)
{
    for (size_t i = 0; i < net->nreqs; i++) {
        sim_req *rq = net->reqs[i];
        if (rq->rank == m->dst && rq->is_recv && !rq->done &&
            msg_matches(m, rq->src, rq->tag, rq->comm))
            return rq;
    }
    return NULL;
}

/* A message that reaches no one (its destination stopped). Its rendezvous
 * send completes as if the data had left, so the sender's clean-up stays
 * bounded; the sender learns of the loss only by its own timeout. */
static void msg_drop(sim_net *net, sim_msg *m)
{
    send_matched(net, m);
    msg_free(m);
}

static void arrive(sim_net *net, sim_msg *m)
{
    sim_req *rq;

    /* An eager message that has left: its send is complete. */
    if (m->data && m->sreq) {
        send_matched(net, m);
        m->sreq = 0;
    }

    if (net->ranks[m->dst].stopped) {
        msg_drop(net, m);
        return;
    }
    int dst = m->dst;           /* recv_complete frees m */
    rq = posted_match(net, m);
    if (rq)
        recv_complete(net, rq, m);
    else
        q_push(&net->ranks[dst].arrived, m);
    net->ranks[dst].epoch++;
}

/* ---- channels ------------------------------------------------------------ */

static int cmp_int(int a, int b)
{
    return (a > b) - (a < b);
}

static int chan_cmp(const sim_chan *a, const sim_chan *b)
{
    unsigned ca = (unsigned)a->comm, cb = (unsigned)b->comm;

    if (a->src != b->src)
        return cmp_int(a->src, b->src);
    if (a->dst != b->dst)
        return cmp_int(a->dst, b->dst);
    return (ca > cb) - (ca < cb);
}

/* Index of channel `c` in net->chans, or where it would be inserted. */
static size_t chan_index(const sim_net *net, const sim_chan *c, int *found)
{
    size_t lo = 0, hi = net->nchans;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (chan_cmp(&net->chans[mid].key, c) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < net->nchans && chan_cmp(&net->chans[lo].key, c) == 0;
    return lo;
}

static void chan_push(sim_net *net, sim_msg *m)
{
    sim_chan key = {m->src, m->dst, m->comm};
    int found;
    size_t i = chan_index(net, &key, &found);

    if (!found) {
        net->chans = grow(net->chans, &net->chans_cap, net->nchans + 1,
                          sizeof *net->chans);
        memmove(&net->chans[i + 1], &net->chans[i],
                (net->nchans - i) * sizeof *net->chans);
        net->nchans++;
        net->chans[i].key = key;
        net->chans[i].q.head = net->chans[i].q.tail = NULL;
    }
    q_push(&net->chans[i].q, m);
    net->in_flight++;
}

/* Removes and returns the head of channel i; drops the channel if empty. */
static sim_msg *chan_pop(sim_net *net, size_t i)
{
    msg_queue *q = &net->chans[i].q;
    sim_msg *m = q->head;

    q_unlink(q, NULL, m);
    net->in_flight--;
    if (!q->head) {
        memmove(&net->chans[i], &net->chans[i + 1],
                (net->nchans - i - 1) * sizeof *net->chans);
        net->nchans--;
    }
    return m;
}

/* ---- communicators --------------------------------------------------------- */

int sim_net_comm_valid(const sim_net *net, MPI_Comm comm)
{
    const sim_rank *r = &net->ranks[net->rank];
    int64_t k = (int64_t)comm - COMM_DUP_BASE;

    if (comm == MPI_COMM_WORLD)
        return 1;
    return k >= 0 && (uint64_t)k < r->ndups && r->dup_live[k];
}

/* ---- the net --------------------------------------------------------------- */

sim_net *sim_net_create(const sim_net_config *cfg)
{
    sim_net *net;

    if (!cfg || cfg->nranks < 1 || cfg->nranks > MAX_RANKS || cfg->tag_ub < 1)
        return NULL;
    net = calloc(1, sizeof *net);
    if (!net)
        return NULL;
    net->cfg = *cfg;
    net->next_req = REQ_FIRST;
    net->next_mhandle = MSG_FIRST;
    return net;
}

void sim_net_destroy(sim_net *net)
{
    if (!net)
        return;
    if (installed == net)
        installed = NULL;
    for (size_t i = 0; i < net->nchans; i++)
        q_free(&net->chans[i].q);
    for (int r = 0; r < net->cfg.nranks; r++) {
        q_free(&net->ranks[r].arrived);
        free(net->ranks[r].dup_live);
    }
    q_free(&net->probed);
    for (size_t i = 0; i < net->nreqs; i++)
        free(net->reqs[i]);
    free(net->chans);
    free(net->reqs);
    free(net->fails);
    free(net->delays);
    free(net);
}

void sim_net_install(sim_net *net)
{
    installed = net;
}

sim_net *sim_net_installed(void)
{
    return installed;
}

static void check_rank(const sim_net *net, int rank, const char *what)
{
    if (rank < 0 || rank >= net->cfg.nranks)
        die("%s: rank %d out of range (nranks %d)", what, rank, net->cfg.nranks);
}

void sim_net_set_rank(sim_net *net, int rank)
{
    check_rank(net, rank, "sim_net_set_rank");
    net->rank = rank;
}

void sim_net_set_time(sim_net *net, uint64_t now_ns)
{
    if (now_ns > net->now)
        net->now = now_ns;
}

uint64_t sim_net_next_release(const sim_net *net)
{
    uint64_t next = UINT64_MAX;

    for (size_t i = 0; i < net->nchans; i++)
        for (const sim_msg *m = net->chans[i].q.head; m; m = m->next)
            if (m->release > net->now && m->release < next &&
                !net->ranks[net->chans[i].key.dst].frozen)
                next = m->release;
    return next;
}

size_t sim_net_ready(const sim_net *net, sim_chan *out, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < net->nchans; i++) {
        if (net->chans[i].q.head->release > net->now ||
            net->ranks[net->chans[i].key.dst].frozen)
            continue;
        if (n < max)
            out[n] = net->chans[i].key;
        n++;
    }
    return n;
}

void sim_net_deliver(sim_net *net, const sim_chan *c)
{
    int found;
    size_t i = chan_index(net, c, &found);

    if (!found || net->chans[i].q.head->release > net->now)
        die("sim_net_deliver: channel %d->%d comm %#x is not ready", c->src,
            c->dst, (unsigned)c->comm);
    net->delivering = 1;
    arrive(net, chan_pop(net, i));
    net->delivering = 0;
}

int sim_net_head_eager(const sim_net *net, const sim_chan *c)
{
    int found;
    size_t i = chan_index(net, c, &found);
    return found && net->chans[i].q.head->data != NULL &&
           net->chans[i].q.head->sreq == 0;
}

size_t sim_net_in_flight(const sim_net *net)
{
    return net->in_flight;
}

/* ---- faults ------------------------------------------------------------------ */

void sim_net_fail_call(sim_net *net, int rank, sim_fn fn, uint64_t nth)
{
    check_rank(net, rank, "sim_net_fail_call");
    if ((int)fn < 0 || fn >= SIM_FN_COUNT)
        die("sim_net_fail_call: bad function %d", (int)fn);
    net->fails = grow(net->fails, &net->fails_cap, net->nfails + 1, sizeof *net->fails);
    net->fails[net->nfails++] = (fail_spec){rank, fn, nth};
}

void sim_net_delay(sim_net *net, int rank, uint64_t nth_isend, uint64_t until_ns)
{
    check_rank(net, rank, "sim_net_delay");
    net->delays = grow(net->delays, &net->delays_cap, net->ndelays + 1,
                       sizeof *net->delays);
    net->delays[net->ndelays++] = (delay_spec){rank, nth_isend, until_ns};
}

/* A stopped rank's memory may go away, so the payload of its rendezvous
 * messages still on their way is copied now (they were sent; they arrive). */
static void snapshot_from(msg_queue *q, int rank)
{
    for (sim_msg *m = q->head; m; m = m->next) {
        if (m->src != rank || m->data || !m->sbuf || m->len == 0)
            continue;
        m->data = xcalloc(1, m->len);
        memcpy(m->data, m->sbuf, m->len);
        m->sbuf = NULL;
    }
}

void sim_net_stop_rank(sim_net *net, int rank)
{
    check_rank(net, rank, "sim_net_stop_rank");
    net->ranks[rank].stopped = 1;
    for (size_t i = 0; i < net->nchans; i++)
        snapshot_from(&net->chans[i].q, rank);
    for (int r = 0; r < net->cfg.nranks; r++)
        snapshot_from(&net->ranks[r].arrived, rank);
    snapshot_from(&net->probed, rank);
}

void sim_net_freeze_rank(sim_net *net, int rank)
{
    sim_net_stop_rank(net, rank);
    net->ranks[rank].frozen = 1;
}

int sim_net_rank_stopped(const sim_net *net, int rank)
{
    check_rank(net, rank, "sim_net_rank_stopped");
    return net->ranks[rank].stopped;
}

static int fail_due(const sim_net *net, sim_fn fn, uint64_t nth)
{
    for (size_t i = 0; i < net->nfails; i++) {
        const fail_spec *f = &net->fails[i];
        if (f->rank == net->rank && f->fn == fn && f->nth == nth)
            return 1;
    }
    return 0;
}

/* When a message of len bytes from the current rank to dest becomes
 * deliverable under the link model (sim_link), which it marks busy until
 * the message has left; 0 without a model or to oneself. */
static uint64_t link_cost(sim_net *net, int dest, size_t len)
{
    const sim_link *l = &net->cfg.link;
    if ((!l->latency_ns && !l->overhead_ns && !l->bytes_per_s) || dest == net->rank)
        return 0;
    uint64_t *free_at = &net->link_free[net->rank][dest];
    uint64_t start = *free_at > net->now ? *free_at : net->now;
    uint64_t wire = l->bytes_per_s
                        ? (uint64_t)((unsigned __int128)len * 1000000000u / l->bytes_per_s)
                        : 0;
    *free_at = start + l->overhead_ns + wire;
    return *free_at + l->latency_ns;
}

/* Release time of the current rank's Isend number `nth` (0: not delayed). */
static uint64_t delay_due(sim_net *net, uint64_t nth)
{
    uint64_t until = 0;

    for (size_t i = 0; i < net->ndelays; i++) {
        const delay_spec *d = &net->delays[i];
        if (d->rank == net->rank && d->nth == nth && d->until > until)
            until = d->until;
    }
    if (until > 0)
        net->faults_fired++;
    return until;
}

/* ---- introspection ------------------------------------------------------------ */

uint64_t sim_net_calls(const sim_net *net, int rank, sim_fn fn)
{
    check_rank(net, rank, "sim_net_calls");
    if ((int)fn < 0 || fn >= SIM_FN_COUNT)
        return 0;
    return net->ranks[rank].calls[fn];
}

uint64_t sim_net_faults_fired(const sim_net *net)
{
    return net->faults_fired;
}

size_t sim_net_live_requests(const sim_net *net, int rank)
{
    size_t n = 0;

    check_rank(net, rank, "sim_net_live_requests");
    /* A request freed while pending is not the rank's any more: MPI
     * finishes it on its own. */
    for (size_t i = 0; i < net->nreqs; i++)
        if (net->reqs[i]->rank == rank && !net->reqs[i]->freed)
            n++;
    return n;
}

size_t sim_net_live_comms(const sim_net *net, int rank)
{
    const sim_rank *r;
    size_t n = 0;

    check_rank(net, rank, "sim_net_live_comms");
    r = &net->ranks[rank];
    for (size_t k = 0; k < r->ndups; k++)
        n += r->dup_live[k];
    return n;
}

static size_t q_count_to(const msg_queue *q, int rank)
{
    size_t n = 0;

    for (const sim_msg *m = q->head; m; m = m->next)
        n += m->dst == rank;
    return n;
}

size_t sim_net_unreceived(const sim_net *net, int rank)
{
    check_rank(net, rank, "sim_net_unreceived");
    return q_count_to(&net->ranks[rank].arrived, rank) +
           q_count_to(&net->probed, rank);
}

int sim_net_request_done(const sim_net *net, int rank, int request)
{
    check_rank(net, rank, "sim_net_request_done");
    if (request == MPI_REQUEST_NULL)
        return 1;
    const sim_req *rq = req_get(net, request);
    return !rq || rq->freed || rq->rank != rank || rq->done;
}

int sim_net_arrived(const sim_net *net, int rank, int tag, int comm)
{
    check_rank(net, rank, "sim_net_arrived");
    for (const sim_msg *m = net->ranks[rank].arrived.head; m; m = m->next)
        if (msg_matches(m, MPI_ANY_SOURCE, tag, comm))
            return 1;
    return 0;
}

static void each_in(const msg_queue *q, sim_msg_fn fn, void *ctx)
{
    for (const sim_msg *m = q->head; m; m = m->next)
        fn(ctx, m->id, m->src, m->dst, m->comm, m->tag,
           m->data ? (const void *)m->data : m->sbuf, m->len);
}

uint64_t sim_net_sent(const sim_net *net)
{
    return net->next_msg_id;
}

void sim_net_each_pending(const sim_net *net, sim_msg_fn fn, void *ctx)
{
    for (size_t i = 0; i < net->nchans; i++)
        each_in(&net->chans[i].q, fn, ctx);
    for (int r = 0; r < net->cfg.nranks; r++)
        each_in(&net->ranks[r].arrived, fn, ctx);
    each_in(&net->probed, fn, ctx);
}

uint64_t sim_net_misuse(const sim_net *net)
{
    return net->misuse;
}

void sim_net_set_owner(sim_net *net, sim_owner_fn fn, void *ctx)
{
    net->owner_fn = fn;
    net->owner_ctx = ctx;
}

void sim_net_set_buffer_check(sim_net *net, sim_buffer_fn fn, void *ctx)
{
    net->buffer_fn = fn;
    net->buffer_ctx = ctx;
}

uint64_t sim_net_mismatches(const sim_net *net, const char **first)
{
    if (first)
        *first = net->mismatch;
    return net->mismatches;
}

uint64_t sim_net_epoch(const sim_net *net, int rank)
{
    check_rank(net, rank, "sim_net_epoch");
    return net->ranks[rank].epoch;
}

int sim_net_initialized(const sim_net *net, int rank)
{
    check_rank(net, rank, "sim_net_initialized");
    return net->ranks[rank].initialized;
}

int sim_net_finalized(const sim_net *net, int rank)
{
    check_rank(net, rank, "sim_net_finalized");
    return net->ranks[rank].finalized;
}

/* ---- hash ---------------------------------------------------------------------- */

/* FNV-1a, fed value by value in a fixed byte order. */
#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

static uint64_t mix(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t mix_bytes(uint64_t h, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= FNV_PRIME;
    }
    return h;
}

static uint64_t mix_status(uint64_t h, const MPI_Status *st)
{
    h = mix(h, (uint32_t)st->count_lo);
    h = mix(h, (uint32_t)st->count_hi_and_cancelled);
    h = mix(h, (uint32_t)st->MPI_SOURCE);
    h = mix(h, (uint32_t)st->MPI_TAG);
    return mix(h, (uint32_t)st->MPI_ERROR);
}

/* The sender's buffer of a rendezvous message is not ours: only its length
 * counts. */
static uint64_t mix_queue(uint64_t h, const msg_queue *q)
{
    for (const sim_msg *m = q->head; m; m = m->next) {
        h = mix(h, m->id);
        h = mix(h, ((uint64_t)(uint32_t)m->src << 32) | (uint32_t)m->dst);
        h = mix(h, ((uint64_t)(uint32_t)m->comm << 32) | (uint32_t)m->tag);
        h = mix(h, ((uint64_t)(uint32_t)m->handle << 32) | (uint32_t)m->sreq);
        h = mix(h, m->len);
        h = mix(h, m->release);
        if (m->data)
            h = mix_bytes(h, m->data, m->len);
    }
    return mix(h, 0x9e3779b97f4a7c15ULL); /* end of queue */
}

static uint64_t mix_rank(uint64_t h, const sim_rank *r)
{
    for (int fn = 0; fn < SIM_FN_COUNT; fn++)
        h = mix(h, r->calls[fn]);
    h = mix(h, (uint64_t)r->initialized | (uint64_t)r->finalized << 1 |
                   (uint64_t)r->stopped << 2);
    h = mix(h, r->ndups);
    h = mix_bytes(h, r->dup_live, r->ndups);
    return mix_queue(h, &r->arrived);
}

static uint64_t mix_req(uint64_t h, const sim_req *rq)
{
    h = mix(h, ((uint64_t)(uint32_t)rq->handle << 32) | (uint32_t)rq->rank);
    h = mix(h, (uint64_t)rq->is_recv | (uint64_t)rq->done << 1 |
                   (uint64_t)rq->freed << 2);
    h = mix(h, rq->cap);
    h = mix(h, ((uint64_t)(uint32_t)rq->src << 32) | (uint32_t)rq->tag);
    h = mix(h, (uint32_t)rq->comm);
    return mix_status(h, &rq->st);
}

uint64_t sim_net_hash(const sim_net *net)
{
    uint64_t h = FNV_OFFSET;

    h = mix(h, (uint64_t)net->cfg.nranks << 32 | (uint32_t)net->cfg.tag_ub);
    h = mix(h, net->cfg.eager_limit);
    h = mix(h, net->now);
    h = mix(h, (uint64_t)net->rank);
    h = mix(h, net->faults_fired);
    h = mix(h, net->misuse);
    h = mix(h, net->next_msg_id);
    h = mix(h, ((uint64_t)(uint32_t)net->next_req << 32) | (uint32_t)net->next_mhandle);
    for (int r = 0; r < net->cfg.nranks; r++)
        h = mix_rank(h, &net->ranks[r]);
    for (size_t i = 0; i < net->nchans; i++)
        h = mix_queue(h, &net->chans[i].q);
    h = mix_queue(h, &net->probed);
    for (size_t i = 0; i < net->nreqs; i++)
        h = mix_req(h, net->reqs[i]);
    for (size_t i = 0; i < net->nfails; i++)
        h = mix(mix(mix(h, (uint64_t)net->fails[i].rank), (uint64_t)net->fails[i].fn),
                net->fails[i].nth);
    for (size_t i = 0; i < net->ndelays; i++)
        h = mix(mix(mix(h, (uint64_t)net->delays[i].rank), net->delays[i].nth),
                net->delays[i].until);
    return h;
}

/* ---- the calls of the current rank (net_calls.h) ---------------------------------- */

_Static_assert(SIM_NET_NO_COMM == COMM_DUP_BASE - 1, "no dup gets SIM_NET_NO_COMM");

static sim_rank *me(sim_net *net)
{
    return &net->ranks[net->rank];
}

int sim_net_enter(sim_net *net, sim_fn fn)
{
    sim_rank *r = me(net);
    uint64_t nth = ++r->calls[fn];

    if (r->stopped)
        return MPI_ERR_OTHER;
    if (fail_due(net, fn, nth)) {
        net->faults_fired++;
        return MPI_ERR_OTHER;
    }
    if (r->finalized && fn != SIM_FN_Initialized && fn != SIM_FN_Finalized)
        return misuse(net, MPI_ERR_OTHER);
    return MPI_SUCCESS;
}

int sim_net_misused(sim_net *net, int err)
{
    return misuse(net, err);
}

int sim_net_rank(const sim_net *net)
{
    return net->rank;
}

int sim_net_size(const sim_net *net)
{
    return net->cfg.nranks;
}

const int *sim_net_tag_ub(const sim_net *net)
{
    return &net->cfg.tag_ub;
}

int sim_net_init(sim_net *net)
{
    if (me(net)->initialized)
        return misuse(net, MPI_ERR_OTHER);
    me(net)->initialized = 1;
    return MPI_SUCCESS;
}

int sim_net_finalize(sim_net *net)
{
    if (!me(net)->initialized)
        return misuse(net, MPI_ERR_OTHER);
    me(net)->finalized = 1;
    return MPI_SUCCESS;
}

/* Dup is collective: ranks dup in the same order, so the k-th dup of every
 * rank gets the same handle without any rank waiting for the others. */
MPI_Comm sim_net_comm_dup(sim_net *net)
{
    sim_rank *r = me(net);

    if (r->ndups >= COMM_DUP_MAX)
        die("rank %d made too many communicators", net->rank);
    r->dup_live = grow(r->dup_live, &r->dup_cap, r->ndups + 1, 1);
    r->dup_live[r->ndups] = 1;
    return COMM_DUP_BASE + (int)r->ndups++;
}

void sim_net_comm_free(sim_net *net, MPI_Comm comm)
{
    me(net)->dup_live[comm - COMM_DUP_BASE] = 0;
}

/* Eager sends own a copy and are done; rendezvous ones (and all sends to
 * oneself, as in MPICH) wait for a receive to read the sender's buffer. */
MPI_Request sim_net_isend(sim_net *net, const void *buf, size_t len, int dest,
                          int tag, MPI_Comm comm)
{
    sim_req *rq = req_new(net, 0);
    sim_msg *m = xcalloc(1, sizeof *m);
    MPI_Status st = status_empty();

    check_buffer(net, buf, len, "a send");
    *m = (sim_msg){.id = net->next_msg_id++, .src = net->rank, .dst = dest,
                   .comm = comm, .tag = tag, .len = len, .owner = owner_now(net)};
    m->release = delay_due(net, me(net)->calls[SIM_FN_Isend]);
    uint64_t arrival = link_cost(net, dest, len);
    if (arrival > m->release)
        m->release = arrival;
    if (dest != net->rank && len <= net->cfg.eager_limit) {
        m->data = xcalloc(1, len ? len : 1);
        if (len)
            memcpy(m->data, buf, len);
        if (net->cfg.eager_at_delivery)
            m->sreq = rq->handle;       /* completes when it leaves */
        else
            req_complete(net, rq, &st);
    } else {
        m->sbuf = buf;
        m->sreq = rq->handle;
    }
    chan_push(net, m);
    return rq->handle;
}

MPI_Request sim_net_irecv(sim_net *net, void *buf, size_t len, int source,
                          int tag, MPI_Comm comm)
{
    sim_req *rq;
    sim_msg *m;
    MPI_Request handle;

    check_buffer(net, buf, len, "a receive");
    rq = req_new(net, 1);
    rq->buf = buf;
    rq->cap = len;
    rq->src = source;
    rq->tag = tag;
    rq->comm = comm;
    rq->owner = owner_now(net);
    handle = rq->handle;
    m = q_take(&me(net)->arrived, source, tag, comm);
    if (m)
        recv_complete(net, rq, m);
    return handle;
}

int sim_net_improbe(sim_net *net, int source, int tag, MPI_Comm comm,
                    MPI_Message *message, MPI_Status *status)
{
    sim_msg *m;
    MPI_Status st;

    m = q_take(&me(net)->arrived, source, tag, comm);
    if (!m)
        return 0;
    if (net->next_mhandle > MSG_LAST)
        die("message handles exhausted");
    m->handle = net->next_mhandle++;
    q_push(&net->probed, m);
    *message = m->handle;
    st = (MPI_Status){(int)m->len, 0, m->src, m->tag, MPI_SUCCESS};
    put_status(status, &st);
    return 1;
}

int sim_net_imrecv(sim_net *net, void *buf, size_t len, MPI_Message *message,
                   MPI_Request *request)
{
    sim_req *rq;
    sim_msg *m;

    m = q_take_handle(&net->probed, *message, net->rank);
    if (!m)
        return misuse(net, MPI_ERR_REQUEST);
    check_buffer(net, buf, len, "a receive");
    rq = req_new(net, 1);
    rq->buf = buf;
    rq->cap = len;
    rq->owner = owner_now(net);
    *request = rq->handle;
    *message = MPI_MESSAGE_NULL;
    recv_complete(net, rq, m);
    return MPI_SUCCESS;
}

int sim_net_test(sim_net *net, MPI_Request *request, int *flag, MPI_Status *status)
{
    sim_req *rq;
    int rc;

    if (*request == MPI_REQUEST_NULL) {
        MPI_Status st = status_empty();
        *flag = 1;
        put_status(status, &st);
        return MPI_SUCCESS;
    }
    rq = req_user(net, *request);
    if (!rq)
        return misuse(net, MPI_ERR_REQUEST);
    *flag = rq->done;
    if (rq->done && !rq->is_recv && net->cfg.late_send_tests && !rq->tested) {
        /* Seen by this test, told at the next: news for the rank's actors,
         * or an actor that waits on it would sleep for good. */
        rq->tested = 1;
        *flag = 0;
        net->ranks[rq->rank].epoch++;
    }
    if (!*flag)
        return MPI_SUCCESS;
    /* Completed: report, then free the request as MPI does. */
    put_status(status, &rq->st);
    rc = rq->st.MPI_ERROR;
    req_remove(net, rq);
    *request = MPI_REQUEST_NULL;
    return rc;
}

int sim_net_cancel(sim_net *net, MPI_Request request)
{
    sim_req *rq;
    MPI_Status st = status_empty();

    rq = req_user(net, request);
    if (!rq)
        return misuse(net, MPI_ERR_REQUEST);
    /* Only a receive nothing matched yet can be cancelled; sends always go. */
    if (rq->is_recv && !rq->done) {
        st.count_hi_and_cancelled = 1;
        req_complete(net, rq, &st);
    }
    return MPI_SUCCESS;
}

int sim_net_request_free(sim_net *net, MPI_Request *request)
{
    sim_req *rq;

    rq = req_user(net, *request);
    if (!rq)
        return misuse(net, MPI_ERR_REQUEST);
    /* A pending request is detached: its operation still happens. */
    if (rq->done)
        req_remove(net, rq);
    else
        rq->freed = 1;
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}
