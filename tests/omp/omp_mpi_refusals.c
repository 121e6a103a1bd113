/*
 * omp_mpi_refusals.c - every call the program's MPI layer (src/pmpi)
 * guards, under MPI_ERRORS_RETURN on MPI_COMM_WORLD: on MPI_COMM_WORLD (a
 * collective, a communicator, window or file over it) or with a device
 * rank as the peer, it returns at once with MPI_ERR_COMM or MPI_ERR_RANK;
 * the same call on MPI_COMM_SELF, or with MPI_PROC_NULL or rank 0 as the
 * peer, reaches MPI and succeeds. Then a handler of the program's own is
 * called with the error, once. Target regions before, between and after
 * show the devices unharmed. Each refusal writes its line on stderr (the
 * driver allows those lines and no other).
 */
#define OMP_TEST_NAME "omp_mpi_refusals"
#include <mpi.h>

#include "omp_check.h"

static int refusals;

static void expect_refused(int want, int rc, const char *call)
{
    int cls = -1;
    CHECK(rc != MPI_SUCCESS, "%s succeeded: it was to be refused", call);
    CHECK(MPI_Error_class(rc, &cls) == MPI_SUCCESS && cls == want,
          "%s: error class %d, expected %d", call, cls, want);
    refusals++;
}

#define COMM_REFUSED(call) expect_refused(MPI_ERR_COMM, (call), #call)
#define RANK_REFUSED(call) expect_refused(MPI_ERR_RANK, (call), #call)
#define PASSES(call) CHECK((call) == MPI_SUCCESS, "%s failed", #call)
/* A non-blocking or persistent call that passes, then its request. */
#define PASSES_WAIT(call) do { PASSES(call); PASSES(MPI_Wait(&req, MPI_STATUS_IGNORE)); } while (0)
#define PASSES_FREE(call) do { PASSES(call); PASSES(MPI_Request_free(&req)); } while (0)

static int device_value(int d, int v)
{
    #pragma omp target device(d) map(tofrom: v)
    v = v * 2 + 1;
    return v;
}

#define W MPI_COMM_WORLD
#define S MPI_COMM_SELF
#define T MPI_INT
#define NUL MPI_PROC_NULL

static void point_to_point(void)
{
    int b = 1, flag = 0;
    MPI_Request req;
    MPI_Message msg;
    RANK_REFUSED(MPI_Send(&b, 1, T, 1, 0, W));
    RANK_REFUSED(MPI_Bsend(&b, 1, T, 1, 0, W));
    RANK_REFUSED(MPI_Ssend(&b, 1, T, 1, 0, W));
    RANK_REFUSED(MPI_Rsend(&b, 1, T, 1, 0, W));
    RANK_REFUSED(MPI_Isend(&b, 1, T, 1, 0, W, &req));
    RANK_REFUSED(MPI_Ibsend(&b, 1, T, 1, 0, W, &req));
    RANK_REFUSED(MPI_Issend(&b, 1, T, 1, 0, W, &req));
    RANK_REFUSED(MPI_Irsend(&b, 1, T, 1, 0, W, &req));
    RANK_REFUSED(MPI_Send_init(&b, 1, T, 1, 0, W, &req));
    RANK_REFUSED(MPI_Bsend_init(&b, 1, T, 1, 0, W, &req));
    RANK_REFUSED(MPI_Ssend_init(&b, 1, T, 1, 0, W, &req));
    RANK_REFUSED(MPI_Rsend_init(&b, 1, T, 1, 0, W, &req));
    RANK_REFUSED(MPI_Recv(&b, 1, T, 1, 0, W, MPI_STATUS_IGNORE));
    RANK_REFUSED(MPI_Irecv(&b, 1, T, 1, 0, W, &req));
    RANK_REFUSED(MPI_Recv_init(&b, 1, T, 1, 0, W, &req));
    RANK_REFUSED(MPI_Sendrecv(&b, 1, T, 0, 0, &b, 1, T, 1, 0, W, MPI_STATUS_IGNORE));
    RANK_REFUSED(MPI_Sendrecv_replace(&b, 1, T, 1, 0, 0, 0, W, MPI_STATUS_IGNORE));
    RANK_REFUSED(MPI_Probe(1, 0, W, MPI_STATUS_IGNORE));
    RANK_REFUSED(MPI_Iprobe(1, 0, W, &flag, MPI_STATUS_IGNORE));
    RANK_REFUSED(MPI_Mprobe(1, 0, W, &msg, MPI_STATUS_IGNORE));
    RANK_REFUSED(MPI_Improbe(1, 0, W, &flag, &msg, MPI_STATUS_IGNORE));

    /* MPI_PROC_NULL as the peer: the call completes at once in MPI. */
    PASSES(MPI_Send(&b, 1, T, NUL, 0, W));
    PASSES(MPI_Bsend(&b, 1, T, NUL, 0, W));
    PASSES(MPI_Ssend(&b, 1, T, NUL, 0, W));
    PASSES(MPI_Rsend(&b, 1, T, NUL, 0, W));
    PASSES_WAIT(MPI_Isend(&b, 1, T, NUL, 0, W, &req));
    PASSES_WAIT(MPI_Ibsend(&b, 1, T, NUL, 0, W, &req));
    PASSES_WAIT(MPI_Issend(&b, 1, T, NUL, 0, W, &req));
    PASSES_WAIT(MPI_Irsend(&b, 1, T, NUL, 0, W, &req));
    PASSES_FREE(MPI_Send_init(&b, 1, T, NUL, 0, W, &req));
    PASSES_FREE(MPI_Bsend_init(&b, 1, T, NUL, 0, W, &req));
    PASSES_FREE(MPI_Ssend_init(&b, 1, T, NUL, 0, W, &req));
    PASSES_FREE(MPI_Rsend_init(&b, 1, T, NUL, 0, W, &req));
    PASSES(MPI_Recv(&b, 1, T, NUL, 0, W, MPI_STATUS_IGNORE));
    PASSES_WAIT(MPI_Irecv(&b, 1, T, NUL, 0, W, &req));
    PASSES_FREE(MPI_Recv_init(&b, 1, T, NUL, 0, W, &req));
    PASSES(MPI_Sendrecv(&b, 1, T, NUL, 0, &b, 1, T, NUL, 0, W, MPI_STATUS_IGNORE));
    PASSES(MPI_Sendrecv_replace(&b, 1, T, NUL, 0, NUL, 0, W, MPI_STATUS_IGNORE));
    PASSES(MPI_Probe(NUL, 0, W, MPI_STATUS_IGNORE));
    PASSES(MPI_Iprobe(NUL, 0, W, &flag, MPI_STATUS_IGNORE));
    PASSES(MPI_Mprobe(NUL, 0, W, &msg, MPI_STATUS_IGNORE));
    PASSES(MPI_Improbe(NUL, 0, W, &flag, &msg, MPI_STATUS_IGNORE));
}

/* Each collective on MPI_COMM_WORLD (refused), then on MPI_COMM_SELF. */
static void collectives(MPI_Comm c, int refused)
{
    int s[1] = {1}, r[1] = {0}, one[1] = {1}, zero[1] = {0};
    MPI_Datatype ts[1] = {T};
    MPI_Request req;
    int rc[34], n = 0;
#define CALL(call) rc[n++] = (call)
#define CALL_REQ(call) do { rc[n] = (call); if (rc[n] == MPI_SUCCESS) \
        PASSES(MPI_Wait(&req, MPI_STATUS_IGNORE)); n++; } while (0)
    CALL(MPI_Barrier(c));
    CALL_REQ(MPI_Ibarrier(c, &req));
    CALL(MPI_Bcast(s, 1, T, 0, c));
    CALL_REQ(MPI_Ibcast(s, 1, T, 0, c, &req));
    CALL(MPI_Gather(s, 1, T, r, 1, T, 0, c));
    CALL_REQ(MPI_Igather(s, 1, T, r, 1, T, 0, c, &req));
    CALL(MPI_Gatherv(s, 1, T, r, one, zero, T, 0, c));
    CALL_REQ(MPI_Igatherv(s, 1, T, r, one, zero, T, 0, c, &req));
    CALL(MPI_Scatter(s, 1, T, r, 1, T, 0, c));
    CALL_REQ(MPI_Iscatter(s, 1, T, r, 1, T, 0, c, &req));
    CALL(MPI_Scatterv(s, one, zero, T, r, 1, T, 0, c));
    CALL_REQ(MPI_Iscatterv(s, one, zero, T, r, 1, T, 0, c, &req));
    CALL(MPI_Allgather(s, 1, T, r, 1, T, c));
    CALL_REQ(MPI_Iallgather(s, 1, T, r, 1, T, c, &req));
    CALL(MPI_Allgatherv(s, 1, T, r, one, zero, T, c));
    CALL_REQ(MPI_Iallgatherv(s, 1, T, r, one, zero, T, c, &req));
    CALL(MPI_Alltoall(s, 1, T, r, 1, T, c));
    CALL_REQ(MPI_Ialltoall(s, 1, T, r, 1, T, c, &req));
    CALL(MPI_Alltoallv(s, one, zero, T, r, one, zero, T, c));
    CALL_REQ(MPI_Ialltoallv(s, one, zero, T, r, one, zero, T, c, &req));
    CALL(MPI_Alltoallw(s, one, zero, ts, r, one, zero, ts, c));
    CALL_REQ(MPI_Ialltoallw(s, one, zero, ts, r, one, zero, ts, c, &req));
    CALL(MPI_Reduce(s, r, 1, T, MPI_SUM, 0, c));
    CALL_REQ(MPI_Ireduce(s, r, 1, T, MPI_SUM, 0, c, &req));
    CALL(MPI_Allreduce(s, r, 1, T, MPI_SUM, c));
    CALL_REQ(MPI_Iallreduce(s, r, 1, T, MPI_SUM, c, &req));
    CALL(MPI_Reduce_scatter(s, r, one, T, MPI_SUM, c));
    CALL_REQ(MPI_Ireduce_scatter(s, r, one, T, MPI_SUM, c, &req));
    CALL(MPI_Reduce_scatter_block(s, r, 1, T, MPI_SUM, c));
    CALL_REQ(MPI_Ireduce_scatter_block(s, r, 1, T, MPI_SUM, c, &req));
    CALL(MPI_Scan(s, r, 1, T, MPI_SUM, c));
    CALL_REQ(MPI_Iscan(s, r, 1, T, MPI_SUM, c, &req));
    CALL(MPI_Exscan(s, r, 1, T, MPI_SUM, c));
    CALL_REQ(MPI_Iexscan(s, r, 1, T, MPI_SUM, c, &req));
#undef CALL
#undef CALL_REQ
    for (int i = 0; i < n; i++)
        if (refused)
            expect_refused(MPI_ERR_COMM, rc[i], "a collective on MPI_COMM_WORLD");
        else
            CHECK(rc[i] == MPI_SUCCESS, "collective %d on MPI_COMM_SELF failed", i);
}

/* A window over MPI_COMM_SELF that MPI itself cannot make (Open MPI 4.1
 * here has no one-sided component for a process alone: MPI_ERR_WIN). The
 * call reached MPI, which is what is checked: the layer refuses only with
 * MPI_ERR_COMM, after its line on stderr. */
static void win_unsupported(int rc, int which)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_WIN, "window constructor %d over MPI_COMM_SELF failed with "
          "class %d", which, cls);
    printf("note: window constructor %d over MPI_COMM_SELF: MPI_ERR_WIN from MPI\n",
           which);
}

/* Communicators, topologies, windows, files: over MPI_COMM_WORLD refused,
 * over MPI_COMM_SELF made (and freed). */
static void constructors(MPI_Comm c, int refused)
{
    MPI_Comm out[10];
    MPI_Group g;
    MPI_Win win[4];
    MPI_File fh;
    MPI_Request req;
    int one[1] = {1}, zero[1] = {0}, rc[16], n = 0, nc = 0, nw = 0;
    char base[64];
    void *mem = NULL;
    PASSES(MPI_Comm_group(MPI_COMM_SELF, &g));
    rc[n++] = MPI_Comm_dup(c, &out[nc++]);
    rc[n++] = MPI_Comm_dup_with_info(c, MPI_INFO_NULL, &out[nc++]);
    rc[n] = MPI_Comm_idup(c, &out[nc++], &req);
    if (rc[n++] == MPI_SUCCESS)
        PASSES(MPI_Wait(&req, MPI_STATUS_IGNORE));
    rc[n++] = MPI_Comm_split(c, 0, 0, &out[nc++]);
    rc[n++] = MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &out[nc++]);
    rc[n++] = MPI_Comm_create(c, g, &out[nc++]);
    rc[n++] = MPI_Cart_create(c, 1, one, zero, 0, &out[nc++]);
    rc[n++] = MPI_Graph_create(c, 1, zero, zero, 0, &out[nc++]);
    rc[n++] = MPI_Dist_graph_create(c, 0, zero, zero, zero, MPI_UNWEIGHTED, MPI_INFO_NULL,
                                    0, &out[nc++]);
    rc[n++] = MPI_Dist_graph_create_adjacent(c, 0, zero, MPI_UNWEIGHTED, 0, zero,
                                             MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &out[nc++]);
    int first_win = n;
    rc[n++] = MPI_Win_create(base, sizeof base, 1, MPI_INFO_NULL, c, &win[nw++]);
    rc[n++] = MPI_Win_allocate(64, 1, MPI_INFO_NULL, c, &mem, &win[nw++]);
    rc[n++] = MPI_Win_allocate_shared(64, 1, MPI_INFO_NULL, c, &mem, &win[nw++]);
    rc[n++] = MPI_Win_create_dynamic(MPI_INFO_NULL, c, &win[nw++]);
    int end_win = n;
    rc[n] = MPI_File_open(c, "omp_mpi_refusals.tmp",
                          MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                          MPI_INFO_NULL, &fh);
    if (rc[n++] == MPI_SUCCESS)
        PASSES(MPI_File_close(&fh));
    for (int i = 0; i < n; i++)
        if (refused)
            expect_refused(MPI_ERR_COMM, rc[i], "a constructor over MPI_COMM_WORLD");
        else if (i >= first_win && i < end_win && rc[i] != MPI_SUCCESS)
            win_unsupported(rc[i], i - first_win);
        else
            CHECK(rc[i] == MPI_SUCCESS, "constructor %d over MPI_COMM_SELF failed", i);
    for (int i = 0; !refused && i < nc; i++)
        PASSES(MPI_Comm_free(&out[i]));
    for (int i = 0; !refused && i < nw; i++)
        if (rc[first_win + i] == MPI_SUCCESS)
            PASSES(MPI_Win_free(&win[i]));
    PASSES(MPI_Group_free(&g));
}

/* Over a group: refused when a device is a member, else made. */
static void groups(void)
{
    MPI_Group world, g0, g01;
    MPI_Comm c;
    int r01[2] = {0, 1}, r0[1] = {0};
    PASSES(MPI_Comm_group(W, &world));
    PASSES(MPI_Group_incl(world, 1, r0, &g0));
    PASSES(MPI_Group_incl(world, 2, r01, &g01));
    COMM_REFUSED(MPI_Comm_create_group(W, g01, 5, &c));
    PASSES(MPI_Comm_create_group(W, g0, 5, &c));
    PASSES(MPI_Comm_free(&c));
    COMM_REFUSED(MPI_Intercomm_create(W, 0, S, 0, 6, &c));
    RANK_REFUSED(MPI_Intercomm_create(S, 0, W, 1, 6, &c));
    PASSES(MPI_Group_free(&g01));
    PASSES(MPI_Group_free(&g0));
    PASSES(MPI_Group_free(&world));
}

static int handled;

static void count_error(MPI_Comm *comm, int *code, ...)
{
    (void)comm, (void)code;
    handled++;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    PASSES(MPI_Init(&argc, &argv));
    printf("RUN omp_mpi_refusals: the guarded calls under MPI_ERRORS_RETURN\n");
    int ndev = require_devices(1);
    char bsend[256];
    PASSES(MPI_Buffer_attach(bsend, sizeof bsend));
    PASSES(MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN));
    PASSES(MPI_Comm_set_errhandler(S, MPI_ERRORS_RETURN));
    CHECK(device_value(0, 1) == 3, "a region before the refusals");
    point_to_point();
    collectives(W, 1);
    collectives(S, 0);
    constructors(W, 1);
    constructors(S, 0);
    groups();
    for (int d = 0; d < ndev; d++)
        CHECK(device_value(d, d) == 2 * d + 1, "a region on device %d after them", d);

    MPI_Errhandler mine;
    int x = 0;
    PASSES(MPI_Comm_create_errhandler(count_error, &mine));
    PASSES(MPI_Comm_set_errhandler(W, mine));
    RANK_REFUSED(MPI_Send(&x, 1, T, 1, 0, W));
    CHECK(handled == 1, "the program's handler was called %d times, expected once",
          handled);
    PASSES(MPI_Comm_set_errhandler(W, MPI_ERRORS_RETURN));
    PASSES(MPI_Errhandler_free(&mine));
    int size = 0;
    void *buf;
    PASSES(MPI_Buffer_detach(&buf, &size));
    PASSES(MPI_Finalize());
    PASS("%d calls refused with MPI_ERR_COMM or MPI_ERR_RANK and the same calls on "
         "MPI_COMM_SELF passed, the program's handler called", refusals);
}
