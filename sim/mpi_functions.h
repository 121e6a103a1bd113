/*
 * sim/mpi_functions.h - the MPI functions the project calls, one per line.
 *
 * This single list drives both sides of the simulator: CMake reads it to
 * build the `-Wl,--wrap=MPI_<name>` flags of every simulator-linked binary,
 * and sim/ expands it into the table of per-function call counters and fault
 * injection slots (sim_fn). A function missing here but called by the core is
 * a link error in the test binaries (they link no libmpi), never a silent
 * fallback to a real MPI.
 *
 * Keep one entry per line, in the form OTM_MPI_FN(Name).
 */
OTM_MPI_FN(Init_thread)
OTM_MPI_FN(Initialized)
OTM_MPI_FN(Finalize)
OTM_MPI_FN(Finalized)
OTM_MPI_FN(Comm_rank)
OTM_MPI_FN(Comm_size)
OTM_MPI_FN(Comm_dup)
OTM_MPI_FN(Comm_free)
OTM_MPI_FN(Comm_set_errhandler)
OTM_MPI_FN(Comm_get_attr)
OTM_MPI_FN(Isend)
OTM_MPI_FN(Irecv)
OTM_MPI_FN(Improbe)
OTM_MPI_FN(Imrecv)
OTM_MPI_FN(Test)
OTM_MPI_FN(Cancel)
OTM_MPI_FN(Test_cancelled)
OTM_MPI_FN(Request_free)
OTM_MPI_FN(Get_count)
