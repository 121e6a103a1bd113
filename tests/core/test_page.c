/*
 * test_page.c - the page protocol of unified shared memory (otm/page.h)
 * over the simulated MPI: a worker's calls (ranges, a read, writes)
 * answered by rank 0's server from a stand-in for its memory, and bad
 * input both ways: each malformed ask is answered with its status (or
 * dropped, logged, when it names no reply tag) and the next valid call is
 * served; a malformed reply ends the call with OTM_ERR_BAD_MESSAGE. MPI
 * calls and allocations failed on either side end the call with a status
 * or leave it to be given up, and the server goes on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "otm/page.h"
#include "scenarios.h"

#define BASE 0x10000u           /* the host memory's stand-in: [BASE, BASE + SIZE) */
#define SIZE 8192u
#define TAG 5

static uint8_t memory[SIZE];
static uint64_t nranges = 3;

static otm_status fake_read(void *ctx, uint64_t addr, void *dst, uint64_t len)
{
    (void)ctx;
    if (addr < BASE || addr + len > BASE + SIZE)
        return OTM_ERR_BAD_POINTER;
    memcpy(dst, memory + (addr - BASE), len);
    return OTM_OK;
}

static otm_status fake_write(void *ctx, uint64_t addr, const void *src, uint64_t len)
{
    (void)ctx;
    if (addr < BASE || addr + len > BASE + SIZE)
        return OTM_ERR_BAD_POINTER;
    memcpy(memory + (addr - BASE), src, len);
    return OTM_OK;
}

static otm_status fake_ranges(void *ctx, uint64_t *dst, uint64_t cap, uint64_t *count)
{
    (void)ctx;
    *count = nranges;
    for (uint64_t i = 0; i < nranges && i < cap; i++)
        dst[2 * i] = BASE + i * 0x100000, dst[2 * i + 1] = BASE + i * 0x100000 + SIZE;
    return nranges <= cap ? OTM_OK : OTM_ERR_BAD_SIZE;
}

static const otm_page_host_ops ops = {fake_read, fake_write, fake_ranges, NULL};

typedef struct rig {
    scn s;
    otm_page_server srv;
    otm_page_call call;
    otm_status st;
    uint64_t value;
    int ended;
} rig;

/* Between the world's steps: rank 0 serves what it can, then the worker
 * tests its call. */
static int call_ended(void *ctx)
{
    rig *r = ctx;
    sim_world_act_as(r->s.w, 0);
    while (otm_page_serve(sim_world_node(r->s.w, 0), &r->srv, &ops))
        ;
    if (r->ended)
        return 1;
    sim_world_act_as(r->s.w, 1);
    r->ended = otm_page_call_test(sim_world_node(r->s.w, 1), &r->call, &r->st, &r->value);
    return r->ended;
}

static void open_rig(rig *r)
{
    memset(r, 0, sizeof *r);
    sim_config cfg = sim_config_default();
    cfg.workers = 1;
    assert_int_equal(scn_open(&r->s, &cfg, 1), 0);
    for (unsigned i = 0; i < SIZE; i++)
        memory[i] = (uint8_t)(i * 7);
    nranges = 3;
}

static void close_rig(rig *r)
{
    sim_world_act_as(r->s.w, 0);
    otm_page_server_fini(sim_world_node(r->s.w, 0), &r->srv);
    assert_int_equal(sim_world_run(r->s.w), SIM_OK);
    assert_int_equal(sim_world_teardown(r->s.w), SIM_OK);
    scn_close(&r->s);
}

/* One call from worker 1, run to its end; returns its status. */
static otm_status call(rig *r, otm_page_kind kind, uint64_t addr, uint64_t len,
                       uint8_t *ask, uint64_t payload, uint8_t *reply, uint64_t cap)
{
    sim_world_act_as(r->s.w, 1);
    assert_int_equal(otm_page_call_start(sim_world_node(r->s.w, 1), &r->call, kind, TAG, addr,
                                         len, ask, payload, reply, cap),
                     OTM_OK);
    r->ended = 0;
    assert_int_equal(sim_world_run_until(r->s.w, call_ended, r), SIM_OK);
    return r->st;
}

static otm_status read_page(rig *r, uint64_t addr, uint64_t len, uint8_t *out)
{
    uint8_t ask[OTM_PAGE_ASK_HEAD], reply[OTM_PAGE_REPLY_HEAD + 4096];
    otm_status st = call(r, OTM_PAGE_READ, addr, len, ask, 0, reply, sizeof reply);
    if (st == OTM_OK && out)
        memcpy(out, reply + OTM_PAGE_REPLY_HEAD, len);
    return st;
}

static void test_read_and_ranges(void **state)
{
    (void)state;
    rig r;
    uint8_t got[4096];
    open_rig(&r);
    assert_int_equal(read_page(&r, BASE + 4096, 4096, got), OTM_OK);
    assert_int_equal(r.value, 4096);
    assert_memory_equal(got, memory + 4096, 4096);
    assert_int_equal(read_page(&r, BASE + SIZE, 4096, NULL), OTM_ERR_BAD_POINTER);
    assert_int_equal(read_page(&r, BASE, OTM_PAGE_READ_MAX + 1, NULL), OTM_ERR_BAD_SIZE);

    uint8_t ask[OTM_PAGE_ASK_HEAD], reply[OTM_PAGE_REPLY_HEAD + 16 * 4];
    assert_int_equal(call(&r, OTM_PAGE_RANGES, 0, 1, ask, 0, reply, sizeof reply),
                     OTM_ERR_BAD_SIZE);
    assert_int_equal(r.value, 3);
    assert_int_equal(call(&r, OTM_PAGE_RANGES, 0, 4, ask, 0, reply, sizeof reply), OTM_OK);
    assert_int_equal(r.value, 3);
    uint64_t pairs[6];
    memcpy(pairs, reply + OTM_PAGE_REPLY_HEAD, sizeof pairs);
    assert_int_equal(pairs[0], BASE);
    assert_int_equal(pairs[5], BASE + 2 * 0x100000 + SIZE);
    assert_int_equal(r.srv.served[OTM_PAGE_READ], 1);
    assert_int_equal(r.srv.served[OTM_PAGE_RANGES], 1);
    assert_int_equal(r.srv.refused, 3);
    close_rig(&r);
}

/* Appends a record (addr, len, bytes of value v) at *at. */
static void record(uint8_t *buf, uint64_t *at, uint64_t addr, uint64_t len, uint8_t v)
{
    memcpy(buf + *at, &addr, 8);
    memcpy(buf + *at + 8, &len, 8);
    memset(buf + *at + 16, v, len);
    *at += 16 + len;
}

static void test_writes(void **state)
{
    (void)state;
    rig r;
    uint8_t buf[OTM_PAGE_ASK_HEAD + 256], reply[OTM_PAGE_REPLY_HEAD];
    uint64_t n = 0;
    open_rig(&r);
    uint8_t *rec = buf + OTM_PAGE_ASK_HEAD;
    record(rec, &n, BASE + 10, 3, 0xa1);
    record(rec, &n, BASE + 4000, 100, 0xb2);
    assert_int_equal(call(&r, OTM_PAGE_WRITE, 0, n, buf, n, reply, sizeof reply), OTM_OK);
    assert_int_equal(r.value, 103);
    assert_int_equal(memory[10], 0xa1);
    assert_int_equal(memory[12], 0xa1);
    assert_int_equal(memory[13], (uint8_t)(13 * 7));
    assert_int_equal(memory[4099], 0xb2);

    /* The second record lands outside: the first is written, and said. */
    n = 0;
    record(rec, &n, BASE + 20, 4, 0xc3);
    record(rec, &n, BASE + SIZE - 2, 4, 0xc3);
    assert_int_equal(call(&r, OTM_PAGE_WRITE, 0, n, buf, n, reply, sizeof reply),
                     OTM_ERR_BAD_POINTER);
    assert_int_equal(r.value, 4);
    assert_int_equal(memory[23], 0xc3);

    /* A record longer than what follows it; a tail shorter than a record's
     * head; a length that is not the payload's. */
    n = 0;
    record(rec, &n, BASE, 8, 0xd4);
    uint64_t lie = 200;
    memcpy(rec + 8, &lie, 8);
    assert_int_equal(call(&r, OTM_PAGE_WRITE, 0, n, buf, n, reply, sizeof reply),
                     OTM_ERR_BAD_MESSAGE);
    assert_int_equal(call(&r, OTM_PAGE_WRITE, 0, 7, buf, 7, reply, sizeof reply),
                     OTM_ERR_BAD_MESSAGE);
    assert_int_equal(call(&r, OTM_PAGE_WRITE, 0, 9, buf, 7, reply, sizeof reply),
                     OTM_ERR_BAD_MESSAGE);
    assert_int_equal(memory[0], 0);
    assert_int_equal(read_page(&r, BASE, 4096, NULL), OTM_OK);
    close_rig(&r);
}

/* ---- asks sent by hand ---- */

/* Worker 1 sends `len` bytes of `ask` as an ask; with `answer`, the
 * status of the reply on TAG, else -1 once rank 0 counted a drop. */
typedef struct raw {
    rig *r;
    MPI_Request req;
    uint8_t reply[OTM_PAGE_REPLY_HEAD + 64];
    int answer, done;
    uint64_t dropped;
} raw;

static int raw_ended(void *ctx)
{
    raw *w = ctx;
    int flag = 0;
    sim_world_act_as(w->r->s.w, 0);
    while (otm_page_serve(sim_world_node(w->r->s.w, 0), &w->r->srv, &ops))
        ;
    if (!w->answer)
        return w->r->srv.dropped > w->dropped && w->r->srv.state == 0;
    sim_world_act_as(w->r->s.w, 1);
    assert_int_equal(MPI_Test(&w->req, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    return flag;
}

static int send_raw(rig *r, const uint8_t *ask, int len, int answer)
{
    raw w = {.r = r, .answer = answer, .dropped = r->srv.dropped};
    otm_node *worker = sim_world_node(r->s.w, 1);
    MPI_Request sreq;
    sim_world_act_as(r->s.w, 1);
    if (answer)
        assert_int_equal(MPI_Irecv(w.reply, sizeof w.reply, MPI_BYTE, 0, TAG, worker->pages,
                                   &w.req), MPI_SUCCESS);
    assert_int_equal(MPI_Isend(ask, len, MPI_BYTE, 0, OTM_PAGE_TAG_ASK, worker->pages,
                               &sreq), MPI_SUCCESS);
    assert_int_equal(sim_world_run_until(r->s.w, raw_ended, &w), SIM_OK);
    sim_world_act_as(r->s.w, 1);
    int flag = 0;
    assert_int_equal(MPI_Test(&sreq, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    assert_true(flag);
    if (!answer)
        return -1;
    int32_t st;
    memcpy(&st, w.reply + 4, 4);
    return st;
}

/* A valid ask's header, to spoil. */
static void valid_ask(uint8_t *a, uint16_t kind, int tag)
{
    uint32_t magic = OTM_PAGE_MAGIC, t = (uint32_t)tag;
    uint16_t version = OTM_PAGE_VERSION;
    uint64_t addr = BASE, len = 64;
    memset(a, 0, OTM_PAGE_ASK_HEAD);
    memcpy(a, &magic, 4);
    memcpy(a + 4, &version, 2);
    memcpy(a + 6, &kind, 2);
    memcpy(a + 8, &t, 4);
    memcpy(a + 16, &addr, 8);
    memcpy(a + 24, &len, 8);
}

static void test_bad_asks(void **state)
{
    (void)state;
    rig r;
    static uint8_t a[OTM_PAGE_ASK_HEAD + OTM_PAGE_WRITE_MAX + 64];
    open_rig(&r);
    valid_ask(a, OTM_PAGE_READ, TAG);
    assert_int_equal(send_raw(&r, a, OTM_PAGE_ASK_HEAD, 1), OTM_OK);

    valid_ask(a, 9, TAG);
    assert_int_equal(send_raw(&r, a, OTM_PAGE_ASK_HEAD, 1), OTM_ERR_BAD_KIND);
    valid_ask(a, 0, TAG);
    assert_int_equal(send_raw(&r, a, OTM_PAGE_ASK_HEAD, 1), OTM_ERR_BAD_KIND);
    valid_ask(a, OTM_PAGE_READ, TAG);
    a[4] = 7;
    assert_int_equal(send_raw(&r, a, OTM_PAGE_ASK_HEAD, 1), OTM_ERR_BAD_VERSION);
    valid_ask(a, OTM_PAGE_READ, TAG);
    assert_int_equal(send_raw(&r, a, 20, 1), OTM_ERR_BAD_MESSAGE);
    /* Larger than any worker sends: its header is answered. */
    valid_ask(a, OTM_PAGE_WRITE, TAG);
    assert_int_equal(send_raw(&r, a, (int)sizeof a, 1), OTM_ERR_BAD_MESSAGE);

    /* No reply tag to answer on: dropped, counted. */
    valid_ask(a, OTM_PAGE_READ, 0);
    assert_int_equal(send_raw(&r, a, OTM_PAGE_ASK_HEAD, 0), -1);
    valid_ask(a, OTM_PAGE_READ, TAG);
    a[0] ^= 0xff;
    assert_int_equal(send_raw(&r, a, OTM_PAGE_ASK_HEAD, 0), -1);
    assert_int_equal(send_raw(&r, a, 0, 0), -1);
    assert_int_equal(r.srv.dropped, 3);

    /* And the next call is served. */
    assert_int_equal(read_page(&r, BASE, 4096, NULL), OTM_OK);
    close_rig(&r);
}

/* Sends `reply` (len bytes) by hand as rank 0 on TAG, for a call of
 * worker 1's that rank 0 never serves; returns the call's status. */
static otm_status bad_reply(rig *r, const uint8_t *reply, int len)
{
    uint8_t ask[OTM_PAGE_ASK_HEAD], in[OTM_PAGE_REPLY_HEAD + 64], taken[OTM_PAGE_ASK_HEAD];
    otm_node *host = sim_world_node(r->s.w, 0), *worker = sim_world_node(r->s.w, 1);
    MPI_Request rreq, sreq;
    sim_world_act_as(r->s.w, 1);
    assert_int_equal(otm_page_call_start(worker, &r->call, OTM_PAGE_READ, TAG, BASE, 64, ask,
                                         0, in, sizeof in), OTM_OK);
    sim_world_act_as(r->s.w, 0);
    assert_int_equal(MPI_Irecv(taken, sizeof taken, MPI_BYTE, 1, OTM_PAGE_TAG_ASK, host->pages,
                               &rreq), MPI_SUCCESS);
    assert_int_equal(MPI_Isend(reply, len, MPI_BYTE, 1, TAG, host->pages, &sreq),
                     MPI_SUCCESS);
    /* call_ended also runs the server, which finds nothing: the ask is
     * taken by the receive above. */
    r->ended = 0;
    assert_int_equal(sim_world_run_until(r->s.w, call_ended, r), SIM_OK);
    int flag = 0;
    sim_world_act_as(r->s.w, 0);
    while (!flag) {
        assert_int_equal(MPI_Test(&rreq, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
        if (!flag)
            sim_world_step(r->s.w);
    }
    assert_int_equal(MPI_Test(&sreq, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    return r->st;
}

static void test_bad_replies(void **state)
{
    (void)state;
    rig r;
    uint8_t reply[OTM_PAGE_REPLY_HEAD] = {0};
    uint32_t magic = OTM_PAGE_MAGIC;
    int32_t st = 999;
    open_rig(&r);
    assert_int_equal(bad_reply(&r, reply, 8), OTM_ERR_BAD_MESSAGE);         /* short */
    assert_int_equal(bad_reply(&r, reply, sizeof reply), OTM_ERR_BAD_MESSAGE); /* magic */
    memcpy(reply, &magic, 4);
    memcpy(reply + 4, &st, 4);
    assert_int_equal(bad_reply(&r, reply, sizeof reply), OTM_ERR_BAD_MESSAGE); /* status */

    /* Bad arguments start nothing. */
    uint8_t ask[OTM_PAGE_ASK_HEAD], in[OTM_PAGE_REPLY_HEAD];
    otm_node *worker = sim_world_node(r.s.w, 1);
    sim_world_act_as(r.s.w, 1);
    assert_int_equal(otm_page_call_start(worker, &r.call, 0, TAG, 0, 0, ask, 0, in, sizeof in),
                     OTM_ERR_INVALID);
    assert_int_equal(otm_page_call_start(worker, &r.call, OTM_PAGE_READ, 0, 0, 0, ask, 0, in,
                                         sizeof in), OTM_ERR_INVALID);
    assert_int_equal(otm_page_call_start(worker, &r.call, OTM_PAGE_READ, TAG, 0, 0, ask, 0, in,
                                         4), OTM_ERR_INVALID);
    assert_int_equal(otm_page_call_start(worker, &r.call, OTM_PAGE_WRITE, TAG, 0, 0, ask,
                                         OTM_PAGE_WRITE_MAX + 1, in, sizeof in),
                     OTM_ERR_INVALID);
    assert_int_equal(otm_page_call_start(worker, &r.call, OTM_PAGE_READ, TAG, 0, 0, NULL, 0,
                                         in, sizeof in), OTM_ERR_INVALID);

    /* A call given up before its answer: its receive is cancelled, the
     * server's answer finds no one and is left to the world's end. */
    assert_int_equal(otm_page_call_start(worker, &r.call, OTM_PAGE_READ, TAG + 1, BASE, 64,
                                         ask, 0, in, sizeof in), OTM_OK);
    otm_page_call_cancel(worker, &r.call);
    close_rig(&r);
}

/* The next call of `fn` by `rank` fails. */
static void fail_next(int rank, sim_fn fn)
{
    sim_net *net = sim_net_installed();
    sim_net_fail_call(net, rank, fn, sim_net_calls(net, rank, fn) + 1);
}

/* Steps the world until `moved` says so or nothing moves; returns it. */
static int serve_until_stuck(rig *r)
{
    int moved = 0;
    for (int i = 0; i < 64; i++) {
        sim_world_act_as(r->s.w, 0);
        moved |= otm_page_serve(sim_world_node(r->s.w, 0), &r->srv, &ops);
        if (!sim_world_step(r->s.w))
            break;
    }
    return moved;
}

static void test_mpi_failures(void **state)
{
    (void)state;
    rig r;
    uint8_t ask[OTM_PAGE_ASK_HEAD], in[OTM_PAGE_REPLY_HEAD + 64];
    open_rig(&r);
    otm_node *worker = sim_world_node(r.s.w, 1);
    sim_world_act_as(r.s.w, 1);
    /* The worker's receive, then its send, refused: nothing is left posted. */
    fail_next(1, SIM_FN_Irecv);
    assert_int_equal(otm_page_call_start(worker, &r.call, OTM_PAGE_READ, TAG, BASE, 64, ask,
                                         0, in, sizeof in), OTM_ERR_MPI);
    fail_next(1, SIM_FN_Isend);
    assert_int_equal(otm_page_call_start(worker, &r.call, OTM_PAGE_READ, TAG, BASE, 64, ask,
                                         0, in, sizeof in), OTM_ERR_MPI);
    assert_int_equal(read_page(&r, BASE, 64, NULL), OTM_OK);

    /* A failed test of the call, and of the reply's length: OTM_ERR_MPI. */
    otm_status st;
    uint64_t value;
    sim_world_act_as(r.s.w, 1);
    fail_next(1, SIM_FN_Test);
    assert_int_equal(otm_page_call_start(worker, &r.call, OTM_PAGE_READ, TAG, BASE, 64, ask,
                                         0, in, sizeof in), OTM_OK);
    assert_int_equal(otm_page_call_test(worker, &r.call, &st, &value), 1);
    assert_int_equal(st, OTM_ERR_MPI);
    serve_until_stuck(&r);      /* its ask is answered to no one */
    fail_next(1, SIM_FN_Get_count);
    sim_world_act_as(r.s.w, 1);
    assert_int_equal(otm_page_call_start(worker, &r.call, OTM_PAGE_READ, TAG + 5, BASE, 64,
                                         ask, 0, in, sizeof in), OTM_OK);
    r.ended = 0;
    assert_int_equal(sim_world_run_until(r.s.w, call_ended, &r), SIM_OK);
    assert_int_equal(r.st, OTM_ERR_MPI);
    /* Rank 0 without the length of an ask takes it as empty: it names no
     * reply tag, so it is dropped and counted. */
    uint64_t dropped = r.srv.dropped;
    fail_next(0, SIM_FN_Get_count);
    sim_world_act_as(r.s.w, 1);
    assert_int_equal(otm_page_call_start(worker, &r.call, OTM_PAGE_READ, TAG + 6, BASE, 64,
                                         ask, 0, in, sizeof in), OTM_OK);
    serve_until_stuck(&r);
    assert_int_equal(r.srv.dropped, dropped + 1);
    sim_world_act_as(r.s.w, 1);
    otm_page_call_cancel(worker, &r.call);

    /* The server's probe, receive and reply refused: it goes on, and the
     * calls it could not answer are given up. */
    sim_world_act_as(r.s.w, 0);
    fail_next(0, SIM_FN_Improbe);
    assert_int_equal(otm_page_serve(sim_world_node(r.s.w, 0), &r.srv, &ops), 0);
    fail_next(0, SIM_FN_Imrecv);
    sim_world_act_as(r.s.w, 1);
    /* Tags of their own: an answer to a call given up may still come. */
    assert_int_equal(otm_page_call_start(worker, &r.call, OTM_PAGE_READ, TAG + 2, BASE, 64,
                                         ask, 0, in, sizeof in), OTM_OK);
    assert_true(serve_until_stuck(&r));
    sim_world_act_as(r.s.w, 1);
    assert_int_equal(otm_page_call_test(worker, &r.call, &st, &value), 0);
    otm_page_call_cancel(worker, &r.call);
    fail_next(0, SIM_FN_Isend);
    sim_world_act_as(r.s.w, 1);
    assert_int_equal(otm_page_call_start(worker, &r.call, OTM_PAGE_READ, TAG + 3, BASE, 64,
                                         ask, 0, in, sizeof in), OTM_OK);
    assert_true(serve_until_stuck(&r));
    sim_world_act_as(r.s.w, 1);
    assert_int_equal(otm_page_call_test(worker, &r.call, &st, &value), 0);
    otm_page_call_cancel(worker, &r.call);
    assert_int_equal(r.srv.state, 0);
    sim_world_act_as(r.s.w, 1);
    assert_int_equal(otm_page_call_start(worker, &r.call, OTM_PAGE_READ, TAG + 4, BASE, 64,
                                         ask, 0, in, sizeof in), OTM_OK);
    r.ended = 0;
    assert_int_equal(sim_world_run_until(r.s.w, call_ended, &r), SIM_OK);
    assert_int_equal(r.st, OTM_OK);
    close_rig(&r);
}

/* No memory on rank 0 for an ask larger than any before, or for its
 * answer: answered OTM_ERR_NOMEM, and the next one served. */
static void test_no_memory(void **state)
{
    (void)state;
    rig r;
    static uint8_t buf[OTM_PAGE_ASK_HEAD + 8192];
    uint8_t reply[OTM_PAGE_REPLY_HEAD + 4096];
    uint64_t n = 0;
    open_rig(&r);
    assert_int_equal(read_page(&r, BASE, 64, NULL), OTM_OK);
    sim_world_fail_alloc(r.s.w, 0, 1);      /* the larger ask's buffer */
    record(buf + OTM_PAGE_ASK_HEAD, &n, BASE, 4000, 0x11);
    assert_int_equal(call(&r, OTM_PAGE_WRITE, 0, n, buf, n, reply, sizeof reply),
                     OTM_ERR_NOMEM);
    assert_int_equal(memory[0], 0);
    sim_world_fail_alloc(r.s.w, 0, 1);      /* the larger answer's buffer */
    assert_int_equal(read_page(&r, BASE, 4096, NULL), OTM_ERR_NOMEM);
    uint8_t ask[OTM_PAGE_ASK_HEAD], pairs[OTM_PAGE_REPLY_HEAD + 16 * 64];
    sim_world_fail_alloc(r.s.w, 0, 1);
    assert_int_equal(call(&r, OTM_PAGE_RANGES, 0, 64, ask, 0, pairs, sizeof pairs),
                     OTM_ERR_NOMEM);
    /* Those failed the ask's buffer; with one in hand, the answer's. */
    assert_int_equal(read_page(&r, BASE, 64, NULL), OTM_OK);
    sim_world_fail_alloc(r.s.w, 0, 1);
    assert_int_equal(read_page(&r, BASE, 4096, NULL), OTM_ERR_NOMEM);
    sim_world_fail_alloc(r.s.w, 0, 1);
    assert_int_equal(call(&r, OTM_PAGE_RANGES, 0, 64, ask, 0, pairs, sizeof pairs),
                     OTM_ERR_NOMEM);
    assert_int_equal(read_page(&r, BASE, 4096, NULL), OTM_OK);

    /* Torn down while receiving an ask: its receive is given up. */
    sim_world_act_as(r.s.w, 1);
    assert_int_equal(otm_page_call_start(sim_world_node(r.s.w, 1), &r.call, OTM_PAGE_READ, TAG,
                                         BASE, 64, ask, 0, reply, sizeof reply), OTM_OK);
    for (int i = 0; i < 64 && r.srv.state != 1; i++) {
        sim_world_act_as(r.s.w, 0);
        otm_page_serve(sim_world_node(r.s.w, 0), &r.srv, &ops);
        if (r.srv.state != 1)
            sim_world_step(r.s.w);
    }
    sim_world_act_as(r.s.w, 1);
    otm_page_call_cancel(sim_world_node(r.s.w, 1), &r.call);
    close_rig(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_and_ranges),
        cmocka_unit_test(test_writes),
        cmocka_unit_test(test_bad_asks),
        cmocka_unit_test(test_bad_replies),
        cmocka_unit_test(test_mpi_failures),
        cmocka_unit_test(test_no_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
