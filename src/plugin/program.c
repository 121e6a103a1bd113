/*
 * program.c - the end the program asks for, and the program's MPI layer.
 *
 * The host's end at the program's end (the last unregister_lib, or the
 * program's MPI_Finalize through the layer of src/pmpi), after which the
 * host's state is freed, since the process goes on. The layer, preloaded
 * by the launcher, hands the program's MPI_Finalize and fatal MPI errors
 * to the host (otm/pmpi.h); in a job of one rank, it keeps up the MPI the
 * plugin initialised, for the program.
 */
#include <stdint.h>
#include <stdlib.h>

#include <mpi.h>

#include "otm/pmpi.h"
#include "plugin.h"

/* The host the layer was handed (otp_program_attach): the layer's calls
 * carry no context. */
static otp_plugin *attached;

/* ---- the host's end at the program's end --------------------------------------- */

void otp_host_end(otp_plugin *p)
{
    if (!otm_host_end_claim(&p->node)) {
        otp_host_end_wait(p);
        return;
    }
    otp_host_end_run(p, otp_host_release);
    int status = otp_host_end_status(p);
    if (status >= 0) {
        const char *why = p->end_why;
        if (why)
            otp_plugin_log(OTM_LOG_ERROR, "%s: the job ends with exit status %d", why,
                           status);
        otp_exit_process(status);
    }
}


/* ---- the program's MPI layer (src/pmpi, otm/pmpi.h) ------------------------- */

/* The program's MPI_Finalize: the devices end in order, then MPI. */
static int program_finalize(void)
{
    otp_plugin *p = attached;
    p->program_finalized = 1;
    otp_host_end(p);
    int done = 0;
    MPI_Finalized(&done);
    return done ? MPI_SUCCESS : MPI_Finalize();
}

/* The layer said why (an MPI_ERRORS_ARE_FATAL error). */
static _Noreturn void program_end_job(int status)
{
    otp_host_end_job(attached, status, NULL);
}

static otm_pmpi_host program_mpi = {.finalize = program_finalize,
                                    .end_job = program_end_job};

/* The layer, when the launcher preloaded it, is in the global scope; this
 * plugin, dlopen()ed by libomptarget, is not (it exports only
 * __tgt_rtl_*), so the plugin hands the layer what it needs. */
void otp_program_attach(otp_plugin *p)
{
    otm_pmpi_attach_fn *attach = otp_program_mpi_layer();
    attached = p;
    program_mpi.size = p->node.size;
    if (attach)
        attach(&program_mpi);
}

/* A job of one rank has no devices: under the layer, the MPI the plugin
 * initialised stays up for the program, whose own MPI_Init then succeeds;
 * it is finalised by the program, else at the process's exit. */
static int finalize_once(void)
{
    int done = 0;
    MPI_Finalized(&done);
    return done ? MPI_SUCCESS : MPI_Finalize();
}

static void finalize_at_exit(void)
{
    (void)finalize_once();
}

static _Noreturn void end_lone_job(int status)
{
    otp_exit_process(status);
}

/* 1 when the layer took MPI over for the program, 0 when there is none. */
int otp_program_leave_mpi(void)
{
    static otm_pmpi_host lone = {.size = 1, .finalize = finalize_once,
                                 .end_job = end_lone_job};
    otm_pmpi_attach_fn *attach = otp_program_mpi_layer();
    if (!attach || atexit(finalize_at_exit))
        return 0;
    attach(&lone);
    return 1;
}
