/*
 * otm/pmpi.h - the contract between the plugin and the program's MPI layer
 * (src/pmpi/pmpi.c, libomptarget-mpi-pmpi.so, which omptarget-mpirun
 * preloads into every rank).
 *
 * The plugin initialises MPI before main, on every rank, and ranks 1..N-1
 * never run main: they are the program's devices. The layer makes the
 * program's own MPI calls on rank 0 behave as MPI promises a program of
 * one process (docs/DESIGN.md §6, the README's "MPI + OpenMP-offload
 * programs"):
 *   - MPI_Init and MPI_Init_thread succeed once (the latter reports the
 *     level MPI really provides); MPI_Initialized and MPI_Finalized tell
 *     what the program itself did;
 *   - MPI_Finalize ends the devices in order (the host's end of the job),
 *     then finalises MPI;
 *   - a collective over MPI_COMM_WORLD, or a message to or from a device
 *     rank, which would wait for ever, fails at once with a line that says
 *     why (MPI_ERR_COMM or MPI_ERR_RANK through the communicator's error
 *     handler; under MPI_ERRORS_ARE_FATAL, MPI's default, the job ends in
 *     order with status 1).
 * Until the plugin attaches, and on every rank it does not (the devices,
 * a job without devices), every call goes to MPI unchanged.
 *
 * The plugin finds the layer by name in the process's global scope
 * (dlsym(RTLD_DEFAULT, OTM_PMPI_ATTACH)): it exports only __tgt_rtl_*, so
 * the layer cannot find it. The plugin calls MPI's lifecycle functions
 * through their PMPI_ names, which the layer does not intercept.
 */
#ifndef OTM_PMPI_H
#define OTM_PMPI_H

/* What the host's plugin gives the layer, valid until it detaches. */
typedef struct otm_pmpi_host {
    int size;                   /* ranks in MPI_COMM_WORLD: 1 + devices */
    /* The program's MPI_Finalize: ends the devices in order (EXIT to each,
     * acknowledged), then finalises MPI. Returns an MPI error code. */
    int (*finalize)(void);
    /* A fatal MPI error of the program: ends the devices in order and the
     * process with `status`; does not return. */
    void (*end_job)(int status);
} otm_pmpi_host;

/* The layer's one entry point besides MPI's: attach (host != NULL, read
 * until detached) or detach (NULL). Called by the plugin on rank 0 only,
 * before main once its devices serve, and at the host's end. */
typedef void otm_pmpi_attach_fn(const otm_pmpi_host *host);
otm_pmpi_attach_fn otm_pmpi_attach;     /* defined by the layer only */
#define OTM_PMPI_ATTACH "otm_pmpi_attach"

#endif
