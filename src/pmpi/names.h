/*
 * names.h - the plugin's MPI calls under their PMPI_ names.
 *
 * Force-included (-include) into every file of the plugin and of the
 * core's copy it links. The program's MPI layer (pmpi.c, preloaded by
 * omptarget-mpirun) defines the MPI_ names in the process's global scope,
 * where the plugin's own calls would find them first: called by these
 * names, the plugin's calls go straight to MPI, never through the layer
 * that answers the program (which would refuse the set-up's collectives on
 * MPI_COMM_WORLD and pretend MPI is not initialised). The test
 * plugin_calls_pmpi_only fails when a call is missing here.
 */
#ifndef OTM_PMPI_NAMES_H
#define OTM_PMPI_NAMES_H

#include <mpi.h>

#define MPI_Abort PMPI_Abort
#define MPI_Barrier PMPI_Barrier
#define MPI_Bcast PMPI_Bcast
#define MPI_Cancel PMPI_Cancel
#define MPI_Comm_dup PMPI_Comm_dup
#define MPI_Comm_free PMPI_Comm_free
#define MPI_Comm_get_attr PMPI_Comm_get_attr
#define MPI_Comm_get_errhandler PMPI_Comm_get_errhandler
#define MPI_Comm_rank PMPI_Comm_rank
#define MPI_Comm_set_errhandler PMPI_Comm_set_errhandler
#define MPI_Comm_size PMPI_Comm_size
#define MPI_Errhandler_free PMPI_Errhandler_free
#define MPI_Finalize PMPI_Finalize
#define MPI_Finalized PMPI_Finalized
#define MPI_Gather PMPI_Gather
#define MPI_Get_count PMPI_Get_count
#define MPI_Iallgather PMPI_Iallgather
#define MPI_Improbe PMPI_Improbe
#define MPI_Imrecv PMPI_Imrecv
#define MPI_Init_thread PMPI_Init_thread
#define MPI_Initialized PMPI_Initialized
#define MPI_Irecv PMPI_Irecv
#define MPI_Isend PMPI_Isend
#define MPI_Query_thread PMPI_Query_thread
#define MPI_Request_free PMPI_Request_free
#define MPI_Test PMPI_Test

#endif
