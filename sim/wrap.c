/*
 * sim/wrap.c - the __wrap_MPI_* functions (sim/wrap.h): MPICH's ABI over the
 * model of sim/net.h.
 *
 * Each wrapper enters the installed net (one prologue, enter), checks the
 * arguments a real MPI would reject, then lets the model act through
 * sim/net_calls.h and fills the caller's out parameters. Bad arguments are
 * the code under test's misuse: returned as the MPI error and counted. No
 * state lives here.
 */
#include "wrap.h"

#include "net.h"
#include "net_calls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int misuse(sim_net *net, int err)
{
    return sim_net_misused(net, err);
}

/*
 * Every wrapper starts here: with no net installed the test itself is
 * broken, and it stops loudly. Otherwise sim_net_enter counts the call and
 * says whether it may proceed. Returns MPI_SUCCESS when it may.
 */
static int enter(sim_net **out, sim_fn fn)
{
    sim_net *net = sim_net_installed();

    if (!net) {
        fprintf(stderr, "sim/net: MPI_%s called with no sim_net installed\n",
                sim_fn_name(fn));
        abort();
    }
    *out = net;
    return sim_net_enter(net, fn);
}

/* ---- environment ------------------------------------------------------------ */

int __wrap_MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Init_thread);

    if (rc != MPI_SUCCESS)
        return rc;
    if (!provided)
        return misuse(net, MPI_ERR_ARG);
    rc = sim_net_init(net);
    if (rc == MPI_SUCCESS)
        *provided = MPI_THREAD_MULTIPLE;
    return rc;
}

int __wrap_MPI_Initialized(int *flag)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Initialized);

    if (rc != MPI_SUCCESS)
        return rc;
    if (!flag)
        return misuse(net, MPI_ERR_ARG);
    *flag = sim_net_initialized(net, sim_net_rank(net));
    return MPI_SUCCESS;
}

int __wrap_MPI_Finalize(void)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Finalize);

    if (rc != MPI_SUCCESS)
        return rc;
    return sim_net_finalize(net);
}

int __wrap_MPI_Finalized(int *flag)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Finalized);

    if (rc != MPI_SUCCESS)
        return rc;
    if (!flag)
        return misuse(net, MPI_ERR_ARG);
    *flag = sim_net_finalized(net, sim_net_rank(net));
    return MPI_SUCCESS;
}

/* ---- communicators ---------------------------------------------------------- */

/* Common checks of the calls that take a communicator and one out pointer. */
static int comm_call(sim_fn fn, sim_net **net, MPI_Comm comm, const void *out)
{
    int rc = enter(net, fn);

    if (rc != MPI_SUCCESS)
        return rc;
    if (!sim_net_comm_valid(*net, comm))
        return misuse(*net, MPI_ERR_COMM);
    if (!out)
        return misuse(*net, MPI_ERR_ARG);
    return MPI_SUCCESS;
}

int __wrap_MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    sim_net *net;
    int rc = comm_call(SIM_FN_Comm_rank, &net, comm, rank);

    if (rc == MPI_SUCCESS)
        *rank = sim_net_rank(net);
    return rc;
}

int __wrap_MPI_Comm_size(MPI_Comm comm, int *size)
{
    sim_net *net;
    int rc = comm_call(SIM_FN_Comm_size, &net, comm, size);

    if (rc == MPI_SUCCESS)
        *size = sim_net_size(net);
    return rc;
}

int __wrap_MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    sim_net *net;
    int rc = comm_call(SIM_FN_Comm_dup, &net, comm, newcomm);

    if (rc != MPI_SUCCESS) {
        if (newcomm)
            *newcomm = SIM_NET_NO_COMM;     /* no communicator: not to be used */
        return rc;
    }
    *newcomm = sim_net_comm_dup(net);
    return MPI_SUCCESS;
}

int __wrap_MPI_Comm_free(MPI_Comm *comm)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Comm_free);

    if (rc != MPI_SUCCESS)
        return rc;
    if (!comm)
        return misuse(net, MPI_ERR_ARG);
    /* MPI_COMM_WORLD is predefined and cannot be freed. */
    if (*comm == MPI_COMM_WORLD || !sim_net_comm_valid(net, *comm))
        return misuse(net, MPI_ERR_COMM);
    sim_net_comm_free(net, *comm);
    *comm = MPI_COMM_NULL;
    return MPI_SUCCESS;
}

int __wrap_MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Comm_set_errhandler);

    if (rc != MPI_SUCCESS)
        return rc;
    /* Errors are always returned here, which is what the core asks for. */
    if (!sim_net_comm_valid(net, comm))
        return misuse(net, MPI_ERR_COMM);
    return MPI_SUCCESS;
}

int __wrap_MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval,
                             void *attribute_val, int *flag)
{
    sim_net *net;
    const int *tag_ub;
    int rc = comm_call(SIM_FN_Comm_get_attr, &net, comm, attribute_val);

    if (rc != MPI_SUCCESS)
        return rc;
    if (!flag)
        return misuse(net, MPI_ERR_ARG);
    *flag = comm_keyval == MPI_TAG_UB;
    if (*flag) {
        /* Like MPICH: the attribute is a pointer to the int. */
        tag_ub = sim_net_tag_ub(net);
        memcpy(attribute_val, &tag_ub, sizeof tag_ub);
    }
    return MPI_SUCCESS;
}

/* ---- point to point ----------------------------------------------------------- */

/* Checks shared by Irecv and Imrecv (the buffer side of a receive). */
static int check_recv_buf(sim_net *net, const void *buf, int count,
                          MPI_Datatype type, const MPI_Request *request)
{
    if (type != MPI_BYTE)
        return misuse(net, MPI_ERR_TYPE);
    if (count < 0)
        return misuse(net, MPI_ERR_COUNT);
    if (!buf && count > 0)
        return misuse(net, MPI_ERR_BUFFER);
    if (!request)
        return misuse(net, MPI_ERR_ARG);
    return MPI_SUCCESS;
}

/* Checks shared by Irecv and Improbe (what a receive matches). */
static int check_match(sim_net *net, int source, int tag, MPI_Comm comm)
{
    if (!sim_net_comm_valid(net, comm))
        return misuse(net, MPI_ERR_COMM);
    if (source != MPI_ANY_SOURCE && (source < 0 || source >= sim_net_size(net)))
        return misuse(net, MPI_ERR_RANK);
    if (tag != MPI_ANY_TAG && (tag < 0 || tag > *sim_net_tag_ub(net)))
        return misuse(net, MPI_ERR_TAG);
    return MPI_SUCCESS;
}

static int check_send(sim_net *net, const void *buf, int count, MPI_Datatype type,
                      int dest, int tag, MPI_Comm comm, const MPI_Request *request)
{
    if (type != MPI_BYTE)
        return misuse(net, MPI_ERR_TYPE);
    if (count < 0)
        return misuse(net, MPI_ERR_COUNT);
    if (!buf && count > 0)
        return misuse(net, MPI_ERR_BUFFER);
    if (!sim_net_comm_valid(net, comm))
        return misuse(net, MPI_ERR_COMM);
    if (dest < 0 || dest >= sim_net_size(net))
        return misuse(net, MPI_ERR_RANK);
    if (tag < 0 || tag > *sim_net_tag_ub(net))
        return misuse(net, MPI_ERR_TAG);
    if (!request)
        return misuse(net, MPI_ERR_ARG);
    return MPI_SUCCESS;
}

int __wrap_MPI_Isend(const void *buf, int count, MPI_Datatype datatype,
                     int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Isend);

    if (rc == MPI_SUCCESS)
        rc = check_send(net, buf, count, datatype, dest, tag, comm, request);
    if (rc == MPI_SUCCESS)
        *request = sim_net_isend(net, buf, (size_t)count, dest, tag, comm);
    return rc;
}

int __wrap_MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source,
                     int tag, MPI_Comm comm, MPI_Request *request)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Irecv);

    if (rc == MPI_SUCCESS)
        rc = check_recv_buf(net, buf, count, datatype, request);
    if (rc == MPI_SUCCESS)
        rc = check_match(net, source, tag, comm);
    if (rc == MPI_SUCCESS)
        *request = sim_net_irecv(net, buf, (size_t)count, source, tag, comm);
    return rc;
}

int __wrap_MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag,
                       MPI_Message *message, MPI_Status *status)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Improbe);

    if (rc == MPI_SUCCESS)
        rc = check_match(net, source, tag, comm);
    if (rc == MPI_SUCCESS && (!flag || !message || !status))
        rc = misuse(net, MPI_ERR_ARG);
    if (rc == MPI_SUCCESS)
        *flag = sim_net_improbe(net, source, tag, comm, message, status);
    return rc;
}

int __wrap_MPI_Imrecv(void *buf, int count, MPI_Datatype datatype,
                      MPI_Message *message, MPI_Request *request)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Imrecv);

    if (rc == MPI_SUCCESS)
        rc = check_recv_buf(net, buf, count, datatype, request);
    if (rc == MPI_SUCCESS && !message)
        rc = misuse(net, MPI_ERR_ARG);
    if (rc == MPI_SUCCESS)
        rc = sim_net_imrecv(net, buf, (size_t)count, message, request);
    return rc;
}

/* ---- requests and statuses ------------------------------------------------------ */

int __wrap_MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Test);

    if (rc == MPI_SUCCESS && (!request || !flag || !status))
        rc = misuse(net, MPI_ERR_ARG);
    if (rc == MPI_SUCCESS)
        rc = sim_net_test(net, request, flag, status);
    return rc;
}

int __wrap_MPI_Cancel(MPI_Request *request)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Cancel);

    if (rc != MPI_SUCCESS)
        return rc;
    if (!request)
        return misuse(net, MPI_ERR_ARG);
    return sim_net_cancel(net, *request);
}

int __wrap_MPI_Test_cancelled(const MPI_Status *status, int *flag)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Test_cancelled);

    if (rc != MPI_SUCCESS)
        return rc;
    if (!status || status == MPI_STATUS_IGNORE || !flag)
        return misuse(net, MPI_ERR_ARG);
    *flag = status->count_hi_and_cancelled & 1;
    return MPI_SUCCESS;
}

int __wrap_MPI_Request_free(MPI_Request *request)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Request_free);

    if (rc != MPI_SUCCESS)
        return rc;
    if (!request)
        return misuse(net, MPI_ERR_ARG);
    return sim_net_request_free(net, request);
}

int __wrap_MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype,
                         int *count)
{
    sim_net *net;
    int rc = enter(&net, SIM_FN_Get_count);

    if (rc != MPI_SUCCESS) {
        if (count)
            *count = -1;    /* a failed call's output is not to be used */
        return rc;
    }
    if (!status || status == MPI_STATUS_IGNORE || !count)
        return misuse(net, MPI_ERR_ARG);
    if (datatype != MPI_BYTE)
        return misuse(net, MPI_ERR_TYPE);
    *count = status->count_lo;
    return MPI_SUCCESS;
}
