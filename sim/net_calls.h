/*
 * sim/net_calls.h - the model's side of the MPI wrappers: what each call of
 * sim/mpi_functions.h does to a sim_net (sim/net.h), for sim/wrap.c only.
 *
 * The split: sim/wrap.c is MPICH's ABI. It finds the installed net, checks
 * the arguments a real MPI would reject (null pointers, counts, datatypes,
 * ranks, tags, communicators) and fills the caller's out parameters.
 * sim/net.c is the model: it owns ranks, communicators, messages and
 * requests, and every function below changes them as the net's current
 * rank (sim_net_set_rank) would by its call.
 *
 * Contract: every function takes the installed net, called between
 * sim_net_enter returning MPI_SUCCESS and the wrapper's return, with the
 * arguments the wrapper checked (valid communicator of the current rank,
 * rank and tag in range, buffer of at least the given bytes). What the
 * wrapper cannot check (handles of requests and probed messages, the order
 * of Init and Finalize) the model checks: such misuse is counted, as
 * sim_net_misused does, and returned as the MPI error, with no side effect.
 * The simulator's own limits (handles exhausted, out of memory) abort.
 */
#ifndef SIM_NET_CALLS_H
#define SIM_NET_CALLS_H

#include <limits.h>
#include <stddef.h>

#include <mpi.h>

#include "net.h"

/* What a failed MPI_Comm_dup leaves in *newcomm: a handle no dup gets, one
 * below the first dup's (sim/net.c checks that it stays so). */
#define SIM_NET_NO_COMM ((MPI_Comm)(INT_MIN + 0x04000000 - 1))

/* Every call starts here: counts it for the current rank first, so that
 * fault positions are stable whatever the outcome; then a stopped rank, an
 * injected fault (sim_net_fail_call) or a call after MPI_Finalize fails it
 * before anything is touched. MPI_SUCCESS when the call may proceed, else
 * the error the call returns. */
int sim_net_enter(sim_net *net, sim_fn fn);

/* Counts a misuse by the code under test (sim_net_misuse); returns err. */
int sim_net_misused(sim_net *net, int err);

/* The current rank, the number of ranks, and the int that the attribute
 * MPI_TAG_UB points at (it lives as long as the net). */
int sim_net_rank(const sim_net *net);
int sim_net_size(const sim_net *net);
const int *sim_net_tag_ub(const sim_net *net);
/* 1 when `comm` is MPI_COMM_WORLD or a dup of the current rank not freed. */
int sim_net_comm_valid(const sim_net *net, MPI_Comm comm);

/* MPI_Init_thread and MPI_Finalize: MPI_ERR_OTHER (misuse) for a second
 * Init, and for a Finalize before Init. */
int sim_net_init(sim_net *net);
int sim_net_finalize(sim_net *net);

/* MPI_Comm_dup of a valid communicator: the next dup handle of the rank.
 * MPI_Comm_free of a dup (not MPI_COMM_WORLD) the rank holds. */
MPI_Comm sim_net_comm_dup(sim_net *net);
void sim_net_comm_free(sim_net *net, MPI_Comm comm);

/* MPI_Isend and MPI_Irecv of `len` bytes (sim/net.h: eager or rendezvous,
 * matching, the oracles); the new request's handle. */
MPI_Request sim_net_isend(sim_net *net, const void *buf, size_t len, int dest,
                          int tag, MPI_Comm comm);
MPI_Request sim_net_irecv(sim_net *net, void *buf, size_t len, int source,
                          int tag, MPI_Comm comm);
/* MPI_Improbe: 1 and *message, *status set when an arrived message
 * matches (it is then the probed one's until Imrecv), else 0. */
int sim_net_improbe(sim_net *net, int source, int tag, MPI_Comm comm,
                    MPI_Message *message, MPI_Status *status);
/* MPI_Imrecv of *message (MPI_ERR_REQUEST if it names no message this rank
 * probed): sets *request, completed, and *message to MPI_MESSAGE_NULL. */
int sim_net_imrecv(sim_net *net, void *buf, size_t len, MPI_Message *message,
                   MPI_Request *request);

/* MPI_Test, MPI_Cancel and MPI_Request_free of a request handle (MPI_Test
 * also of MPI_REQUEST_NULL); MPI_ERR_REQUEST when the handle is not a live
 * request of the current rank. A completed request that MPI_Test reports
 * is freed, as in MPI; its result is the request's error. */
int sim_net_test(sim_net *net, MPI_Request *request, int *flag, MPI_Status *status);
int sim_net_cancel(sim_net *net, MPI_Request request);
int sim_net_request_free(sim_net *net, MPI_Request *request);

#endif
