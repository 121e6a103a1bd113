/*
 * sim/wrap.h - prototypes of the __wrap_MPI_* functions defined in wrap.c.
 *
 * Nobody calls these by name: the linker's --wrap turns every MPI_<fn> call
 * of a simulator-linked binary into __wrap_MPI_<fn>. They are declared here
 * only so that wrap.c compiles under -Wmissing-prototypes, with exactly
 * MPICH's signatures (sim/ implements MPICH's ABI). One per entry of
 * sim/mpi_functions.h; a missing one is a link error in the test binaries.
 */
#ifndef SIM_WRAP_H
#define SIM_WRAP_H

#include <mpi.h>

int __wrap_MPI_Init_thread(int *argc, char ***argv, int required,
                           int *provided);
int __wrap_MPI_Initialized(int *flag);
int __wrap_MPI_Finalize(void);
int __wrap_MPI_Finalized(int *flag);
int __wrap_MPI_Comm_rank(MPI_Comm comm, int *rank);
int __wrap_MPI_Comm_size(MPI_Comm comm, int *size);
int __wrap_MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
int __wrap_MPI_Comm_free(MPI_Comm *comm);
int __wrap_MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
int __wrap_MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval,
                             void *attribute_val, int *flag);
int __wrap_MPI_Isend(const void *buf, int count, MPI_Datatype datatype,
                     int dest, int tag, MPI_Comm comm, MPI_Request *request);
int __wrap_MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source,
                     int tag, MPI_Comm comm, MPI_Request *request);
int __wrap_MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag,
                       MPI_Message *message, MPI_Status *status);
int __wrap_MPI_Imrecv(void *buf, int count, MPI_Datatype datatype,
                      MPI_Message *message, MPI_Request *request);
int __wrap_MPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
int __wrap_MPI_Cancel(MPI_Request *request);
int __wrap_MPI_Test_cancelled(const MPI_Status *status, int *flag);
int __wrap_MPI_Request_free(MPI_Request *request);
int __wrap_MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype,
                         int *count);

#endif
