/*
 * end.c - the host's end of the job, and the worker's.
 *
 * The host's end comes at the program's end (otp_host_end, program.c) or
 * as soon as a region faulted or called exit() (otp_host_end_if_faulted,
 * from a failing call). Either way one host thread, elected by the node,
 * runs it alone behind the end's fence (fence.c): EXIT to every worker, the trace, then
 * MPI_Finalize, or MPI_Abort when a worker missed the EXIT. What the
 * host's state holds is freed by the caller's `release`, when the process
 * goes on: this file knows nothing of the pools and the images.
 * The worker's end: after EXIT, MPI_Finalize and _exit.
 */
#include <assert.h>
#include <dlfcn.h>
#include <stdint.h>
#include <unistd.h>

#include <mpi.h>

#include "../shell/idle.h"
#include "../shell/trace.h"
#include "otm/output.h"
#include "otm/pmpi.h"
#include "plugin.h"

/* ---- the program's MPI layer (src/pmpi, otm/pmpi.h) ------------------------- */

otm_pmpi_attach_fn *otp_program_mpi_layer(void)
{
    return (otm_pmpi_attach_fn *)(uintptr_t)dlsym(RTLD_DEFAULT, OTM_PMPI_ATTACH);
}

static void detach_program_mpi(void)
{
    otm_pmpi_attach_fn *attach = otp_program_mpi_layer();
    if (attach)
        attach(NULL);
}

/* ---- the trace, at either role's end --------------------------------------- */

static void say(void *ctx, const char *line)
{
    (void)ctx;
    otp_plugin_log(OTM_LOG_ERROR, "%s", line);
}

void otp_plugin_trace_end(otp_plugin *p)
{
    char msg[1200];
    ots_trace *t = p->trace;
    if (!t)
        return;
    p->node.hooks.trace = NULL;
    p->trace = NULL;
    if (p->settings.trace_len) {
        int rc = ots_trace_write(t, msg, sizeof msg);
        if (rc)
            otp_plugin_log(OTM_LOG_ERROR, "rank %d: %s", p->node.rank, msg);
        else
            otp_plugin_log(p->node.rank == 0 ? OTM_LOG_ERROR : OTM_LOG_INFO,
                           "rank %d: trace written to %s (%llu spans)", p->node.rank,
                           msg, (unsigned long long)ots_trace_spans(t));
        if (ots_trace_dropped(t))
            otp_plugin_log(OTM_LOG_WARN, "rank %d: the trace was full: %llu spans "
                           "dropped (kept the first %u)", p->node.rank,
                           (unsigned long long)ots_trace_dropped(t), OTM_TRACE_CAPACITY);
    }
    if (p->settings.info)
        ots_trace_report(t, say, NULL);
    ots_trace_free(t);
}

/* ---- the host's end ---------------------------------------------------------- */

/* EXIT to every worker, until each acknowledged it or gave up (the core's
 * exit protocol). */
static void exit_workers(otp_plugin *p)
{
    ots_idle idle;
    ots_idle_init(&idle, &p->settings);
    otm_host_exit_begin(&p->node);
    while (p->node.life != OTM_LIFE_DONE)
        ots_idle_after(&idle, otm_host_exit_progress(&p->node), 0);
    if (p->node.exit_failures)
        otp_plugin_log(OTM_LOG_ERROR, "%d device rank(s) did not acknowledge the exit",
                       p->node.exit_failures);
    else
        otp_plugin_log(OTM_LOG_INFO, "rank 0: all %d device ranks acknowledged the exit",
                       p->node.size - 1);
}

/* When the process ends right after (no `release`, or a status recorded
 * meanwhile) the devices stay allocated: a thread on its way to the node's
 * door may still read them. */
void otp_host_end_run(otp_plugin *p, void (*release)(otp_plugin *p))
{
    ots_idle idle;
    ots_idle_init(&idle, &p->settings);
    assert(!otp_plugin_inside());   /* it would wait for itself */
    while (!otm_host_end_alone(&p->node))
        ots_idle_after(&idle, 0, 0);
    otp_map_end(p);
    detach_program_mpi();
    exit_workers(p);
    otp_plugin_trace_end(p);
    int status = otp_host_end_status(p);
    if (status >= 0)
        otp_map_status(p, status);
    /* Devices may ask for pages until they heard EXIT. */
    otp_usm_host_stop(p);
    if (release && status < 0)
        release(p);
    /* A worker that never heard EXIT would keep MPI_Finalize waiting for
     * ever: end the job instead of hanging, with the status said. */
    if (p->node.exit_failures) {
        otp_exit_drain_output(&p->settings);
        otp_exit_dump_coverage();
        MPI_Abort(MPI_COMM_WORLD, status > 0 ? status : 1);
    }
    otm_node_fini(&p->node);
    otp_plugin_alloc_report();
    if (p->mpi_owned)
        MPI_Finalize();
    otm_node_release(&p->node);
}

/* The job first (otp_host_end_run), then this process, with the status recorded:
 * the first recorded wins, whoever records later. A thread that loses the
 * election waits for the winner to end the process. */
_Noreturn void otp_host_end_job(otp_plugin *p, int status, const char *why)
{
    otp_host_end_with(p, status, why);
    if (!otm_host_end_claim(&p->node))
        otp_host_end_park();
    status = otp_host_end_status(p);
    why = p->end_why;
    if (why)
        otp_plugin_log(OTM_LOG_ERROR, "%s: the job ends with exit status %d", why,
                       status);
    otp_host_end_run(p, NULL);
    otp_exit_process(status);
}

void otp_host_end_if_faulted(otp_plugin *p)
{
    int status = otp_host_end_status(p);
    if (status >= 0)
        otp_host_end_job(p, status, NULL);
}

/* ---- the worker's end --------------------------------------------------------- */

static uint64_t events_served(const otp_plugin *p)
{
    uint64_t served = 0;
    for (int k = 0; k < OTM_KIND_END; k++)
        served += p->node.stats.events[k];
    return served;
}

void otp_worker_end(otp_plugin *p)
{
    otp_plugin_trace_end(p);
    uint64_t served = events_served(p);
    otp_usm_worker_stop(p);
    otp_usm_release(p);
    otm_node_fini(&p->node);
    otp_units_close(p);
    int rc = p->mpi_owned && MPI_Finalize() != MPI_SUCCESS;
    otm_node_release(&p->node);
    /* What the regions printed and nobody took goes out now. */
    otd_output_stop(p->output);
    p->output = NULL;
    otp_plugin_log_to(2);
    otp_plugin_alloc_report();
    /* Tests read this line to know every worker really finished. */
    otp_plugin_log(OTM_LOG_INFO, "rank %d exited cleanly after %llu events",
                   p->node.rank, (unsigned long long)served);
    otp_exit_process(rc);
}
