/*
 * addresses.c - rank 0's program and libraries at rank 0's addresses on
 * every device rank (otm/host_code.h), at start-up: rank 0 describes its
 * loaded objects, a broadcast of the set-up (every rank enters it, like
 * the map's gather) takes the description to every rank, and each device
 * rank places them, unless OMPTARGET_MPI_HOST_CODE is off there.
 */
#include <stdlib.h>

#include <mpi.h>

#include "otm/host_code.h"
#include "plugin.h"

static void place(otp_plugin *p, const uint8_t *desc, uint64_t len)
{
    char err[256];
    otd_host_code_counts c;
    if (!p->settings.host_code || !len)
        return;
    if (otd_host_code_place(desc, (size_t)len, &c, err, sizeof err)) {
        otp_plugin_log(OTM_LOG_WARN, "rank %d: rank 0's code cannot be placed at its "
                       "addresses: %s; a host function pointer or virtual table then "
                       "faults in a region", p->node.rank, err);
        return;
    }
    otp_plugin_log(OTM_LOG_DEBUG, "rank %d: %u of rank 0's %u objects found here, %u at "
                   "rank 0's addresses already, %u ranges placed at them, %u taken here; "
                   "rank 0's stack range %s", p->node.rank, c.matched, c.objects, c.same,
                   c.placed, c.taken, c.stack_guard ? "guarded" : "not guarded");
    /* Every rank at the same addresses (address randomisation off, as
     * under setarch -R): nothing tells a host pointer from this rank's own. */
    if (c.matched && c.same == c.matched)
        otp_plugin_log(OTM_LOG_WARN, "rank %d has rank 0's very layout (address "
                       "randomisation is off in this job): a host pointer a region was "
                       "never given reaches this rank's own memory there, unseen",
                       p->node.rank);
}

void otp_addresses_share(otp_plugin *p)
{
    char err[256];
    uint8_t *desc = NULL;
    size_t len = 0;
    uint64_t n = 0;
    if (p->node.rank == 0) {
        otm_status st = otd_host_code_describe(&desc, &len, err, sizeof err);
        if (st && st != OTM_ERR_BAD_SIZE)
            otp_plugin_log(OTM_LOG_WARN, "the program's objects cannot be described to "
                           "the devices: %s", err);
        else if (st)
            otp_plugin_log(OTM_LOG_INFO, "%s", err);
        n = desc ? len : 0;
    }
    if (MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD) != MPI_SUCCESS ||
        n > OTD_HOST_CODE_MAX_BYTES)
        n = 0;      /* the same on every rank: none of them takes the bytes */
    if (p->node.rank != 0 && n && !(desc = otp_plugin_malloc((size_t)n))) {
        otp_plugin_log(OTM_LOG_ERROR, "rank %d: out of memory for rank 0's objects",
                       p->node.rank);
        otp_exit_abort_job();       /* the others wait in the broadcast */
    }
    if (n && MPI_Bcast(desc, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS &&
        p->node.rank != 0)
        place(p, desc, n);
    if (p->node.rank == 0)
        free(desc);
    else
        otp_plugin_free(desc);
}
