/*
 * test_net.c - the MPI semantics of the simulator (sim/net.h).
 *
 * The calls below are plain MPI calls: the binary links no libmpi and the
 * linker routes them to sim/wrap.c's __wrap_MPI_* functions, acting as the
 * rank chosen with sim_net_set_rank. Each test runs on a fresh net of three
 * ranks with MPI_TAG_UB = 100 and an eager limit of 16 bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <mpi.h>

#include "net.h"

#define NRANKS 3
#define TAG_UB 100
#define EAGER 16
#define BIG 32 /* above EAGER: rendezvous */

static int setup(void **state)
{
    sim_net_config cfg = {NRANKS, TAG_UB, EAGER, 0, {0}, 0};
    sim_net *net = sim_net_create(&cfg);

    if (!net)
        return -1;
    sim_net_install(net);
    *state = net;
    return 0;
}

static int teardown(void **state)
{
    sim_net_destroy(*state);
    assert_null(sim_net_installed());
    return 0;
}

/* ---- helpers --------------------------------------------------------- */

static MPI_Request isend(sim_net *net, int from, int to, int tag, MPI_Comm comm,
                         const void *buf, int len)
{
    MPI_Request rq = MPI_REQUEST_NULL;

    sim_net_set_rank(net, from);
    assert_int_equal(MPI_Isend(buf, len, MPI_BYTE, to, tag, comm, &rq),
                     MPI_SUCCESS);
    assert_int_not_equal(rq, MPI_REQUEST_NULL);
    return rq;
}

static MPI_Request irecv(sim_net *net, int rank, int src, int tag,
                         MPI_Comm comm, void *buf, int cap)
{
    MPI_Request rq = MPI_REQUEST_NULL;

    sim_net_set_rank(net, rank);
    assert_int_equal(MPI_Irecv(buf, cap, MPI_BYTE, src, tag, comm, &rq),
                     MPI_SUCCESS);
    assert_int_not_equal(rq, MPI_REQUEST_NULL);
    return rq;
}

/* MPI_Test as `rank`; returns the flag. */
static int done(sim_net *net, int rank, MPI_Request *rq, MPI_Status *st)
{
    int flag = -1;

    sim_net_set_rank(net, rank);
    assert_int_equal(MPI_Test(rq, &flag, st ? st : MPI_STATUS_IGNORE),
                     MPI_SUCCESS);
    assert_true(flag == 0 || flag == 1);
    if (flag)
        assert_int_equal(*rq, MPI_REQUEST_NULL);
    return flag;
}

static void deliver_all(sim_net *net)
{
    sim_chan c;

    while (sim_net_ready(net, &c, 1) > 0)
        sim_net_deliver(net, &c);
    assert_int_equal(sim_net_in_flight(net), 0);
}

static void deliver_chan(sim_net *net, int src, int dst, MPI_Comm comm)
{
    sim_chan c = {src, dst, comm};
    sim_net_deliver(net, &c);
}

/* Receives one message as `rank` and checks its source and payload. */
static void expect_recv(sim_net *net, int rank, int src, int tag,
                        MPI_Comm comm, int want_src, const char *want)
{
    char buf[64] = {0};
    MPI_Status st;
    MPI_Request rq = irecv(net, rank, src, tag, comm, buf, sizeof buf);

    assert_true(done(net, rank, &rq, &st));
    assert_int_equal(st.MPI_SOURCE, want_src);
    assert_string_equal(buf, want);
}

static MPI_Comm dup_world(sim_net *net, int rank)
{
    MPI_Comm c = MPI_COMM_NULL;

    sim_net_set_rank(net, rank);
    assert_int_equal(MPI_Comm_dup(MPI_COMM_WORLD, &c), MPI_SUCCESS);
    return c;
}

/* ---- matching --------------------------------------------------------- */

static void test_matching(void **state)
{
    sim_net *net = *state;
    MPI_Comm dup = dup_world(net, 0);
    char late[8] = {0};
    MPI_Request pending;

    assert_int_equal(dup_world(net, 2), dup);
    isend(net, 0, 2, 5, MPI_COMM_WORLD, "a", 2);
    isend(net, 1, 2, 6, MPI_COMM_WORLD, "b", 2);
    isend(net, 0, 2, 5, dup, "c", 2);
    deliver_all(net);
    assert_int_equal(sim_net_unreceived(net, 2), 3);

    /* Nothing from rank 0 with tag 7: stays pending through all this. */
    pending = irecv(net, 2, 0, 7, MPI_COMM_WORLD, late, sizeof late);
    expect_recv(net, 2, 1, MPI_ANY_TAG, MPI_COMM_WORLD, 1, "b");
    expect_recv(net, 2, MPI_ANY_SOURCE, 5, dup, 0, "c");
    expect_recv(net, 2, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, 0, "a");
    assert_false(done(net, 2, &pending, NULL));
    assert_int_equal(sim_net_unreceived(net, 2), 0);

    /* A receive posted first takes the message when it arrives. */
    isend(net, 0, 2, 7, MPI_COMM_WORLD, "late", 5);
    assert_false(done(net, 2, &pending, NULL));
    deliver_all(net);
    assert_true(done(net, 2, &pending, NULL));
    assert_string_equal(late, "late");
    assert_int_equal(sim_net_unreceived(net, 2), 0);
    assert_int_equal(sim_net_misuse(net), 0);
}

/* Posted receives are matched in post order. */
static void test_posted_order(void **state)
{
    sim_net *net = *state;
    char b1[8] = {0}, b2[8] = {0};
    MPI_Request r1 = irecv(net, 1, MPI_ANY_SOURCE, MPI_ANY_TAG,
                           MPI_COMM_WORLD, b1, sizeof b1);
    MPI_Request r2 = irecv(net, 1, 0, 3, MPI_COMM_WORLD, b2, sizeof b2);

    isend(net, 0, 1, 3, MPI_COMM_WORLD, "one", 4);
    isend(net, 0, 1, 3, MPI_COMM_WORLD, "two", 4);
    deliver_all(net);
    assert_true(done(net, 1, &r1, NULL));
    assert_true(done(net, 1, &r2, NULL));
    assert_string_equal(b1, "one");
    assert_string_equal(b2, "two");
}

static void test_non_overtaking(void **state)
{
    sim_net *net = *state;
    sim_chan c[4];

    isend(net, 0, 1, 9, MPI_COMM_WORLD, "first", 6);
    isend(net, 0, 1, 9, MPI_COMM_WORLD, "second", 7);
    assert_int_equal(sim_net_in_flight(net), 2);
    /* One channel, so one deliverable message: the oldest. */
    assert_int_equal(sim_net_ready(net, c, 4), 1);
    assert_int_equal(c[0].src, 0);
    assert_int_equal(c[0].dst, 1);
    assert_int_equal(c[0].comm, MPI_COMM_WORLD);
    sim_net_deliver(net, &c[0]);
    assert_int_equal(sim_net_in_flight(net), 1);
    assert_int_equal(sim_net_unreceived(net, 1), 1);
    expect_recv(net, 1, 0, 9, MPI_COMM_WORLD, 0, "first");
    deliver_all(net);
    expect_recv(net, 1, 0, 9, MPI_COMM_WORLD, 0, "second");
}

static void test_channels_any_order(void **state)
{
    sim_net *net = *state;
    sim_chan c[4];

    isend(net, 0, 2, 1, MPI_COMM_WORLD, "x", 2);
    isend(net, 1, 2, 1, MPI_COMM_WORLD, "y", 2);
    /* Both channels ready, listed in (src, dst, comm) order. */
    assert_int_equal(sim_net_ready(net, c, 4), 2);
    assert_int_equal(c[0].src, 0);
    assert_int_equal(c[1].src, 1);
    /* max smaller than the count: truncated list, full count. */
    assert_int_equal(sim_net_ready(net, c, 1), 2);
    assert_int_equal(sim_net_ready(net, NULL, 0), 2);

    /* The caller picks the later channel first; arrival order follows. */
    deliver_chan(net, 1, 2, MPI_COMM_WORLD);
    deliver_chan(net, 0, 2, MPI_COMM_WORLD);
    expect_recv(net, 2, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, 1, "y");
    expect_recv(net, 2, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, 0, "x");
}

static void test_improbe_any_source(void **state)
{
    sim_net *net = *state;
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Request rq = MPI_REQUEST_NULL;
    MPI_Status st;
    char buf[8] = {0};
    int flag = -1;

    isend(net, 0, 2, 4, MPI_COMM_WORLD, "x", 2);
    isend(net, 1, 2, 4, MPI_COMM_WORLD, "y", 2);
    sim_net_set_rank(net, 2);
    assert_int_equal(MPI_Improbe(MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &flag,
                                 &msg, &st), MPI_SUCCESS);
    assert_int_equal(flag, 0);

    deliver_chan(net, 1, 2, MPI_COMM_WORLD);
    sim_net_set_rank(net, 2);
    assert_int_equal(MPI_Improbe(MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &flag,
                                 &msg, &st), MPI_SUCCESS);
    assert_int_equal(flag, 1);
    assert_int_equal(st.MPI_SOURCE, 1);
    assert_int_equal(st.MPI_TAG, 4);
    assert_int_not_equal(msg, MPI_MESSAGE_NULL);
    assert_int_not_equal(msg, MPI_MESSAGE_NO_PROC);
    /* Probed but not received: still counted as unreceived. */
    assert_int_equal(sim_net_unreceived(net, 2), 1);
    /* The message left the arrived list: a second probe does not see it. */
    assert_int_equal(MPI_Improbe(MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, &flag,
                                 &msg, MPI_STATUS_IGNORE), MPI_SUCCESS);
    assert_int_equal(flag, 0);

    assert_int_equal(MPI_Imrecv(buf, sizeof buf, MPI_BYTE, &msg, &rq),
                     MPI_SUCCESS);
    assert_int_equal(msg, MPI_MESSAGE_NULL);
    assert_true(done(net, 2, &rq, &st));
    assert_string_equal(buf, "y");
    assert_int_equal(sim_net_unreceived(net, 2), 0);

    deliver_all(net);
    expect_recv(net, 2, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, 0, "x");
}

/* ---- the oracle of matches ------------------------------------------------------ */

static uint64_t owners[NRANKS];

static uint64_t owner_of(void *ctx, int rank)
{
    (void)ctx;
    return owners[rank];
}

/* Sends as `from` on behalf of `owner`, receives as `to` on behalf of
 * `poster` (posted before or after the arrival), by Irecv or by
 * Improbe and Imrecv. */
static void send_recv_as(sim_net *net, uint64_t owner, uint64_t poster, int posted_first,
                         int probe)
{
    char buf[8] = {0};
    MPI_Request rq = MPI_REQUEST_NULL;
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Status st;
    int flag = 0;
    owners[0] = owner;
    owners[1] = poster;
    if (posted_first && !probe)
        rq = irecv(net, 1, 0, 9, MPI_COMM_WORLD, buf, sizeof buf);
    isend(net, 0, 1, 9, MPI_COMM_WORLD, "m", 2);
    deliver_all(net);
    if (probe) {
        sim_net_set_rank(net, 1);
        assert_int_equal(MPI_Improbe(0, 9, MPI_COMM_WORLD, &flag, &msg, &st), MPI_SUCCESS);
        assert_int_equal(flag, 1);
        assert_int_equal(MPI_Imrecv(buf, sizeof buf, MPI_BYTE, &msg, &rq), MPI_SUCCESS);
    } else if (!posted_first) {
        rq = irecv(net, 1, 0, 9, MPI_COMM_WORLD, buf, sizeof buf);
    }
    assert_true(done(net, 1, &rq, NULL));
    assert_string_equal(buf, "m");
}

static void test_oracle_of_matches(void **state)
{
    sim_net *net = *state;
    const char *first = NULL;
    sim_net_set_owner(net, owner_of, NULL);
    /* The same operation on both sides, or an unknown side: nothing. */
    for (int how = 0; how < 3; how++) {
        send_recv_as(net, 5, 5, how == 0, how == 2);
        send_recv_as(net, 0, 5, how == 0, how == 2);
        send_recv_as(net, 5, 0, how == 0, how == 2);
    }
    assert_int_equal(sim_net_mismatches(net, &first), 0);
    assert_string_equal(first, "");
    /* A receive posted by operation 6 takes operation 5's message, each
     * way a receive can take it: counted, the first described. */
    send_recv_as(net, 5, 6, 1, 0);
    assert_int_equal(sim_net_mismatches(net, &first), 1);
    assert_non_null(strstr(first, "rank 1: a receive posted by event 6 took message"));
    assert_non_null(strstr(first, "of event 5 (from rank 0"));
    send_recv_as(net, 5, 7, 0, 0);
    send_recv_as(net, 8, 7, 0, 1);
    assert_int_equal(sim_net_mismatches(net, NULL), 3);
    assert_non_null(strstr(first, "posted by event 6"));
    /* Without the function nothing is stamped. */
    sim_net_set_owner(net, NULL, NULL);
    send_recv_as(net, 5, 6, 1, 0);
    assert_int_equal(sim_net_mismatches(net, NULL), 3);
}

static void test_imrecv_bad_message(void **state)
{
    sim_net *net = *state;
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Request rq = MPI_REQUEST_NULL;
    char buf[4];

    sim_net_set_rank(net, 0);
    assert_int_equal(MPI_Imrecv(buf, sizeof buf, MPI_BYTE, &msg, &rq),
                     MPI_ERR_REQUEST);
    assert_int_equal(rq, MPI_REQUEST_NULL);
    assert_int_equal(sim_net_misuse(net), 1);
    assert_int_equal(sim_net_live_requests(net, 0), 0);
}

/* ---- completion of sends ---------------------------------------------- */

static void test_eager_completes_at_once(void **state)
{
    sim_net *net = *state;
    char payload[EAGER];
    MPI_Request rq;

    memset(payload, 'e', sizeof payload);
    payload[EAGER - 1] = 0;
    rq = isend(net, 0, 1, 1, MPI_COMM_WORLD, payload, EAGER);
    assert_true(done(net, 0, &rq, NULL));
    /* The payload was copied at the call: the sender may reuse its buffer. */
    memset(payload, 'X', sizeof payload - 1);
    deliver_all(net);
    expect_recv(net, 1, 0, 1, MPI_COMM_WORLD, 0, "eeeeeeeeeeeeeee");
}

static void test_rendezvous_waits_for_receive(void **state)
{
    sim_net *net = *state;
    char payload[BIG], got[BIG];
    MPI_Request s, r;

    memset(payload, 'r', sizeof payload);
    s = isend(net, 0, 1, 1, MPI_COMM_WORLD, payload, BIG);
    assert_false(done(net, 0, &s, NULL));
    deliver_all(net);
    assert_false(done(net, 0, &s, NULL));
    r = irecv(net, 1, 0, 1, MPI_COMM_WORLD, got, sizeof got);
    assert_true(done(net, 1, &r, NULL));
    assert_memory_equal(got, payload, BIG);
    assert_true(done(net, 0, &s, NULL));
}

static void test_self_send_is_rendezvous(void **state)
{
    sim_net *net = *state;
    MPI_Request s, r;
    char got[2] = {0};

    s = isend(net, 0, 0, 2, MPI_COMM_WORLD, "s", 2);
    assert_false(done(net, 0, &s, NULL));
    deliver_all(net);
    assert_false(done(net, 0, &s, NULL));
    r = irecv(net, 0, 0, 2, MPI_COMM_WORLD, got, sizeof got);
    assert_true(done(net, 0, &r, NULL));
    assert_true(done(net, 0, &s, NULL));
    assert_string_equal(got, "s");
}

static void test_truncation(void **state)
{
    sim_net *net = *state;
    char got[4] = {0};
    MPI_Request r;
    MPI_Status st;
    int flag = 0, count = -1;

    isend(net, 0, 1, 1, MPI_COMM_WORLD, "abcdefg", 8);
    deliver_all(net);
    r = irecv(net, 1, 0, 1, MPI_COMM_WORLD, got, sizeof got);
    assert_int_equal(MPI_Test(&r, &flag, &st), MPI_ERR_TRUNCATE);
    assert_int_equal(flag, 1);
    assert_int_equal(r, MPI_REQUEST_NULL);
    assert_int_equal(st.MPI_ERROR, MPI_ERR_TRUNCATE);
    assert_int_equal(MPI_Get_count(&st, MPI_BYTE, &count), MPI_SUCCESS);
    assert_int_equal(count, 4);
    assert_memory_equal(got, "abcd", 4);
    /* Truncation is legal MPI, not misuse. */
    assert_int_equal(sim_net_misuse(net), 0);
    assert_int_equal(sim_net_live_requests(net, 1), 0);
}

/* ---- cancel and free --------------------------------------------------- */

static void test_cancel(void **state)
{
    sim_net *net = *state;
    char buf[8] = {0};
    MPI_Request r = irecv(net, 1, 0, 1, MPI_COMM_WORLD, buf, sizeof buf);
    MPI_Status st;
    int cancelled = -1;

    sim_net_set_rank(net, 1);
    assert_int_equal(MPI_Cancel(&r), MPI_SUCCESS);
    assert_int_not_equal(r, MPI_REQUEST_NULL);
    assert_true(done(net, 1, &r, &st));
    assert_int_equal(MPI_Test_cancelled(&st, &cancelled), MPI_SUCCESS);
    assert_int_equal(cancelled, 1);

    /* The cancelled receive takes nothing: the message waits for another. */
    isend(net, 0, 1, 1, MPI_COMM_WORLD, "m", 2);
    deliver_all(net);
    assert_int_equal(sim_net_unreceived(net, 1), 1);

    /* Cancelling a matched receive has no effect. */
    r = irecv(net, 1, 0, 1, MPI_COMM_WORLD, buf, sizeof buf);
    assert_int_equal(MPI_Cancel(&r), MPI_SUCCESS);
    assert_true(done(net, 1, &r, &st));
    assert_int_equal(MPI_Test_cancelled(&st, &cancelled), MPI_SUCCESS);
    assert_int_equal(cancelled, 0);
    assert_string_equal(buf, "m");
}

static void test_cancel_send_has_no_effect(void **state)
{
    sim_net *net = *state;
    char payload[BIG] = "big";
    MPI_Request s = isend(net, 0, 1, 1, MPI_COMM_WORLD, payload, BIG);
    MPI_Status st;
    int cancelled = -1;

    assert_int_equal(MPI_Cancel(&s), MPI_SUCCESS);
    assert_false(done(net, 0, &s, NULL));
    deliver_all(net);
    expect_recv(net, 1, 0, 1, MPI_COMM_WORLD, 0, "big");
    assert_true(done(net, 0, &s, &st));
    sim_net_set_rank(net, 0);
    assert_int_equal(MPI_Test_cancelled(&st, &cancelled), MPI_SUCCESS);
    assert_int_equal(cancelled, 0);
}

static void test_free_pending_send_still_delivers(void **state)
{
    sim_net *net = *state;
    char payload[BIG] = "detached";
    MPI_Request s = isend(net, 0, 1, 1, MPI_COMM_WORLD, payload, BIG);

    assert_int_equal(sim_net_live_requests(net, 0), 1);
    assert_int_equal(MPI_Request_free(&s), MPI_SUCCESS);
    assert_int_equal(s, MPI_REQUEST_NULL);
    assert_int_equal(sim_net_live_requests(net, 0), 0);
    deliver_all(net);
    expect_recv(net, 1, 0, 1, MPI_COMM_WORLD, 0, "detached");
    assert_int_equal(sim_net_misuse(net), 0);
}

static void test_free_pending_recv_drops_message(void **state)
{
    sim_net *net = *state;
    char buf[8] = {0};
    MPI_Request r = irecv(net, 1, 0, 1, MPI_COMM_WORLD, buf, sizeof buf);

    assert_int_equal(MPI_Request_free(&r), MPI_SUCCESS);
    assert_int_equal(r, MPI_REQUEST_NULL);
    assert_int_equal(sim_net_live_requests(net, 1), 0);
    isend(net, 0, 1, 1, MPI_COMM_WORLD, "gone", 5);
    deliver_all(net);
    /* Matched by the freed receive, so taken, but not written. */
    assert_int_equal(sim_net_unreceived(net, 1), 0);
    assert_string_equal(buf, "");
}

/* ---- statuses ------------------------------------------------------------ */

static void test_status_and_get_count(void **state)
{
    sim_net *net = *state;
    char buf[10];
    MPI_Request r;
    MPI_Status st;
    int count = -1, cancelled = -1;

    isend(net, 2, 1, 42, MPI_COMM_WORLD, "hello", 5);
    deliver_all(net);
    r = irecv(net, 1, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, buf,
              sizeof buf);
    memset(&st, 0x5a, sizeof st);
    assert_true(done(net, 1, &r, &st));
    assert_int_equal(st.MPI_SOURCE, 2);
    assert_int_equal(st.MPI_TAG, 42);
    assert_int_equal(st.MPI_ERROR, MPI_SUCCESS);
    assert_int_equal(MPI_Get_count(&st, MPI_BYTE, &count), MPI_SUCCESS);
    assert_int_equal(count, 5);
    assert_int_equal(MPI_Test_cancelled(&st, &cancelled), MPI_SUCCESS);
    assert_int_equal(cancelled, 0);

    /* Only MPI_BYTE is modelled. */
    count = -1;
    assert_int_equal(MPI_Get_count(&st, MPI_INT, &count), MPI_ERR_TYPE);
    assert_int_equal(count, -1);
    assert_int_equal(sim_net_misuse(net), 1);
}

static void test_test_request_null(void **state)
{
    sim_net *net = *state;
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status st;
    int flag = 0, count = -1;

    sim_net_set_rank(net, 0);
    memset(&st, 0x5a, sizeof st);
    assert_int_equal(MPI_Test(&r, &flag, &st), MPI_SUCCESS);
    assert_int_equal(flag, 1);
    assert_int_equal(st.MPI_SOURCE, MPI_ANY_SOURCE);
    assert_int_equal(st.MPI_TAG, MPI_ANY_TAG);
    assert_int_equal(MPI_Get_count(&st, MPI_BYTE, &count), MPI_SUCCESS);
    assert_int_equal(count, 0);
    assert_int_equal(sim_net_misuse(net), 0);
}

/* ---- argument errors ------------------------------------------------------- */

static void test_tag_ub(void **state)
{
    sim_net *net = *state;
    MPI_Request r = 12345;
    int *ub = NULL, flag = 0;
    char buf[4] = "t";

    sim_net_set_rank(net, 0);
    assert_int_equal(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag),
                     MPI_SUCCESS);
    assert_int_equal(flag, 1);
    assert_non_null(ub);
    assert_int_equal(*ub, TAG_UB);

    assert_int_equal(MPI_Isend(buf, 1, MPI_BYTE, 1, TAG_UB + 1,
                               MPI_COMM_WORLD, &r), MPI_ERR_TAG);
    assert_int_equal(MPI_Irecv(buf, 1, MPI_BYTE, 1, TAG_UB + 1,
                               MPI_COMM_WORLD, &r), MPI_ERR_TAG);
    assert_int_equal(MPI_Irecv(buf, 1, MPI_BYTE, 1, -5, MPI_COMM_WORLD, &r),
                     MPI_ERR_TAG);
    assert_int_equal(MPI_Isend(buf, 1, MPI_BYTE, 1, MPI_ANY_TAG,
                               MPI_COMM_WORLD, &r), MPI_ERR_TAG);
    /* No side effect: nothing sent, nothing posted, handle untouched. */
    assert_int_equal(r, 12345);
    assert_int_equal(sim_net_in_flight(net), 0);
    assert_int_equal(sim_net_live_requests(net, 0), 0);
    assert_int_equal(sim_net_misuse(net), 4);

    /* The bound itself is a valid tag. */
    isend(net, 0, 1, TAG_UB, MPI_COMM_WORLD, buf, 2);
    deliver_all(net);
    expect_recv(net, 1, 0, TAG_UB, MPI_COMM_WORLD, 0, "t");
}

static void test_bad_arguments(void **state)
{
    sim_net *net = *state;
    MPI_Request r = 12345;
    char buf[4];

    sim_net_set_rank(net, 0);
    assert_int_equal(MPI_Isend(buf, 1, MPI_BYTE, NRANKS, 0, MPI_COMM_WORLD, &r),
                     MPI_ERR_RANK);
    assert_int_equal(MPI_Irecv(buf, 1, MPI_BYTE, -7, 0, MPI_COMM_WORLD, &r),
                     MPI_ERR_RANK);
    assert_int_equal(MPI_Isend(buf, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, &r),
                     MPI_ERR_TYPE);
    assert_int_equal(MPI_Isend(buf, 1, MPI_BYTE, 1, 0, MPI_COMM_SELF, &r),
                     MPI_ERR_COMM);
    assert_int_equal(MPI_Irecv(NULL, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &r),
                     MPI_ERR_BUFFER);
    assert_int_equal(MPI_Irecv(buf, -1, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &r),
                     MPI_ERR_COUNT);
    assert_int_equal(r, 12345);
    assert_int_equal(sim_net_misuse(net), 6);
    assert_int_equal(sim_net_live_requests(net, 0), 0);
    assert_int_equal(sim_net_in_flight(net), 0);
}

/* ---- communicators ------------------------------------------------------------ */

static void test_comm_dup_and_free(void **state)
{
    sim_net *net = *state;
    MPI_Comm a0 = dup_world(net, 0), b0 = dup_world(net, 0);
    MPI_Comm a1 = dup_world(net, 1), b1 = dup_world(net, 1);
    MPI_Request r = 12345;
    char buf[4] = "d";

    assert_int_equal(a0, a1);
    assert_int_equal(b0, b1);
    assert_int_not_equal(a0, b0);
    assert_int_not_equal(a0, MPI_COMM_WORLD);
    assert_int_not_equal(b0, MPI_COMM_WORLD);
    assert_int_not_equal(a0, MPI_COMM_NULL);
    assert_int_equal(sim_net_live_comms(net, 0), 2);
    assert_int_equal(sim_net_live_comms(net, 2), 0);

    sim_net_set_rank(net, 0);
    assert_int_equal(MPI_Comm_free(&a0), MPI_SUCCESS);
    assert_int_equal(a0, MPI_COMM_NULL);
    assert_int_equal(sim_net_live_comms(net, 0), 1);
    assert_int_equal(sim_net_live_comms(net, 1), 2);

    /* Freed for rank 0 only. */
    assert_int_equal(MPI_Isend(buf, 1, MPI_BYTE, 1, 0, a1, &r), MPI_ERR_COMM);
    assert_int_equal(r, 12345);
    isend(net, 1, 0, 0, a1, buf, 2);
    /* Rank 2 never dup'ed: the handle means nothing to it. */
    sim_net_set_rank(net, 2);
    assert_int_equal(MPI_Irecv(buf, 1, MPI_BYTE, 0, 0, b0, &r), MPI_ERR_COMM);

    sim_net_set_rank(net, 0);
    {
        MPI_Comm w = MPI_COMM_WORLD, stale = a1;
        assert_int_equal(MPI_Comm_free(&w), MPI_ERR_COMM);
        assert_int_equal(MPI_Comm_free(&stale), MPI_ERR_COMM);
        assert_int_equal(stale, a1);
    }
    assert_int_equal(sim_net_misuse(net), 4);
}

static void test_comm_queries(void **state)
{
    sim_net *net = *state;
    int rank = -1, size = -1;

    sim_net_set_rank(net, 2);
    assert_int_equal(MPI_Comm_rank(MPI_COMM_WORLD, &rank), MPI_SUCCESS);
    assert_int_equal(MPI_Comm_size(MPI_COMM_WORLD, &size), MPI_SUCCESS);
    assert_int_equal(rank, 2);
    assert_int_equal(size, NRANKS);
    assert_int_equal(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
                     MPI_SUCCESS);
    assert_int_equal(MPI_Comm_rank(MPI_COMM_NULL, &rank), MPI_ERR_COMM);
    assert_int_equal(rank, 2);
    assert_int_equal(sim_net_misuse(net), 1);
}

/* ---- request bookkeeping ---------------------------------------------------- */

static void test_live_requests(void **state)
{
    sim_net *net = *state;
    char b1[4], b2[4];
    MPI_Request r1 = irecv(net, 1, 0, 1, MPI_COMM_WORLD, b1, sizeof b1);
    MPI_Request r2 = irecv(net, 1, 0, 2, MPI_COMM_WORLD, b2, sizeof b2);
    MPI_Request stale = r1;
    int flag = -1;

    assert_int_equal(sim_net_live_requests(net, 1), 2);
    assert_int_equal(sim_net_live_requests(net, 0), 0);
    isend(net, 0, 1, 1, MPI_COMM_WORLD, "x", 2);
    /* The eager send request is live until tested. */
    assert_int_equal(sim_net_live_requests(net, 0), 1);
    deliver_all(net);
    assert_int_equal(sim_net_live_requests(net, 1), 2); /* done, not tested */
    assert_true(done(net, 1, &r1, NULL));
    assert_int_equal(sim_net_live_requests(net, 1), 1);
    assert_int_equal(MPI_Request_free(&r2), MPI_SUCCESS);
    assert_int_equal(sim_net_live_requests(net, 1), 0);

    /* A request used after it was freed is misuse. */
    assert_int_equal(MPI_Test(&stale, &flag, MPI_STATUS_IGNORE),
                     MPI_ERR_REQUEST);
    assert_int_equal(flag, -1);
    assert_int_equal(MPI_Request_free(&stale), MPI_ERR_REQUEST);
    assert_int_equal(MPI_Cancel(&stale), MPI_ERR_REQUEST);
    assert_int_equal(sim_net_misuse(net), 3);
}

static void test_request_of_other_rank(void **state)
{
    sim_net *net = *state;
    char b[4];
    MPI_Request r = irecv(net, 1, 0, 1, MPI_COMM_WORLD, b, sizeof b);
    int flag = -1;

    sim_net_set_rank(net, 2);
    assert_int_equal(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), MPI_ERR_REQUEST);
    assert_int_equal(sim_net_misuse(net), 1);
    sim_net_set_rank(net, 1);
    assert_int_equal(MPI_Request_free(&r), MPI_SUCCESS);
}

/* ---- faults -------------------------------------------------------------------- */

static void test_fail_call(void **state)
{
    sim_net *net = *state;
    MPI_Request r = 12345;
    char buf[2] = "f";

    sim_net_fail_call(net, 0, SIM_FN_Isend, 2);
    sim_net_fail_call(net, 1, sim_fn_from_name("MPI_Test"), 1);
    isend(net, 0, 1, 1, MPI_COMM_WORLD, buf, 2);
    assert_int_equal(sim_net_faults_fired(net), 0);

    sim_net_set_rank(net, 0);
    assert_int_equal(MPI_Isend(buf, 2, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r),
                     MPI_ERR_OTHER);
    assert_int_equal(r, 12345);
    assert_int_equal(sim_net_in_flight(net), 1);
    assert_int_equal(sim_net_live_requests(net, 0), 1);
    assert_int_equal(sim_net_faults_fired(net), 1);
    assert_int_equal(sim_net_calls(net, 0, SIM_FN_Isend), 2);
    /* A fault is not misuse. */
    assert_int_equal(sim_net_misuse(net), 0);

    isend(net, 0, 1, 1, MPI_COMM_WORLD, buf, 2);
    assert_int_equal(sim_net_calls(net, 0, SIM_FN_Isend), 3);
    assert_int_equal(sim_net_faults_fired(net), 1);
    assert_int_equal(sim_net_in_flight(net), 2);

    /* Rank 1's first MPI_Test fails, untouched; its second works. */
    deliver_all(net);
    {
        char got[2] = {0};
        MPI_Request rr = irecv(net, 1, 0, 1, MPI_COMM_WORLD, got, 2);
        MPI_Request keep = rr;
        int flag = -1;
        assert_int_equal(MPI_Test(&rr, &flag, MPI_STATUS_IGNORE),
                         MPI_ERR_OTHER);
        assert_int_equal(flag, -1);
        assert_int_equal(rr, keep);
        assert_int_equal(sim_net_faults_fired(net), 2);
        assert_true(done(net, 1, &rr, NULL));
        assert_string_equal(got, "f");
    }
}

static void test_delay(void **state)
{
    sim_net *net = *state;
    sim_chan c;

    sim_net_delay(net, 0, 1, 1000);
    isend(net, 0, 1, 1, MPI_COMM_WORLD, "late", 5);
    isend(net, 0, 1, 1, MPI_COMM_WORLD, "next", 5);
    isend(net, 0, 2, 1, MPI_COMM_WORLD, "other", 6);
    assert_int_equal(sim_net_faults_fired(net), 1);
    assert_int_equal(sim_net_in_flight(net), 3);
    assert_int_equal(sim_net_next_release(net), 1000);
    /* The delayed head blocks its channel; the other channel goes. */
    assert_int_equal(sim_net_ready(net, &c, 1), 1);
    assert_int_equal(c.dst, 2);
    sim_net_deliver(net, &c);

    sim_net_set_time(net, 999);
    assert_int_equal(sim_net_ready(net, &c, 1), 0);
    sim_net_set_time(net, 1000);
    assert_int_equal(sim_net_ready(net, &c, 1), 1);
    assert_int_equal(sim_net_next_release(net), UINT64_MAX);
    /* Time never goes back. */
    sim_net_set_time(net, 5);
    assert_int_equal(sim_net_ready(net, &c, 1), 1);
    deliver_all(net);
    expect_recv(net, 1, 0, 1, MPI_COMM_WORLD, 0, "late");
    expect_recv(net, 1, 0, 1, MPI_COMM_WORLD, 0, "next");
}

static void test_stop_rank(void **state)
{
    sim_net *net = *state;
    char big[BIG] = "from the dead";
    int flag = -1;

    static char to_dead[BIG];
    MPI_Request lost_big;
    isend(net, 0, 1, 1, MPI_COMM_WORLD, "lost", 5);
    lost_big = isend(net, 0, 1, 2, MPI_COMM_WORLD, to_dead, BIG);
    isend(net, 1, 2, 1, MPI_COMM_WORLD, big, BIG);
    assert_false(sim_net_rank_stopped(net, 1));
    sim_net_stop_rank(net, 1);
    assert_true(sim_net_rank_stopped(net, 1));
    /* Its memory may go: what it sent was copied at the stop. */
    memset(big, 'X', sizeof big);

    deliver_all(net);
    assert_int_equal(sim_net_unreceived(net, 1), 0);
    expect_recv(net, 2, 1, 1, MPI_COMM_WORLD, 1, "from the dead");
    /* A rendezvous send into the void completes: the sender's clean-up
     * must not wait forever on a dead peer. */
    sim_net_set_rank(net, 0);
    assert_int_equal(MPI_Test(&lost_big, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    assert_int_equal(flag, 1);
    flag = -1;

    sim_net_set_rank(net, 1);
    assert_int_equal(MPI_Initialized(&flag), MPI_ERR_OTHER);
    assert_int_equal(flag, -1);
    assert_int_equal(sim_net_calls(net, 1, SIM_FN_Initialized), 1);
    assert_int_equal(sim_net_misuse(net), 0);
}

/* ---- determinism ------------------------------------------------------------------ */

/* The buffers of a run outlive it: its rendezvous send is still pending. */
typedef struct run_bufs {
    char out[BIG], in[BIG];
} run_bufs;

static void script(sim_net *net, run_bufs *b)
{
    MPI_Comm dup = dup_world(net, 0);
    MPI_Request s, r;

    strcpy(b->out, "script");
    dup_world(net, 1);
    s = isend(net, 0, 1, 3, dup, b->out, BIG);
    isend(net, 2, 1, 4, MPI_COMM_WORLD, "y", 2);
    r = irecv(net, 1, MPI_ANY_SOURCE, MPI_ANY_TAG, dup, b->in, BIG);
    deliver_chan(net, 2, 1, MPI_COMM_WORLD);
    assert_false(done(net, 0, &s, NULL));
    assert_false(done(net, 1, &r, NULL));
}

static void test_hash(void **state)
{
    sim_net *a = *state, *b;
    sim_net_config cfg = {NRANKS, TAG_UB, EAGER, 0, {0}, 0};
    run_bufs bufs_a = {{0}, {0}}, bufs_b = {{0}, {0}};
    uint64_t h;

    b = sim_net_create(&cfg);
    assert_non_null(b);
    sim_net_install(a);
    script(a, &bufs_a);
    sim_net_install(b);
    script(b, &bufs_b);
    h = sim_net_hash(a);
    assert_int_equal(h, sim_net_hash(b));
    assert_int_equal(h, sim_net_hash(a)); /* hashing changes nothing */

    /* One more step on b only. */
    deliver_all(b);
    assert_int_not_equal(sim_net_hash(a), sim_net_hash(b));
    sim_net_install(a);
    deliver_all(a);
    assert_int_equal(sim_net_hash(a), sim_net_hash(b));
    assert_string_equal(bufs_a.in, "script");

    /* Same calls, different payload byte: different hash. */
    isend(a, 0, 2, 1, MPI_COMM_WORLD, "p", 2);
    sim_net_install(b);
    isend(b, 0, 2, 1, MPI_COMM_WORLD, "q", 2);
    assert_int_not_equal(sim_net_hash(a), sim_net_hash(b));
    sim_net_destroy(b);
    assert_null(sim_net_installed());
    sim_net_install(a);
}

/* ---- set-up and tear-down ---------------------------------------------------------- */

static void test_init_finalize(void **state)
{
    sim_net *net = *state;
    int flag = -1, provided = -1;
    MPI_Request r = 12345;

    sim_net_set_rank(net, 0);
    assert_int_equal(MPI_Initialized(&flag), MPI_SUCCESS);
    assert_int_equal(flag, 0);
    assert_int_equal(MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided),
                     MPI_SUCCESS);
    assert_int_equal(provided, MPI_THREAD_MULTIPLE);
    assert_int_equal(MPI_Initialized(&flag), MPI_SUCCESS);
    assert_int_equal(flag, 1);
    assert_int_equal(MPI_Finalized(&flag), MPI_SUCCESS);
    assert_int_equal(flag, 0);

    /* Per rank. */
    sim_net_set_rank(net, 1);
    assert_int_equal(MPI_Initialized(&flag), MPI_SUCCESS);
    assert_int_equal(flag, 0);
    assert_int_equal(MPI_Finalize(), MPI_ERR_OTHER); /* not initialized */
    assert_false(sim_net_finalized(net, 1));

    sim_net_set_rank(net, 0);
    assert_int_equal(MPI_Finalize(), MPI_SUCCESS);
    assert_true(sim_net_finalized(net, 0));
    assert_int_equal(MPI_Finalized(&flag), MPI_SUCCESS);
    assert_int_equal(flag, 1);
    /* After MPI_Finalize only the two queries are allowed. */
    assert_int_equal(MPI_Isend("x", 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &r),
                     MPI_ERR_OTHER);
    assert_int_equal(r, 12345);
    assert_int_equal(MPI_Finalize(), MPI_ERR_OTHER);
    assert_int_equal(sim_net_misuse(net), 3);
}

static void test_fn_names(void **state)
{
    (void)state;
    assert_string_equal(sim_fn_name(SIM_FN_Isend), "Isend");
    assert_string_equal(sim_fn_name(SIM_FN_Get_count), "Get_count");
    assert_null(sim_fn_name(SIM_FN_COUNT));
    assert_int_equal(sim_fn_from_name("Improbe"), SIM_FN_Improbe);
    assert_int_equal(sim_fn_from_name("MPI_Test"), SIM_FN_Test);
    assert_int_equal(sim_fn_from_name("MPI_Send"), SIM_FN_COUNT);
    for (int i = 0; i < SIM_FN_COUNT; i++)
        assert_int_equal(sim_fn_from_name(sim_fn_name((sim_fn)i)), i);
}

/* With eager_at_delivery, an eager send stays in flight until delivered. */
static void test_eager_at_delivery(void **state)
{
    (void)state;
    sim_net_config cfg = {NRANKS, TAG_UB, EAGER, 1, {0}, 0};
    sim_net *net = sim_net_create(&cfg);
    assert_non_null(net);
    sim_net_install(net);
    MPI_Request s = isend(net, 0, 1, 5, MPI_COMM_WORLD, "hi", 3);
    int flag = -1;
    sim_net_set_rank(net, 0);
    assert_int_equal(MPI_Test(&s, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    assert_int_equal(flag, 0);
    sim_chan c;
    assert_int_equal(sim_net_ready(net, &c, 1), 1);
    assert_false(sim_net_head_eager(net, &c));   /* delivery completes a send */
    uint64_t epoch = sim_net_epoch(net, 0);
    sim_net_deliver(net, &c);
    assert_true(sim_net_epoch(net, 0) > epoch);  /* the sender hears of it */
    sim_net_set_rank(net, 0);
    assert_int_equal(MPI_Test(&s, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    assert_int_equal(flag, 1);
    expect_recv(net, 1, 0, 5, MPI_COMM_WORLD, 0, "hi");
    sim_net_install(NULL);
    sim_net_destroy(net);
}

/* With late_send_tests, a completed send's first MPI_Test still says it
 * runs (news for its rank), the next says it ended; a receive is told at
 * once; the peeks say what completed and what arrived. */
static void test_late_send_tests(void **state)
{
    (void)state;
    sim_net_config cfg = {NRANKS, TAG_UB, EAGER, 0, {0}, 1};
    sim_net *net = sim_net_create(&cfg);
    assert_non_null(net);
    sim_net_install(net);
    MPI_Request s = isend(net, 0, 1, 5, MPI_COMM_WORLD, "hi", 3);
    assert_true(sim_net_request_done(net, 0, s));     /* eager: ended in Isend */
    assert_false(sim_net_arrived(net, 1, 5, MPI_COMM_WORLD));
    int flag = -1;
    uint64_t epoch = sim_net_epoch(net, 0);
    sim_net_set_rank(net, 0);
    assert_int_equal(MPI_Test(&s, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    assert_int_equal(flag, 0);
    assert_true(sim_net_epoch(net, 0) > epoch);
    assert_int_equal(MPI_Test(&s, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    assert_int_equal(flag, 1);
    assert_true(s == MPI_REQUEST_NULL && sim_net_request_done(net, 0, s));
    sim_chan c;
    assert_int_equal(sim_net_ready(net, &c, 1), 1);
    sim_net_deliver(net, &c);
    assert_true(sim_net_arrived(net, 1, 5, MPI_COMM_WORLD));
    assert_false(sim_net_arrived(net, 1, 6, MPI_COMM_WORLD));
    char buf[3];
    MPI_Request r = irecv(net, 1, 0, 5, MPI_COMM_WORLD, buf, 3);
    assert_true(sim_net_request_done(net, 1, r));
    assert_false(sim_net_arrived(net, 1, 5, MPI_COMM_WORLD));
    assert_int_equal(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), MPI_SUCCESS);
    assert_int_equal(flag, 1);
    assert_memory_equal(buf, "hi", 3);
    sim_net_install(NULL);
    sim_net_destroy(net);
}

/* The link model (sim_link): a message is deliverable once the link has
 * carried it (overhead + bytes / bandwidth, after the messages before it on
 * the same link) and the latency has passed; other links are independent;
 * a message to oneself costs nothing. */
static void test_link_model(void **state)
{
    (void)state;
    sim_net_config cfg = {NRANKS, TAG_UB, 1024, 0,
                          {.latency_ns = 1000, .overhead_ns = 100,
                           .bytes_per_s = 1000000000u}, 0};   /* 1 byte per ns */
    sim_net *net = sim_net_create(&cfg);
    assert_non_null(net);
    sim_net_install(net);
    static char buf[500];
    sim_chan c[4];
    sim_net_set_time(net, 0);
    isend(net, 0, 1, 1, MPI_COMM_WORLD, buf, 500);      /* 0 + 100 + 500 + 1000 */
    isend(net, 0, 1, 2, MPI_COMM_WORLD, buf, 200);      /* 600 + 100 + 200 + 1000 */
    isend(net, 0, 2, 3, MPI_COMM_WORLD, buf, 300);      /* another link: 1400 */
    assert_int_equal(sim_net_ready(net, c, 4), 0);
    assert_int_equal(sim_net_next_release(net), 1400);
    sim_net_set_time(net, 1399);
    assert_int_equal(sim_net_ready(net, c, 4), 0);
    sim_net_set_time(net, 1400);
    assert_int_equal(sim_net_ready(net, c, 4), 1);
    assert_int_equal(c[0].dst, 2);
    assert_int_equal(sim_net_next_release(net), 1600);
    sim_net_set_time(net, 1600);
    assert_int_equal(sim_net_ready(net, c, 4), 2);
    assert_int_equal(sim_net_next_release(net), 1900);  /* the second, behind it */
    sim_net_set_time(net, 1900);
    assert_int_equal(sim_net_ready(net, c, 4), 2);      /* 0->1 and 0->2 heads */
    deliver_all(net);
    /* A message to oneself is deliverable at once, whatever the link. */
    isend(net, 1, 1, 4, MPI_COMM_WORLD, buf, 100);
    assert_int_equal(sim_net_ready(net, c, 4), 1);
    deliver_all(net);
    static const int tags[] = {1, 2, 3, 4}, lens[] = {500, 200, 300, 100};
    static const int from[] = {0, 0, 0, 1}, to[] = {1, 1, 2, 1};
    for (int i = 0; i < 4; i++) {
        char in[500];
        MPI_Status st;
        int n = -1;
        MPI_Request rq = irecv(net, to[i], from[i], tags[i], MPI_COMM_WORLD, in, 500);
        assert_true(done(net, to[i], &rq, &st));
        assert_int_equal(MPI_Get_count(&st, MPI_BYTE, &n), MPI_SUCCESS);
        assert_int_equal(n, lens[i]);
    }
    sim_net_install(NULL);
    sim_net_destroy(net);
}

static void test_bad_config(void **state)
{
    sim_net_config zero = {0, TAG_UB, EAGER, 0, {0}, 0}, many = {65, TAG_UB, EAGER, 0, {0}, 0};
    sim_net_config noub = {2, 0, EAGER, 0, {0}, 0};

    (void)state;
    assert_null(sim_net_create(&zero));
    assert_null(sim_net_create(&many));
    assert_null(sim_net_create(&noub));
    assert_null(sim_net_create(NULL));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_matching),
        cmocka_unit_test(test_link_model),
        T(test_posted_order),
        T(test_non_overtaking),
        T(test_channels_any_order),
        T(test_improbe_any_source),
        T(test_oracle_of_matches),
        T(test_imrecv_bad_message),
        T(test_eager_completes_at_once),
        T(test_rendezvous_waits_for_receive),
        T(test_self_send_is_rendezvous),
        T(test_truncation),
        T(test_cancel),
        T(test_cancel_send_has_no_effect),
        T(test_free_pending_send_still_delivers),
        T(test_free_pending_recv_drops_message),
        T(test_status_and_get_count),
        T(test_test_request_null),
        T(test_tag_ub),
        T(test_bad_arguments),
        T(test_comm_dup_and_free),
        T(test_comm_queries),
        T(test_live_requests),
        T(test_request_of_other_rank),
        T(test_fail_call),
        T(test_delay),
        T(test_stop_rank),
        cmocka_unit_test(test_eager_at_delivery),
        cmocka_unit_test(test_late_send_tests),
        T(test_hash),
        T(test_init_finalize),
        cmocka_unit_test(test_fn_names),
        cmocka_unit_test(test_bad_config),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
