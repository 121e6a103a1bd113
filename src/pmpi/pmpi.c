/*
 * pmpi.c - the program's MPI layer: libomptarget-mpi-pmpi.so, which
 * omptarget-mpirun preloads into every rank (contract: otm/pmpi.h).
 *
 * Through MPI's profiling interface it answers the program's MPI calls on
 * rank 0 while the plugin's devices serve: the program's MPI_Init and
 * MPI_Finalize act as in a program of one process, and the calls that
 * would wait for ever on a device rank, which never runs main, fail at
 * once with a reason. Every other call, and every call before the plugin
 * attaches or on a rank it never attaches on, goes to MPI unchanged.
 *
 * The library names no MPI library (no DT_NEEDED) and refers to MPI's
 * symbols weakly: preloaded into a process without MPI (mpiexec itself, a
 * shell, a program that only offloads) it loads and is never called; in an
 * MPI program, PMPI_* are found in the program's own MPI library. The
 * plugin calls MPI by its PMPI_ names (names.h), so none of its calls pass
 * through here.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "otm/pmpi.h"

#define OTM_EXPORT __attribute__((visibility("default")))

#ifdef OTM_COVERAGE
void __gcov_dump(void);
#endif
#define STR(x) #x
/* Weak: resolved when the process has an MPI library, else never called. */
#define WEAK(sym) _Pragma(STR(weak sym))

#ifdef OPEN_MPI
/* Open MPI's handles are the addresses of these objects. */
WEAK(ompi_mpi_comm_world)
WEAK(ompi_mpi_errors_return)
WEAK(ompi_mpi_errors_are_fatal)
#endif
WEAK(PMPI_Comm_get_errhandler)
WEAK(PMPI_Comm_call_errhandler)
WEAK(PMPI_Errhandler_free)

/* The host's plugin while attached (atomic: the program's threads read
 * it), and what the program itself did: it initialised MPI, it finalised
 * it. `seen` stays 1 once the plugin attached: MPI_Initialized and
 * MPI_Finalized then answer for the program, also after the end. */
static const otm_pmpi_host *host;
static int seen, program_init, program_fini;

static const otm_pmpi_host *attached(void)
{
    return __atomic_load_n(&host, __ATOMIC_ACQUIRE);
}

OTM_EXPORT void otm_pmpi_attach(const otm_pmpi_host *h)
{
    if (h)
        seen = 1;
    __atomic_store_n(&host, h, __ATOMIC_RELEASE);
}

/* ---- refusals ---------------------------------------------------------- */

static void say(const char *line)
{
    size_t len = strlen(line);
    ssize_t n = write(2, line, len);    /* one write: ranks share stderr */
    (void)n;
}

/* The program's error on `comm`: its error handler decides. MPI's
 * default, MPI_ERRORS_ARE_FATAL, ends the job in order (the devices get
 * their EXIT) with status 1; MPI_ERRORS_RETURN returns `code`; a handler
 * of the program's is called with it. */
static int program_error(const otm_pmpi_host *h, MPI_Comm comm, int code)
{
    MPI_Errhandler eh;
    if (PMPI_Comm_get_errhandler(comm, &eh) != MPI_SUCCESS)
        return code;
    int fatal = eh == MPI_ERRORS_ARE_FATAL;
#ifdef MPI_ERRORS_ABORT
    fatal |= eh == MPI_ERRORS_ABORT;
#endif
    if (fatal) {
        say("omptarget-mpi: MPI_COMM_WORLD's error handler is MPI_ERRORS_ARE_FATAL: "
            "the job ends (status 1)\n");
#ifdef OTM_COVERAGE
        __gcov_dump();      /* this library's counters: end_job ends with _exit */
#endif
        h->end_job(1);
        return code;                /* not reached: end_job ends the process */
    }
    if (eh == MPI_ERRORS_RETURN)
        return code;
    PMPI_Comm_call_errhandler(comm, code);
    PMPI_Errhandler_free(&eh);
    return code;
}

/* MPI_SUCCESS, or the error of a collective `call` over MPI_COMM_WORLD,
 * whose other members are the devices. */
static int refuse_world(MPI_Comm comm, const char *call)
{
    const otm_pmpi_host *h = attached();
    if (!h || h->size < 2 || comm != MPI_COMM_WORLD)
        return MPI_SUCCESS;
    char line[512];
    snprintf(line, sizeof line,
             "omptarget-mpi: %s on MPI_COMM_WORLD cannot work: ranks 1..%d of "
             "MPI_COMM_WORLD are this program's OpenMP devices and never run main, "
             "so they never take part and the call would wait for ever; use "
             "MPI_COMM_SELF, which holds the program's one process\n",
             call, h->size - 1);
    say(line);
    return program_error(h, comm, MPI_ERR_COMM);
}

/* MPI_SUCCESS, or the error of a point-to-point `call` with rank `a` or
 * `b` of MPI_COMM_WORLD when that rank is a device. */
static int refuse_peer(MPI_Comm comm, const char *call, int a, int b)
{
    const otm_pmpi_host *h = attached();
    if (!h || comm != MPI_COMM_WORLD)
        return MPI_SUCCESS;
    int peer = a >= 1 && a < h->size ? a : b;
    if (peer < 1 || peer >= h->size)
        return MPI_SUCCESS;
    char line[512];
    snprintf(line, sizeof line,
             "omptarget-mpi: %s with rank %d of MPI_COMM_WORLD cannot work: rank %d "
             "is OpenMP device %d of this program and never runs main, so the call "
             "would wait for ever; only rank 0, this process, runs the program: use "
             "MPI_COMM_SELF for messages to itself\n",
             call, peer, peer, peer - 1);
    say(line);
    return program_error(h, comm, MPI_ERR_RANK);
}

/* ---- the program's life in MPI ------------------------------------------ */

/* MPI is already initialised (by the plugin, before main): the program's
 * first call succeeds; a second one is MPI's own error. */
WEAK(PMPI_Init)
OTM_EXPORT int MPI_Init(int *argc, char ***argv)
{
    if (!attached() || program_init)
        return PMPI_Init(argc, argv);
    program_init = 1;
    return MPI_SUCCESS;
}

/* The level reported is the one MPI provides, MPI_THREAD_MULTIPLE (the
 * plugin asked for it), whatever the program required. */
WEAK(PMPI_Init_thread)
WEAK(PMPI_Query_thread)
OTM_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    if (!attached() || program_init)
        return PMPI_Init_thread(argc, argv, required, provided);
    program_init = 1;
    return PMPI_Query_thread(provided);
}

WEAK(PMPI_Initialized)
OTM_EXPORT int MPI_Initialized(int *flag)
{
    if (!seen)
        return PMPI_Initialized(flag);
    *flag = program_init;
    return MPI_SUCCESS;
}

/* True once the program finalised MPI, or once MPI really is finalised
 * (the plugin's end, after main). */
WEAK(PMPI_Finalized)
OTM_EXPORT int MPI_Finalized(int *flag)
{
    if (seen && program_fini) {
        *flag = 1;
        return MPI_SUCCESS;
    }
    return PMPI_Finalized(flag);
}

/* The devices end first (EXIT to each, acknowledged), then MPI. After the
 * plugin's own end (a destructor or atexit handler of the program calling
 * MPI_Finalize last), there is nothing left to finalise. */
WEAK(PMPI_Finalize)
OTM_EXPORT int MPI_Finalize(void)
{
    const otm_pmpi_host *h = attached();
    if (!seen || program_fini)
        return PMPI_Finalize();
    program_fini = 1;
    if (h) {
        otm_pmpi_attach(NULL);
        return h->finalize();
    }
    int done = 0;
    PMPI_Finalized(&done);
    return done ? MPI_SUCCESS : PMPI_Finalize();
}

/* ---- calls that would wait for a device ---------------------------------- */

/* A call collective over `comm`. */
#define COLLECTIVE(name, comm, params, args)                                   \
    WEAK(P##name)                                                              \
    OTM_EXPORT int name params                                                 \
    {                                                                          \
        int rc = refuse_world(comm, #name);                                    \
        return rc ? rc : P##name args;                                         \
    }

/* A call with ranks `a` and `b` of `comm` (MPI_PROC_NULL: none). */
#define PEERS(name, comm, a, b, params, args)                                  \
    WEAK(P##name)                                                              \
    OTM_EXPORT int name params                                                 \
    {                                                                          \
        int rc = refuse_peer(comm, #name, a, b);                               \
        return rc ? rc : P##name args;                                         \
    }

#define SEND_PARAMS (const void *buf, int count, MPI_Datatype type, int dest, int tag, \
                     MPI_Comm comm)
#define SEND_ARGS (buf, count, type, dest, tag, comm)
#define ISEND_PARAMS (const void *buf, int count, MPI_Datatype type, int dest, int tag, \
                      MPI_Comm comm, MPI_Request *req)
#define ISEND_ARGS (buf, count, type, dest, tag, comm, req)
PEERS(MPI_Send, comm, dest, MPI_PROC_NULL, SEND_PARAMS, SEND_ARGS)
PEERS(MPI_Bsend, comm, dest, MPI_PROC_NULL, SEND_PARAMS, SEND_ARGS)
PEERS(MPI_Ssend, comm, dest, MPI_PROC_NULL, SEND_PARAMS, SEND_ARGS)
PEERS(MPI_Rsend, comm, dest, MPI_PROC_NULL, SEND_PARAMS, SEND_ARGS)
PEERS(MPI_Isend, comm, dest, MPI_PROC_NULL, ISEND_PARAMS, ISEND_ARGS)
PEERS(MPI_Ibsend, comm, dest, MPI_PROC_NULL, ISEND_PARAMS, ISEND_ARGS)
PEERS(MPI_Issend, comm, dest, MPI_PROC_NULL, ISEND_PARAMS, ISEND_ARGS)
PEERS(MPI_Irsend, comm, dest, MPI_PROC_NULL, ISEND_PARAMS, ISEND_ARGS)
PEERS(MPI_Send_init, comm, dest, MPI_PROC_NULL, ISEND_PARAMS, ISEND_ARGS)
PEERS(MPI_Bsend_init, comm, dest, MPI_PROC_NULL, ISEND_PARAMS, ISEND_ARGS)
PEERS(MPI_Ssend_init, comm, dest, MPI_PROC_NULL, ISEND_PARAMS, ISEND_ARGS)
PEERS(MPI_Rsend_init, comm, dest, MPI_PROC_NULL, ISEND_PARAMS, ISEND_ARGS)
PEERS(MPI_Recv, comm, source, MPI_PROC_NULL,
      (void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
       MPI_Status *status),
      (buf, count, type, source, tag, comm, status))
#define IRECV_PARAMS (void *buf, int count, MPI_Datatype type, int source, int tag, \
                      MPI_Comm comm, MPI_Request *req)
#define IRECV_ARGS (buf, count, type, source, tag, comm, req)
PEERS(MPI_Irecv, comm, source, MPI_PROC_NULL, IRECV_PARAMS, IRECV_ARGS)
PEERS(MPI_Recv_init, comm, source, MPI_PROC_NULL, IRECV_PARAMS, IRECV_ARGS)
PEERS(MPI_Sendrecv, comm, dest, source,
      (const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
       int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
       MPI_Status *status),
      (sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status))
PEERS(MPI_Sendrecv_replace, comm, dest, source,
      (void *buf, int count, MPI_Datatype type, int dest, int stag, int source, int rtag,
       MPI_Comm comm, MPI_Status *status),
      (buf, count, type, dest, stag, source, rtag, comm, status))
PEERS(MPI_Probe, comm, source, MPI_PROC_NULL,
      (int source, int tag, MPI_Comm comm, MPI_Status *status),
      (source, tag, comm, status))
PEERS(MPI_Iprobe, comm, source, MPI_PROC_NULL,
      (int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status),
      (source, tag, comm, flag, status))
PEERS(MPI_Mprobe, comm, source, MPI_PROC_NULL,
      (int source, int tag, MPI_Comm comm, MPI_Message *msg, MPI_Status *status),
      (source, tag, comm, msg, status))
PEERS(MPI_Improbe, comm, source, MPI_PROC_NULL,
      (int source, int tag, MPI_Comm comm, int *flag, MPI_Message *msg,
       MPI_Status *status),
      (source, tag, comm, flag, msg, status))

/* Collectives: blocking, then non-blocking (one more parameter, req). */
#define C_(name, params, args) COLLECTIVE(name, comm, params, args)
#define REQ MPI_Request *req
C_(MPI_Barrier, (MPI_Comm comm), (comm))
C_(MPI_Ibarrier, (MPI_Comm comm, REQ), (comm, req))
#define BCAST_P void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm
#define BCAST_A buf, count, type, root, comm
C_(MPI_Bcast, (BCAST_P), (BCAST_A))
C_(MPI_Ibcast, (BCAST_P, REQ), (BCAST_A, req))
#define ROOTED_P const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, \
                 MPI_Datatype rtype, int root, MPI_Comm comm
#define ROOTED_A sbuf, scount, stype, rbuf, rcount, rtype, root, comm
C_(MPI_Gather, (ROOTED_P), (ROOTED_A))
C_(MPI_Igather, (ROOTED_P, REQ), (ROOTED_A, req))
C_(MPI_Scatter, (ROOTED_P), (ROOTED_A))
C_(MPI_Iscatter, (ROOTED_P, REQ), (ROOTED_A, req))
#define GATHERV_P const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, \
                  const int rcounts[], const int displs[], MPI_Datatype rtype, int root, \
                  MPI_Comm comm
#define GATHERV_A sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm
C_(MPI_Gatherv, (GATHERV_P), (GATHERV_A))
C_(MPI_Igatherv, (GATHERV_P, REQ), (GATHERV_A, req))
#define SCATTERV_P const void *sbuf, const int scounts[], const int displs[], \
                   MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, int root, \
                   MPI_Comm comm
#define SCATTERV_A sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm
C_(MPI_Scatterv, (SCATTERV_P), (SCATTERV_A))
C_(MPI_Iscatterv, (SCATTERV_P, REQ), (SCATTERV_A, req))
#define ALL_P const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, \
              MPI_Datatype rtype, MPI_Comm comm
#define ALL_A sbuf, scount, stype, rbuf, rcount, rtype, comm
C_(MPI_Allgather, (ALL_P), (ALL_A))
C_(MPI_Iallgather, (ALL_P, REQ), (ALL_A, req))
C_(MPI_Alltoall, (ALL_P), (ALL_A))
C_(MPI_Ialltoall, (ALL_P, REQ), (ALL_A, req))
#define ALLGATHERV_P const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, \
                     const int rcounts[], const int displs[], MPI_Datatype rtype, \
                     MPI_Comm comm
#define ALLGATHERV_A sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm
C_(MPI_Allgatherv, (ALLGATHERV_P), (ALLGATHERV_A))
C_(MPI_Iallgatherv, (ALLGATHERV_P, REQ), (ALLGATHERV_A, req))
#define ALLTOALLV_P const void *sbuf, const int scounts[], const int sdispls[], \
                    MPI_Datatype stype, void *rbuf, const int rcounts[], \
                    const int rdispls[], MPI_Datatype rtype, MPI_Comm comm
#define ALLTOALLV_A sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm
C_(MPI_Alltoallv, (ALLTOALLV_P), (ALLTOALLV_A))
C_(MPI_Ialltoallv, (ALLTOALLV_P, REQ), (ALLTOALLV_A, req))
#define ALLTOALLW_P const void *sbuf, const int scounts[], const int sdispls[], \
                    const MPI_Datatype stypes[], void *rbuf, const int rcounts[], \
                    const int rdispls[], const MPI_Datatype rtypes[], MPI_Comm comm
#define ALLTOALLW_A sbuf, scounts, sdispls, stypes, rbuf, rcounts, rdispls, rtypes, comm
C_(MPI_Alltoallw, (ALLTOALLW_P), (ALLTOALLW_A))
C_(MPI_Ialltoallw, (ALLTOALLW_P, REQ), (ALLTOALLW_A, req))
#define REDUCE_P const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, \
                 int root, MPI_Comm comm
#define REDUCE_A sbuf, rbuf, count, type, op, root, comm
C_(MPI_Reduce, (REDUCE_P), (REDUCE_A))
C_(MPI_Ireduce, (REDUCE_P, REQ), (REDUCE_A, req))
#define ALLREDUCE_P const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, \
                    MPI_Comm comm
#define ALLREDUCE_A sbuf, rbuf, count, type, op, comm
C_(MPI_Allreduce, (ALLREDUCE_P), (ALLREDUCE_A))
C_(MPI_Iallreduce, (ALLREDUCE_P, REQ), (ALLREDUCE_A, req))
C_(MPI_Reduce_scatter_block, (ALLREDUCE_P), (ALLREDUCE_A))
C_(MPI_Ireduce_scatter_block, (ALLREDUCE_P, REQ), (ALLREDUCE_A, req))
C_(MPI_Scan, (ALLREDUCE_P), (ALLREDUCE_A))
C_(MPI_Iscan, (ALLREDUCE_P, REQ), (ALLREDUCE_A, req))
C_(MPI_Exscan, (ALLREDUCE_P), (ALLREDUCE_A))
C_(MPI_Iexscan, (ALLREDUCE_P, REQ), (ALLREDUCE_A, req))
#define RSCATTER_P const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype type, \
                   MPI_Op op, MPI_Comm comm
#define RSCATTER_A sbuf, rbuf, rcounts, type, op, comm
C_(MPI_Reduce_scatter, (RSCATTER_P), (RSCATTER_A))
C_(MPI_Ireduce_scatter, (RSCATTER_P, REQ), (RSCATTER_A, req))

/* Communicators, topologies, windows and files over `comm`: collective. */
C_(MPI_Comm_dup, (MPI_Comm comm, MPI_Comm *out), (comm, out))
C_(MPI_Comm_dup_with_info, (MPI_Comm comm, MPI_Info info, MPI_Comm *out),
   (comm, info, out))
C_(MPI_Comm_idup, (MPI_Comm comm, MPI_Comm *out, REQ), (comm, out, req))
C_(MPI_Comm_split, (MPI_Comm comm, int color, int key, MPI_Comm *out),
   (comm, color, key, out))
C_(MPI_Comm_split_type, (MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *out),
   (comm, type, key, info, out))
C_(MPI_Comm_create, (MPI_Comm comm, MPI_Group group, MPI_Comm *out), (comm, group, out))
C_(MPI_Cart_create,
   (MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
    MPI_Comm *out),
   (comm, ndims, dims, periods, reorder, out))
C_(MPI_Graph_create,
   (MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder,
    MPI_Comm *out),
   (comm, nnodes, index, edges, reorder, out))
C_(MPI_Dist_graph_create,
   (MPI_Comm comm, int n, const int sources[], const int degrees[], const int dests[],
    const int weights[], MPI_Info info, int reorder, MPI_Comm *out),
   (comm, n, sources, degrees, dests, weights, info, reorder, out))
C_(MPI_Dist_graph_create_adjacent,
   (MPI_Comm comm, int indegree, const int sources[], const int sweights[], int outdegree,
    const int dests[], const int dweights[], MPI_Info info, int reorder, MPI_Comm *out),
   (comm, indegree, sources, sweights, outdegree, dests, dweights, info, reorder, out))
C_(MPI_Win_create,
   (void *base, MPI_Aint size, int unit, MPI_Info info, MPI_Comm comm, MPI_Win *win),
   (base, size, unit, info, comm, win))
C_(MPI_Win_allocate,
   (MPI_Aint size, int unit, MPI_Info info, MPI_Comm comm, void *base, MPI_Win *win),
   (size, unit, info, comm, base, win))
C_(MPI_Win_allocate_shared,
   (MPI_Aint size, int unit, MPI_Info info, MPI_Comm comm, void *base, MPI_Win *win),
   (size, unit, info, comm, base, win))
C_(MPI_Win_create_dynamic, (MPI_Info info, MPI_Comm comm, MPI_Win *win), (info, comm, win))
C_(MPI_File_open,
   (MPI_Comm comm, const char *name, int mode, MPI_Info info, MPI_File *fh),
   (comm, name, mode, info, fh))

/* Collective over the group's members only: refused when a device is one. */
WEAK(PMPI_Comm_create_group)
WEAK(PMPI_Group_size)
OTM_EXPORT int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag,
                                     MPI_Comm *out)
{
    int n = 0;
    PMPI_Group_size(group, &n);
    int rc = n > 1 ? refuse_world(comm, "MPI_Comm_create_group") : MPI_SUCCESS;
    return rc ? rc : PMPI_Comm_create_group(comm, group, tag, out);
}

/* Collective over local_comm; its remote leader is a rank of peer_comm. */
WEAK(PMPI_Intercomm_create)
OTM_EXPORT int MPI_Intercomm_create(MPI_Comm local, int local_leader, MPI_Comm peer,
                                    int remote_leader, int tag, MPI_Comm *out)
{
    int rc = refuse_world(local, "MPI_Intercomm_create");
    if (!rc)
        rc = refuse_peer(peer, "MPI_Intercomm_create", remote_leader, MPI_PROC_NULL);
    return rc ? rc : PMPI_Intercomm_create(local, local_leader, peer, remote_leader, tag,
                                           out);
}
