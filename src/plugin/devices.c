/*
 * devices.c - the job's devices, one table on rank 0: every worker rank's
 * CPU (its unit 0) and the devices of the plugins it proxies (its units 1
 * and up, units.c), numbered rank by rank, each rank's CPU first, then its
 * proxied devices in its order (OMPTARGET_MPI_CPU_DEVICES: its CPU last,
 * or not at all). It is made once, from the cards of the
 * start-up gather (map.c), and is what every entry point's device number,
 * every exchange and the device map read.
 */
#include <stdio.h>
#include <string.h>

#include "plugin.h"

/* Rank r's units in the order OMPTARGET_MPI_CPU_DEVICES numbers them:
 * the k-th of its n (n: how many it offers). */
static int unit_at(const otp_plugin *p, int r, int k, uint32_t *unit)
{
    uint32_t proxied = p->cards[r].units;
    switch (p->settings.cpu_devices) {
    case OTM_CPU_LAST: *unit = (uint32_t)k < proxied ? (uint32_t)k + 1 : 0; break;
    case OTM_CPU_OFF: *unit = (uint32_t)k + 1; break;
    default: *unit = (uint32_t)k; break;
    }
    return (int)proxied + (p->settings.cpu_devices != OTM_CPU_OFF);
}

static void describe(otp_device *d, const otp_rank_card *c)
{
    if (d->unit == 0) {
        snprintf(d->plugin, sizeof d->plugin, "cpu");
        d->machines = OTP_MACHINE_X86_64;
        d->local = -1;
    } else {
        snprintf(d->plugin, sizeof d->plugin, "%.15s", c->unit[d->unit - 1].plugin);
        d->machines = c->unit[d->unit - 1].machines;
        d->local = c->unit[d->unit - 1].local;
    }
}

int otp_devices_build(otp_plugin *p)
{
    int n = 0;
    uint32_t u;
    for (int r = 1; r < p->node.size; r++)
        n += unit_at(p, r, 0, &u);
    p->devices = otp_plugin_calloc(n ? (size_t)n : 1, sizeof *p->devices);
    if (!p->devices)
        return -1;
    p->ndevices = n;
    int id = 0;
    for (int r = 1; r < p->node.size; r++) {
        for (int k = 0, count = unit_at(p, r, 0, &u); k < count; k++, id++) {
            otp_device *d = &p->devices[id];
            unit_at(p, r, k, &u);
            d->id = id, d->rank = r, d->unit = (uint16_t)u;
            describe(d, &p->cards[r]);
        }
    }
    return 0;
}

int otp_devices_of_rank(otp_plugin *p, int rank, otp_device **first)
{
    for (int i = 0; i < p->ndevices; i++) {
        if (p->devices[i].rank != rank)
            continue;
        int n = 0;
        while (i + n < p->ndevices && p->devices[i + n].rank == rank)
            n++;
        *first = &p->devices[i];
        return n;
    }
    *first = NULL;
    return 0;
}

otp_device *otp_devices_at(otp_plugin *p, int rank, uint16_t unit)
{
    otp_device *first;
    int n = otp_devices_of_rank(p, rank, &first);
    for (int i = 0; i < n; i++)
        if (first[i].unit == unit)
            return &first[i];
    return NULL;
}

const char *otp_devices_name(const otp_device *d, char *buf, size_t len)
{
    if (d->unit == 0)
        snprintf(buf, len, "device %d (rank %d)", d->id, d->rank);
    else
        snprintf(buf, len, "device %d (rank %d, %s device %d)", d->id, d->rank, d->plugin,
                 d->local);
    return buf;
}

const char *otp_devices_line_name(const otp_device *d, int id, char *buf, size_t len)
{
    if (d && d->unit)
        return otp_devices_name(d, buf, len);
    if (d || id >= 0)
        snprintf(buf, len, "device %d", d ? d->id : id);
    else
        snprintf(buf, len, "device ?");
    return buf;
}
