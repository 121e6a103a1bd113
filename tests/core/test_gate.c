/*
 * test_gate.c - bad input at a worker's gate, and failures on the worker,
 * reach the host as a status (or a logged drop where nobody can be
 * answered) and disturb nothing else: after each one, a valid event on the
 * same worker completes. A notification from another worker is answered
 * to that worker.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "otm/wire.h"
#include "scenarios.h"

#define BIG (2u << 20)          /* larger than any valid notification */

typedef struct raw {
    sim_world *w;
    int from;               /* the rank playing the misbehaving sender */
    MPI_Request rreq;
    uint8_t reply[64];
    int count;
    int done;
} raw;

/* ---- a misbehaving host, by hand ---- */

static otm_notify base_notify(int tag)
{
    otm_notify n = {.version = OTM_WIRE_VERSION, .kind = OTM_KIND_ALLOC,
                    .tag = (uint32_t)tag, .comm = 0, .id = 1, .p.alloc = {.size = 8},
                    .peer = -1};
    return n;
}

static int reply_arrived(void *ctx)
{
    raw *r = ctx;
    MPI_Status st;
    int flag = 0;
    if (r->done)
        return 1;
    sim_world_act_as(r->w, r->from);
    assert_int_equal(MPI_Test(&r->rreq, &flag, &st), MPI_SUCCESS);
    if (flag) {
        MPI_Get_count(&st, MPI_BYTE, &r->count);
        r->done = 1;
    }
    return flag;
}

typedef struct drop_wait {
    otm_node *worker;
    uint64_t before;
} drop_wait;

static int dropped(void *ctx)
{
    drop_wait *d = ctx;
    return d->worker->stats.dropped > d->before;
}

/* Sends `len` bytes of `msg` to worker 1's gate as rank 0. With `answer`,
 * waits for the reply on (comm 0, tag) and returns its status; without,
 * waits until the worker logged a drop and returns -1. */
static int send_raw(scn *s, const uint8_t *msg, int len, int tag, int answer)
{
    otm_node *host = sim_world_node(s->w, 0), *worker = sim_world_node(s->w, 1);
    raw r = {.w = s->w};
    drop_wait d = {worker, worker->stats.dropped};
    MPI_Request sreq;
    sim_world_act_as(s->w, 0);
    if (answer)
        assert_int_equal(MPI_Irecv(r.reply, sizeof r.reply, MPI_BYTE, 1, tag,
                                   host->comms[0], &r.rreq), MPI_SUCCESS);
    assert_int_equal(MPI_Isend(msg, len, MPI_BYTE, 1, OTM_TAG_CONTROL,
                               host->control, &sreq), MPI_SUCCESS);
    assert_int_equal(sim_world_run_until(s->w, answer ? reply_arrived : dropped,
                                         answer ? (void *)&r : (void *)&d), SIM_OK);
    sim_world_act_as(s->w, 0);
    int flag = 0;
    assert_int_equal(MPI_Test(&sreq, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    assert_true(flag);
    if (!answer)
        return -1;
    otm_reply rep;
    assert_int_equal(otm_wire_get_reply(r.reply, (size_t)r.count, &rep), OTM_OK);
    return rep.status;
}

/* A valid event after the bad one: the worker still serves. */
static void still_serves(scn *s)
{
    uint64_t addr = 0;
    assert_int_equal(scn_alloc(s, 0, 1, 16, &addr), OTM_OK);
    assert_int_equal(sim_world_run_queue(s->w, s->q[0]), SIM_OK);
    assert_int_equal(s->q[0]->status, OTM_OK);
    assert_true(addr != 0);
    assert_int_equal(scn_delete(s, 0, 1, addr), OTM_OK);
    assert_int_equal(sim_world_run_queue(s->w, s->q[0]), SIM_OK);
    assert_int_equal(s->q[0]->status, OTM_OK);
}

static void open_world(scn *s)
{
    sim_config cfg = sim_config_default();
    cfg.workers = 1;
    assert_int_equal(scn_open(s, &cfg, 2), 0);
    assert_int_equal(scn_load(s, 0, 1), OTM_OK);
    assert_int_equal(sim_world_run_queue(s->w, s->q[0]), SIM_OK);
    assert_int_equal(s->q[0]->status, OTM_OK);
}

static void close_world(scn *s)
{
    assert_int_equal(sim_world_run(s->w), SIM_OK);
    assert_int_equal(sim_world_teardown(s->w), SIM_OK);
    scn_close(s);
}

typedef void (*mutate_fn)(otm_notify *n, int *len);

static void m_kind99(otm_notify *n, int *len) { n->kind = 99; (void)len; }
static void m_kind0(otm_notify *n, int *len) { n->kind = 0; (void)len; }
static void m_sync(otm_notify *n, int *len) { n->kind = OTM_KIND_SYNC; (void)len; }
static void m_version(otm_notify *n, int *len) { n->version = OTM_WIRE_VERSION + 1; (void)len; }
static void m_short(otm_notify *n, int *len) { (void)n; *len = 40; }
static void m_inline_long(otm_notify *n, int *len) { n->inline_len = 10; (void)len; }
static void m_trailing(otm_notify *n, int *len) { (void)n; *len += 5; }
static void m_oversized(otm_notify *n, int *len) { n->inline_len = BIG; *len += BIG; }
static void m_exec_nargs(otm_notify *n, int *len)
{
    n->kind = OTM_KIND_EXECUTE; n->p.execute.kernel = sim_kernel_addr(SIM_K_NOP);
    n->p.execute.nargs = 3;
    n->inline_len = 16; *len += 16;
}
static void m_exec_unknown(otm_notify *n, int *len)
{
    n->kind = OTM_KIND_EXECUTE; n->p.execute.kernel = 0x1234; n->p.execute.nargs = 0;
    (void)len;
}
static void m_submit_frag0(otm_notify *n, int *len)
{
    n->kind = OTM_KIND_SUBMIT; n->p = (otm_params){.submit = {0x1000, 10, 0}};
    (void)len;
}
static void m_retrieve_wild(otm_notify *n, int *len)
{
    n->kind = OTM_KIND_RETRIEVE;
    n->p = (otm_params){.retrieve = {0x1000, 8, 4, 64}}; (void)len;
}
/* `after` (a chained event) on a kind that cannot be chained, naming the
 * event itself or no event tag; and naming an event that is gone: the
 * RETRIEVE then runs at once (here: outside any allocation). */
static void m_alloc_after(otm_notify *n, int *len)
{
    n->p.alloc.size = 8;
    n->after = OTM_TAG_FIRST; (void)len;
}
static void m_retrieve_after_self(otm_notify *n, int *len)
{
    m_retrieve_wild(n, len);
    n->after = n->tag;
}
static void m_retrieve_after_control(otm_notify *n, int *len)
{
    m_retrieve_wild(n, len);
    n->after = OTM_TAG_EXIT;
}
static void m_retrieve_after_gone(otm_notify *n, int *len)
{
    m_retrieve_wild(n, len);
    n->after = OTM_TAG_FIRST + 5;
}
static void m_delete_wild(otm_notify *n, int *len)
{
    n->kind = OTM_KIND_DELETE; n->p.del.addr = 0x1000; (void)len;
}
static void m_alloc_huge(otm_notify *n, int *len) { n->p.alloc.size = 1ull << 62; (void)len; }
static void m_exchange_no_peer(otm_notify *n, int *len)
{
    n->kind = OTM_KIND_EXCHANGE; n->p.exchange.size = 1; n->p.exchange.frag = 4;
    n->flags = OTM_XCHG_SEND;
    n->peer = -1; (void)len;
}
static void m_exchange_self(otm_notify *n, int *len)
{
    n->kind = OTM_KIND_EXCHANGE; n->p.exchange.size = 1; n->p.exchange.frag = 4;
    n->flags = OTM_XCHG_RECV;
    n->peer = 1; (void)len;
}
static void m_exchange_role(otm_notify *n, int *len)
{
    n->kind = OTM_KIND_EXCHANGE; n->p.exchange.size = 1; n->p.exchange.frag = 4;
    n->flags = 9; (void)len;
}

static void m_load(otm_notify *n, int *len, uint32_t flags)
{
    n->kind = OTM_KIND_LOAD; n->p = (otm_params){.load = {9, 8, 4, 64}};
    n->flags = flags;
    n->inline_len = OTM_WIRE_LOAD_DESC_SIZE; *len += OTM_WIRE_LOAD_DESC_SIZE;
}
static void m_load_no_desc(otm_notify *n, int *len)
{
    m_load(n, len, 0);
    n->inline_len = 0; *len -= OTM_WIRE_LOAD_DESC_SIZE;
}
static void m_load_flags(otm_notify *n, int *len) { m_load(n, len, 8); }
/* The descriptor is zeros: an image of 0 bytes, said to travel. */
static void m_load_send_empty(otm_notify *n, int *len) { m_load(n, len, OTM_LOAD_SEND); }
static void m_unload_unknown(otm_notify *n, int *len)
{
    n->kind = OTM_KIND_UNLOAD; n->p.unload.id = 777; (void)len;
}

typedef struct bad_case {
    const char *name;
    mutate_fn mutate;
    int expect;
} bad_case;

static const bad_case answered[] = {
    {"unknown kind 99", m_kind99, OTM_ERR_BAD_KIND},
    {"kind 0", m_kind0, OTM_ERR_BAD_KIND},
    {"host-only kind SYNC", m_sync, OTM_ERR_BAD_KIND},
    {"wrong protocol version", m_version, OTM_ERR_BAD_VERSION},
    {"truncated notification", m_short, OTM_ERR_BAD_MESSAGE},
    {"inline length past the end", m_inline_long, OTM_ERR_BAD_MESSAGE},
    {"trailing bytes", m_trailing, OTM_ERR_BAD_MESSAGE},
    {"oversized notification", m_oversized, OTM_ERR_BAD_MESSAGE},
    {"EXECUTE argument count mismatch", m_exec_nargs, OTM_ERR_BAD_MESSAGE},
    {"EXECUTE of an unknown kernel", m_exec_unknown, OTM_ERR_NO_KERNEL},
    {"SUBMIT with fragment size 0", m_submit_frag0, OTM_ERR_BAD_MESSAGE},
    {"RETRIEVE outside any allocation", m_retrieve_wild, OTM_ERR_BAD_POINTER},
    {"ALLOC chained behind another event", m_alloc_after, OTM_ERR_BAD_MESSAGE},
    {"RETRIEVE chained behind itself", m_retrieve_after_self, OTM_ERR_BAD_MESSAGE},
    {"RETRIEVE chained behind the exit tag", m_retrieve_after_control, OTM_ERR_BAD_MESSAGE},
    {"RETRIEVE chained behind an event that ended", m_retrieve_after_gone,
     OTM_ERR_BAD_POINTER},
    {"DELETE of an unknown pointer", m_delete_wild, OTM_ERR_BAD_POINTER},
    {"ALLOC of 2^62 bytes", m_alloc_huge, OTM_ERR_NOMEM},
    {"EXCHANGE with an unknown role", m_exchange_role, OTM_ERR_BAD_MESSAGE},
    {"EXCHANGE with no peer", m_exchange_no_peer, OTM_ERR_BAD_MESSAGE},
    {"EXCHANGE with itself as the peer", m_exchange_self, OTM_ERR_BAD_MESSAGE},
    {"LOAD without its image descriptor", m_load_no_desc, OTM_ERR_BAD_MESSAGE},
    {"LOAD with unknown flags", m_load_flags, OTM_ERR_BAD_MESSAGE},
    {"LOAD of an image of 0 bytes that travels", m_load_send_empty, OTM_ERR_BAD_MESSAGE},
    {"UNLOAD of a load that never was", m_unload_unknown, OTM_ERR_NO_IMAGE},
};

static void test_bad_notifications_answered(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    uint8_t *msg = calloc(1, OTM_WIRE_NOTIFY_SIZE + BIG + 64);
    assert_non_null(msg);
    for (size_t i = 0; i < sizeof answered / sizeof *answered; i++) {
        int tag = 30000 + (int)i, len = OTM_WIRE_NOTIFY_SIZE;
        otm_notify n = base_notify(tag);
        answered[i].mutate(&n, &len);
        otm_wire_put_notify(msg, &n);
        uint64_t rejected = sim_world_node(s.w, 1)->stats.rejected;
        int st = send_raw(&s, msg, len, tag, 1);
        if (st != answered[i].expect)
            fail_msg("%s: got %s, want %s", answered[i].name, otm_status_name(st),
                     otm_status_name(answered[i].expect));
        /* Gate rejections count; errors of a decoded event do not. */
        assert_true(sim_world_node(s.w, 1)->stats.rejected >= rejected);
        still_serves(&s);
    }
    print_message("%zu bad notifications answered with the right status\n",
                  sizeof answered / sizeof *answered);
    free(msg);
    close_world(&s);
}

static void test_unanswerable_notifications_dropped(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    otm_node *worker = sim_world_node(s.w, 1);
    uint8_t msg[OTM_WIRE_NOTIFY_SIZE];
    otm_notify n = base_notify(5);
    otm_wire_put_notify(msg, &n);
    send_raw(&s, msg, 10, 5, 0);                            /* too short */
    msg[0] ^= 0xff;
    send_raw(&s, msg, sizeof msg, 5, 0);                    /* bad magic */
    n.tag = 0;
    otm_wire_put_notify(msg, &n);
    send_raw(&s, msg, sizeof msg, 0, 0);                    /* control tag */
    n.tag = (uint32_t)worker->tag_ub + 1;
    otm_wire_put_notify(msg, &n);
    send_raw(&s, msg, sizeof msg, 0, 0);                    /* above UB */
    n.tag = 5;
    n.comm = (uint32_t)worker->cfg.ncomms;
    otm_wire_put_notify(msg, &n);
    send_raw(&s, msg, sizeof msg, 0, 0);                    /* no such comm */
    assert_int_equal(worker->stats.dropped, 5);
    still_serves(&s);
    close_world(&s);
}

/* A notification that finds no memory for its buffer is received into the
 * sink and dropped, and said so: the worker counts it and serves on. */
static void test_notification_without_memory_dropped(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    otm_node *worker = sim_world_node(s.w, 1);
    uint8_t msg[OTM_WIRE_NOTIFY_SIZE];
    otm_notify n = base_notify(40);
    otm_wire_put_notify(msg, &n);
    uint64_t dropped = worker->stats.dropped;
    sim_world_fail_alloc(s.w, 1, 1);        /* the gate's buffer */
    send_raw(&s, msg, sizeof msg, 40, 0);
    assert_int_equal(worker->stats.dropped, dropped + 1);
    still_serves(&s);
    close_world(&s);
}

/* A notification from another worker (a peer misbehaving) is answered
 * there, on its own (communicator, tag), not to the host: the gate answers
 * whoever sent it. */
static void test_notification_from_a_worker_answered_there(void **state)
{
    (void)state;
    sim_config cfg = sim_config_default();
    cfg.workers = 2;
    scn s;
    assert_int_equal(scn_open(&s, &cfg, 1), 0);
    otm_node *peer = sim_world_node(s.w, 2), *worker = sim_world_node(s.w, 1);
    uint8_t msg[OTM_WIRE_NOTIFY_SIZE];
    otm_notify n = base_notify(30000);
    n.kind = 99;                                /* answered: OTM_ERR_BAD_KIND */
    otm_wire_put_notify(msg, &n);
    raw r = {.w = s.w, .from = 2};
    MPI_Request sreq;
    sim_world_act_as(s.w, 2);
    assert_int_equal(MPI_Irecv(r.reply, sizeof r.reply, MPI_BYTE, 1, 30000,
                               peer->comms[0], &r.rreq), MPI_SUCCESS);
    assert_int_equal(MPI_Isend(msg, sizeof msg, MPI_BYTE, 1, OTM_TAG_CONTROL,
                               peer->control, &sreq), MPI_SUCCESS);
    uint64_t rejected = worker->stats.rejected;
    assert_int_equal(sim_world_run_until(s.w, reply_arrived, &r), SIM_OK);
    otm_reply rep;
    assert_int_equal(otm_wire_get_reply(r.reply, (size_t)r.count, &rep), OTM_OK);
    assert_int_equal(rep.status, OTM_ERR_BAD_KIND);
    assert_int_equal(worker->stats.rejected, rejected + 1);
    sim_world_act_as(s.w, 2);
    int flag = 0;
    assert_int_equal(MPI_Test(&sreq, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    assert_true(flag);
    still_serves(&s);
    close_world(&s);
}

/* A malformed EXIT on the exit channel is answered and changes nothing:
 * the worker keeps serving and still exits at the real EXIT. */
static void test_malformed_exit_ignored(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    uint8_t msg[OTM_WIRE_NOTIFY_SIZE];
    otm_notify n = base_notify(OTM_TAG_EXIT);
    n.kind = OTM_KIND_EXIT;
    n.version = OTM_WIRE_VERSION + 1;
    otm_wire_put_notify(msg, &n);
    assert_int_equal(send_raw(&s, msg, sizeof msg, OTM_TAG_EXIT, 1), OTM_ERR_BAD_VERSION);
    assert_int_equal(sim_world_node(s.w, 1)->life, OTM_LIFE_RUNNING);
    still_serves(&s);
    close_world(&s);
}

/* A notification that reaches a worker while it exits is answered with
 * SHUTDOWN. A SUBMIT whose payload is held back keeps worker 1's EXIT
 * draining; an ALLOC sent then is refused; the payload then lets the
 * exit end cleanly. */
static int worker_exiting(void *ctx)
{
    return ((otm_node *)ctx)->life == OTM_LIFE_EXITING;
}

static void test_notification_during_exit_refused(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    otm_node *host = sim_world_node(s.w, 0), *worker = sim_world_node(s.w, 1);
    int tag = 30400;
    otm_notify n = base_notify(tag);
    n.kind = OTM_KIND_SUBMIT;
    n.p = (otm_params){.submit = {scn_global(&s, 1), 8, 8}};
    uint8_t msg[OTM_WIRE_NOTIFY_SIZE], data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    otm_wire_put_notify(msg, &n);
    raw r = {.w = s.w};
    MPI_Request sreq, dreq;
    sim_world_act_as(s.w, 0);
    assert_int_equal(MPI_Irecv(r.reply, sizeof r.reply, MPI_BYTE, 1, tag,
                               host->comms[0], &r.rreq), MPI_SUCCESS);
    assert_int_equal(MPI_Isend(msg, sizeof msg, MPI_BYTE, 1, OTM_TAG_CONTROL,
                               host->control, &sreq), MPI_SUCCESS);
    otm_host_exit_begin(host);
    assert_int_equal(sim_world_run_until(s.w, worker_exiting, worker), SIM_OK);

    otm_notify a = base_notify(tag + 1);
    otm_wire_put_notify(msg, &a);
    assert_int_equal(send_raw(&s, msg, sizeof msg, tag + 1, 1), OTM_ERR_SHUTDOWN);
    assert_int_equal(worker->life, OTM_LIFE_EXITING);

    sim_world_act_as(s.w, 0);
    assert_int_equal(MPI_Isend(data, sizeof data, MPI_BYTE, 1, tag, host->comms[0],
                               &dreq), MPI_SUCCESS);
    assert_int_equal(sim_world_run_until(s.w, reply_arrived, &r), SIM_OK);
    otm_reply rep;
    assert_int_equal(otm_wire_get_reply(r.reply, (size_t)r.count, &rep), OTM_OK);
    assert_int_equal(rep.status, OTM_OK);
    sim_world_act_as(s.w, 0);
    int flag = 0;
    assert_int_equal(MPI_Test(&sreq, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    assert_true(flag);
    assert_int_equal(MPI_Test(&dreq, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    assert_true(flag);
    close_world(&s);
}

/* ---- failures on the worker, through the host API ---- */

static void expect_queue(scn *s, otm_status want)
{
    assert_int_equal(sim_world_run_queue(s->w, s->q[0]), SIM_OK);
    assert_int_equal(s->q[0]->status, want);
    s->q[0]->status = OTM_OK;
}

static void test_worker_failures_reach_host(void **state)
{
    (void)state;
    scn s;
    uint8_t buf[64] = {0};
    uint64_t addr = 0, g = 0;
    open_world(&s);
    g = scn_global(&s, 1);
    /* Allocation failure, injected: the 3rd allocation of the worker from
     * now is the device memory (after the notification and the event). */
    sim_world_fail_alloc(s.w, 1, 3);
    scn_alloc(&s, 0, 1, 32, &addr);
    expect_queue(&s, OTM_ERR_NOMEM);
    still_serves(&s);
    scn_alloc(&s, 0, 1, 32, &addr);
    expect_queue(&s, OTM_OK);
    /* Transfers outside a live allocation, or running past its end. */
    scn_submit(&s, 0, 1, addr + 16, buf, 17);
    expect_queue(&s, OTM_ERR_BAD_POINTER);
    scn_retrieve(&s, 0, 1, buf, addr - 1, 4);
    expect_queue(&s, OTM_ERR_BAD_POINTER);
    scn_retrieve(&s, 0, 1, buf, g + SIM_GLOBAL_SIZE - 2, 3);
    expect_queue(&s, OTM_ERR_BAD_POINTER);
    /* Delete of an unknown pointer, and a double delete. */
    scn_delete(&s, 0, 1, addr + 1);
    expect_queue(&s, OTM_ERR_BAD_POINTER);
    scn_delete(&s, 0, 1, addr);
    expect_queue(&s, OTM_OK);
    scn_delete(&s, 0, 1, addr);
    expect_queue(&s, OTM_ERR_BAD_POINTER);
    /* A pointer into freed memory is refused too. */
    scn_submit(&s, 0, 1, addr, buf, 4);
    expect_queue(&s, OTM_ERR_BAD_POINTER);
    /* Unknown kernel, and a kernel that fails. */
    otm_op op = {.kind = OTM_KIND_EXECUTE, .rank = 1, .arg = 0xdead};
    assert_int_equal(otm_host_enqueue(sim_world_node(s.w, 0), s.q[0], &op, NULL), OTM_OK);
    expect_queue(&s, OTM_ERR_NO_KERNEL);
    scn_execute(&s, 0, 1, SIM_K_FAIL, 0, 0);
    expect_queue(&s, OTM_ERR_KERNEL);
    still_serves(&s);
    close_world(&s);
}

/* Host-side argument checks: nothing is sent at all. */
static void test_host_rejects_bad_operations(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    otm_node *host = sim_world_node(s.w, 0);
    otm_op bad[] = {
        {.kind = OTM_KIND_ALLOC, .rank = 0},            /* the host itself */
        {.kind = OTM_KIND_ALLOC, .rank = 2},            /* no such worker */
        {.kind = OTM_KIND_ALLOC, .rank = -1},
        {.kind = OTM_KIND_SUBMIT, .rank = 1, .size = 4, .host = NULL},
        {.kind = OTM_KIND_EXCHANGE, .rank = 1, .peer = 5, .size = 1},
        {.kind = OTM_KIND_EXECUTE, .rank = 1, .nargs = 5000},
        {.kind = OTM_KIND_EXIT, .rank = 1},
        {.kind = (otm_kind)42, .rank = 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(otm_host_enqueue(host, s.q[0], &bad[i], NULL), OTM_ERR_INVALID);
    assert_true(otm_queue_empty(s.q[0]));
    still_serves(&s);
    close_world(&s);
}

/* An EXCHANGE whose two addresses are on one worker is a copy there: the
 * bytes arrive, and a bad address on either side fails it with nothing
 * copied. */
static void test_exchange_within_one_worker(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    uint64_t g = scn_global(&s, 1);
    uint8_t in[13], out[13], zero[13] = {0};
    for (int i = 0; i < 13; i++)
        in[i] = (uint8_t)(100 + i);
    scn_submit(&s, 0, 1, g, in, 13);
    scn_submit(&s, 0, 1, g + 32, zero, 13);
    expect_queue(&s, OTM_OK);
    scn_exchange(&s, 0, 1, g, 1, g + 32, 13);
    scn_retrieve(&s, 0, 1, out, g + 32, 13);
    expect_queue(&s, OTM_OK);
    assert_memory_equal(out, in, 13);
    /* The source, then the destination, past the global's end. */
    scn_submit(&s, 0, 1, g + 32, zero, 13);
    expect_queue(&s, OTM_OK);
    scn_exchange(&s, 0, 1, g + SIM_GLOBAL_SIZE - 4, 1, g + 32, 13);
    expect_queue(&s, OTM_ERR_BAD_POINTER);
    scn_exchange(&s, 0, 1, g, 1, g + SIM_GLOBAL_SIZE - 4, 13);
    expect_queue(&s, OTM_ERR_BAD_POINTER);
    scn_retrieve(&s, 0, 1, out, g + 32, 13);
    expect_queue(&s, OTM_OK);
    assert_memory_equal(out, zero, 13);
    still_serves(&s);
    close_world(&s);
}

/* A LOAD whose bytes would travel in fragments of 0 bytes is refused at
 * once: no byte is awaited. The descriptor says 8 bytes. */
static void test_load_in_fragments_of_zero_refused(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    uint8_t msg[OTM_WIRE_NOTIFY_SIZE + OTM_WIRE_LOAD_DESC_SIZE] = {0};
    int tag = 30600, len = OTM_WIRE_NOTIFY_SIZE;
    otm_notify n = base_notify(tag);
    m_load(&n, &len, OTM_LOAD_SEND);
    n.p.load.frag = 0;
    otm_wire_put_notify(msg, &n);
    msg[OTM_WIRE_NOTIFY_SIZE] = 8;      /* the image's size, little-endian */
    assert_int_equal(send_raw(&s, msg, len, tag, 1), OTM_ERR_BAD_MESSAGE);
    still_serves(&s);
    close_world(&s);
}

/* A worker whose device runs no kernels answers an EXECUTE NO_KERNEL. */
static void test_execute_without_a_device_refused(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    otm_node *worker = sim_world_node(s.w, 1);
    otm_device_ops saved = worker->hooks.device;
    worker->hooks.device.run_kernel = NULL;
    scn_execute(&s, 0, 1, SIM_K_NOP, 0, 0);
    expect_queue(&s, OTM_ERR_NO_KERNEL);
    worker->hooks.device = saved;
    scn_execute(&s, 0, 1, SIM_K_NOP, 0, 0);
    expect_queue(&s, OTM_OK);
    close_world(&s);
}

/* What a worker's event holds is freed when the event ends, not at the
 * end of the job: once the host has its answers, the worker settles with
 * no live event (kernels, run by the handler, and data events alike). */
static int worker_settled(void *ctx)
{
    return ((otm_node *)ctx)->live == 0;
}

static void test_worker_frees_ended_events(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    otm_node *worker = sim_world_node(s.w, 1);
    uint8_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    scn_execute(&s, 0, 1, SIM_K_NOP, 0, 0);
    scn_submit(&s, 0, 1, scn_global(&s, 1), in, sizeof in);
    expect_queue(&s, OTM_OK);
    assert_int_equal(sim_world_run_until(s.w, worker_settled, worker), SIM_OK);
    close_world(&s);
}

/* The host frees its events as they end too: a queue that waited for
 * another's event (SYNC) lets go of it, and once the queues are empty and
 * the caller holds nothing, no event of the host is live. */
static void test_host_frees_ended_events(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    otm_node *host = sim_world_node(s.w, 0);
    uint64_t a = 0, b = 0;
    assert_int_equal(scn_alloc(&s, 0, 1, 8, &a), OTM_OK);
    assert_int_equal(scn_wait_for(&s, 1, 0), OTM_OK);
    assert_int_equal(scn_alloc(&s, 1, 1, 8, &b), OTM_OK);
    assert_int_equal(sim_world_run_queue(s.w, s.q[0]), SIM_OK);
    assert_int_equal(sim_world_run_queue(s.w, s.q[1]), SIM_OK);
    assert_int_equal(s.q[0]->status, OTM_OK);
    assert_int_equal(s.q[1]->status, OTM_OK);
    assert_int_equal(host->live, 0);
    close_world(&s);
}

/* otm_node_kernels_waiting, which the plugin's idle policy asks: 1 while
 * a kernel waits for the handler (a SIM_K_SLEEP region waits its time
 * before the handler takes it), 0 before and after. */
static int kernel_queued(void *ctx)
{
    return ((otm_node *)ctx)->kern_head != NULL;
}

static void test_kernels_waiting(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    otm_node *worker = sim_world_node(s.w, 1);
    assert_int_equal(otm_node_kernels_waiting(worker), 0);
    scn_execute(&s, 0, 1, SIM_K_SLEEP, 1000000, 0);
    assert_int_equal(sim_world_run_until(s.w, kernel_queued, worker), SIM_OK);
    assert_int_equal(otm_node_kernels_waiting(worker), 1);
    expect_queue(&s, OTM_OK);
    assert_int_equal(otm_node_kernels_waiting(worker), 0);
    close_world(&s);
}

/* otm_handler_reply_once, which a worker's kernel thread calls while it
 * holds the gate, never runs a kernel: a region that has not run is left
 * for a handler (otm_node_kernels_to_run says it is there). One that ran
 * and still sends its output (SIM_K_PRINT, three fragments after the
 * reply) is no longer to run, and the gate's calls move it. */
static int kernel_ran(void *ctx)
{
    const otm_event *ev = ((otm_node *)ctx)->kern_head;
    return ev != NULL && ev->step > OTM_AT_RUN;
}

static void test_reply_once_never_runs_kernels(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    otm_node *worker = sim_world_node(s.w, 1);
    assert_int_equal(otm_node_kernels_to_run(worker), 0);
    sim_world_act_as(s.w, 1);
    assert_int_equal(otm_handler_reply_once(worker), 0);
    scn_execute(&s, 0, 1, SIM_K_SLEEP, 1000000, 0);
    assert_int_equal(sim_world_run_until(s.w, kernel_queued, worker), SIM_OK);
    assert_int_equal(otm_node_kernels_to_run(worker), 1);
    sim_world_act_as(s.w, 1);
    assert_int_equal(otm_handler_reply_once(worker), 0);
    assert_true(worker->kern_head->step <= OTM_AT_RUN);
    assert_int_equal(otm_node_kernels_to_run(worker), 1);
    expect_queue(&s, OTM_OK);
    assert_int_equal(otm_node_kernels_to_run(worker), 0);

    scn_execute(&s, 0, 1, SIM_K_PRINT, 3 * OTM_EXEC_FRAG, 0);
    assert_int_equal(sim_world_run_until(s.w, kernel_ran, worker), SIM_OK);
    assert_int_equal(otm_node_kernels_to_run(worker), 0);
    assert_int_equal(otm_node_kernels_waiting(worker), 1);
    int moved = 0;
    while (!otm_queue_empty(s.q[0])) {
        sim_world_act_as(s.w, 1);
        moved += otm_handler_reply_once(worker);
        sim_world_step(s.w);
    }
    assert_true(moved > 0);
    assert_int_equal(s.q[0]->status, OTM_OK);
    close_world(&s);
}

/* A kernel chained behind one that has not run yet (otm/event.h) is held:
 * no handler claims it and nothing counts it as waiting or due, so it
 * neither blocks the kernels of other queues nor keeps a kernel thread
 * awake. It runs once the kernel ahead of it ran. */
static int both_kernels_queued(void *ctx)
{
    const otm_event *ev = ((otm_node *)ctx)->kern_head;
    return ev != NULL && ev->next != NULL;
}

static void test_chained_kernel_held(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    otm_node *worker = sim_world_node(s.w, 1);
    scn_execute(&s, 0, 1, SIM_K_SLEEP, 1000000, 0);
    scn_execute(&s, 0, 1, SIM_K_NOP, 0, 0);
    assert_int_equal(sim_world_run_until(s.w, both_kernels_queued, worker), SIM_OK);
    otm_event *first = worker->kern_head;
    assert_int_not_equal(first->next->after_id, 0);
    /* As a handler thread inside the first region holds it. */
    first->claimed = 1;
    assert_int_equal(otm_node_kernels_waiting(worker), 0);
    assert_int_equal(otm_node_kernels_to_run(worker), 0);
    sim_world_act_as(s.w, 1);
    assert_int_equal(otm_handler_run_once(worker), 0);
    assert_int_equal(first->next->state, OTM_CREATED);
    first->claimed = 0;
    expect_queue(&s, OTM_OK);
    assert_int_equal(sim_world_node(s.w, 0)->stats.chained, 1);
    assert_int_equal(worker->stats.chained, 1);
    close_world(&s);
}

/* A kernel the worker refuses (no such kernel) keeps its place in a
 * chain: the RETRIEVE chained behind it still reads what the SUBMIT
 * before both wrote, although the refusal needs no run of its own
 * (fuzz/corpus/fuzz_api/regression-chain-behind-refused-kernel). A long
 * region ahead holds the chain back, so the RETRIEVE arrives before the
 * SUBMIT's data has landed. */
static void test_refused_kernel_keeps_its_place(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    uint64_t addr = 0;
    uint8_t in[2048], out[sizeof in];
    scn_alloc(&s, 0, 1, sizeof in, &addr);
    expect_queue(&s, OTM_OK);
    scn_pattern(in, sizeof in, 7);
    memset(out, 0, sizeof out);
    scn_execute(&s, 0, 1, SIM_K_SLEEP, 1000000, 0);
    scn_submit(&s, 0, 1, addr, in, sizeof in);
    otm_op bad = {.kind = OTM_KIND_EXECUTE, .rank = 1, .arg = 0x1234};
    assert_int_equal(otm_host_enqueue(sim_world_node(s.w, 0), s.q[0], &bad, NULL), OTM_OK);
    scn_retrieve(&s, 0, 1, out, addr, sizeof out);
    expect_queue(&s, OTM_ERR_NO_KERNEL);
    assert_memory_equal(in, out, sizeof out);
    close_world(&s);
}

/* The fields of an operation that its kind does not use are ignored: a
 * SUBMIT with an argument count is a SUBMIT. */
static void test_unused_fields_ignored(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    uint8_t in[4] = {9, 8, 7, 6};
    otm_op op = {.kind = OTM_KIND_SUBMIT, .rank = 1, .addr = scn_global(&s, 1),
                 .size = sizeof in, .host = in, .nargs = OTM_MAX_ARGS + 1};
    assert_int_equal(otm_host_enqueue(sim_world_node(s.w, 0), s.q[0], &op, NULL), OTM_OK);
    expect_queue(&s, OTM_OK);
    close_world(&s);
}

/* A kernel takes up to OTM_MAX_ARGS arguments: the host sends that many,
 * and the worker's gate takes them (one more is refused by the host). */
static void test_most_arguments_run(void **state)
{
    (void)state;
    scn s;
    open_world(&s);
    uint64_t *args = calloc(OTM_MAX_ARGS + 1, sizeof *args);
    assert_non_null(args);
    otm_op op = {.kind = OTM_KIND_EXECUTE, .rank = 1, .nargs = OTM_MAX_ARGS,
                 .arg = sim_kernel_addr(SIM_K_NOP), .args = args};
    otm_node *host = sim_world_node(s.w, 0);
    assert_int_equal(otm_host_enqueue(host, s.q[0], &op, NULL), OTM_OK);
    expect_queue(&s, OTM_OK);
    op.nargs = OTM_MAX_ARGS + 1;
    assert_int_equal(otm_host_enqueue(host, s.q[0], &op, NULL), OTM_ERR_INVALID);
    assert_true(otm_queue_empty(s.q[0]));
    free(args);
    still_serves(&s);
    close_world(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_notifications_answered),
        cmocka_unit_test(test_unanswerable_notifications_dropped),
        cmocka_unit_test(test_notification_without_memory_dropped),
        cmocka_unit_test(test_malformed_exit_ignored),
        cmocka_unit_test(test_notification_during_exit_refused),
        cmocka_unit_test(test_notification_from_a_worker_answered_there),
        cmocka_unit_test(test_worker_failures_reach_host),
        cmocka_unit_test(test_host_rejects_bad_operations),
        cmocka_unit_test(test_most_arguments_run),
        cmocka_unit_test(test_worker_frees_ended_events),
        cmocka_unit_test(test_unused_fields_ignored),
        cmocka_unit_test(test_host_frees_ended_events),
        cmocka_unit_test(test_kernels_waiting),
        cmocka_unit_test(test_chained_kernel_held),
        cmocka_unit_test(test_refused_kernel_keeps_its_place),
        cmocka_unit_test(test_reply_once_never_runs_kernels),
        cmocka_unit_test(test_exchange_within_one_worker),
        cmocka_unit_test(test_load_in_fragments_of_zero_refused),
        cmocka_unit_test(test_execute_without_a_device_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
