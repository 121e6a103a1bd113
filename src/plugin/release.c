/*
 * release.c - the teardown of the host's state, when the job has ended and
 * the process goes on (program.c, at the program's end; the fuzz harness
 * of the entry points, which ends its simulated job the same way).
 *
 * It sits above memory.c and images.c, which own what it frees, and below
 * the end that calls it, so no file below calls back up to it.
 */
#include "plugin.h"

void otp_host_release(otp_plugin *p)
{
    otp_memory_release(p);
    otp_usm_release(p);
    for (int d = 0; d < p->ndevices; d++)
        otp_images_release(&p->devices[d]);
    otp_plugin_free(p->devices);
    otp_plugin_free(p->cards);
    /* Later calls (libomptarget 16 still calls deinit_device) find no
     * device rather than freed memory. */
    p->devices = NULL;
    p->ndevices = 0;
    p->cards = NULL;
}
