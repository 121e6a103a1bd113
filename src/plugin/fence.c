/*
 * fence.c - the end's fence, and the status the job ends with.
 *
 * A host thread passes the fence to touch the node, its queues and its
 * events; once the end is claimed (otm_host_end_claim, otm/node.h) the
 * fence refuses it, and when the end ends the process it parks the thread
 * until then. The status is recorded once, by the first region that ends
 * the program or the first device lost; the end reads it.
 */
#include <unistd.h>

#include "plugin.h"

/* ---- the end's fence (otm/node.h, "the end of the job") ---- */

/* The functions below call each other: only a thread's outermost entry
 * counts. */
static __thread int inside;

int otp_plugin_enter(otp_plugin *p)
{
    if (inside++)
        return 0;
    if (otm_host_enter(&p->node) == OTM_OK)
        return 0;
    inside = 0;
    otp_host_end_wait(p);
    return -1;
}

void otp_plugin_leave(otp_plugin *p)
{
    if (--inside == 0)
        otm_host_leave(&p->node);
}

int otp_plugin_inside(void)
{
    return inside;
}

/* ---- the status the job ends with ---- */

/* The first caller writes why, then the status: whoever sees the status
 * sees its why. */
void otp_host_end_with(otp_plugin *p, int status, const char *why)
{
    int none = 0;
    if (!__atomic_compare_exchange_n(&p->end_recorded, &none, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    p->end_why = why;
    __atomic_store_n(&p->end_status, status + 1, __ATOMIC_RELEASE);
}

/* The status recorded for the job's end (otp_host_end_with), or -1. */
int otp_host_end_status(otp_plugin *p)
{
    return __atomic_load_n(&p->end_status, __ATOMIC_ACQUIRE) - 1;
}

/* A thread that may not take part in an end that ends the process: it
 * waits for that, holding nothing. */
_Noreturn void otp_host_end_park(void)
{
    for (;;)
        pause();
}

void otp_host_end_wait(otp_plugin *p)
{
    if (otp_host_end_status(p) >= 0)
        otp_host_end_park();
}
