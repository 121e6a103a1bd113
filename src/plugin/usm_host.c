/*
 * usm_host.c - unified shared memory, rank 0's end: the page server on a
 * thread of its own (otm/page.h's server over otm/pager.h's host end),
 * started when the program requires unified shared memory or the setting
 * is on, and what refuses it.
 */
#include <stdio.h>
#include <sys/personality.h>

#include "../shell/idle.h"
#include "usm_internal.h"

static otm_status host_read(void *ctx, uint64_t addr, void *dst, uint64_t len)
{
    (void)ctx;
    return otd_host_read(addr, dst, len);
}

static otm_status host_write(void *ctx, uint64_t addr, const void *src, uint64_t len)
{
    (void)ctx;
    return otd_host_write(addr, src, len);
}

static otm_status host_ranges(void *ctx, uint64_t *dst, uint64_t cap, uint64_t *count)
{
    size_t n = 0;
    (void)ctx;
    otm_status st = otd_host_ranges((otd_range *)(void *)dst, (size_t)cap, &n);
    *count = n;
    return st;
}

/* Whether a host thread is in the plugin (waiting for a region or a
 * transfer), when a device's ask may come at any moment: the server then
 * yields between polls and never naps, since an ask that finds it napping
 * waits out the rest of the nap (the first ask of a region waited 0.3 to
 * 0.6 ms so on this project's 2-core machine, against 0.01 to 0.1 ms). */
static int host_waits(otp_plugin *p)
{
    return __atomic_load_n(&p->node.inside, __ATOMIC_RELAXED) > 0;
}

static void *serve(void *arg)
{
    otp_plugin *p = arg;
    otp_usm *u = p->usm;
    const otm_page_host_ops ops = {host_read, host_write, host_ranges, p};
    ots_idle idle;
    ots_idle_init(&idle, &p->settings);
    while (!atomic_load(&u->stop)) {
        int moved = otm_page_serve(&p->node, &u->server, &ops);
        ots_idle_after(&idle, moved, u->server.state != 0 || host_waits(p));
    }
    return NULL;
}

/* Whether the ranks can hold each other's addresses: not when address
 * randomisation is off here (omptarget-mpirun's default, for the host's
 * function pointers), since every rank then has rank 0's very layout. */
static const char *layout_refusal(void)
{
    int persona = personality(0xffffffff);
    if (persona != -1 && (persona & ADDR_NO_RANDOMIZE))
        return "address randomisation is off in this job, so every rank has "
               "rank 0's layout and cannot hold rank 0's pages at their addresses "
               "(omptarget-mpirun leaves it on for such a program, and under "
               "OMPTARGET_MPI_USM=on)";
    return NULL;
}

/* Whether this system gives userfaultfd to this process: the devices'
 * pager needs it, and a device rank is most often this rank's like (the
 * same kernel, user and limits); a device that differs says so at each
 * region. */
static otm_status pager_refusal(char *why, size_t len)
{
    otd_pager *probe = NULL;
    otm_status st = otd_pager_open(&probe, why, len);
    otd_pager_close(probe);
    return st;
}

otm_status otp_usm_host_start(otp_plugin *p, char *why, size_t len)
{
    const char *layout = layout_refusal();
    if (layout)
        return snprintf(why, len, "%s", layout), OTM_ERR_INVALID;
    if (p->usm)
        return OTM_OK;
    otm_status st = pager_refusal(why, len);
    if (st)
        return st;
    otp_usm *u = otp_usm_new();
    if (!u)
        return snprintf(why, len, "out of memory"), OTM_ERR_NOMEM;
    p->usm = u;
    if (pthread_create(&u->thread, NULL, serve, p)) {
        p->usm = NULL;
        otp_plugin_free(u);
        return snprintf(why, len, "no thread for the page server"), OTM_ERR_NOMEM;
    }
    u->thread_on = 1;
    __atomic_store_n(&p->usm_on, 1, __ATOMIC_RELEASE);
    return OTM_OK;
}

void otp_usm_host_stop(otp_plugin *p)
{
    otp_usm *u = p->usm;
    if (!u)
        return;
    otp_usm_join(u);
    otm_page_server_fini(&p->node, &u->server);
}
