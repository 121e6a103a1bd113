/*
 * devices.c - the job's devices, one table on rank 0: every worker rank's
 * CPU (its unit 0) and the devices of the plugins it proxies (its units 1
 * and up, units.c), numbered rank by rank, each rank's CPU first, then its
 * proxied devices in its order. It is made once, from the cards of the
 * start-up gather (map.c), and is what every entry point's device number,
 * every exchange and the device map read.
 */
#include <stdio.h>
#include <string.h>

#include "plugin.h"

int otp_devices_build(otp_plugin *p)
{
    int n = 0;
    for (int r = 1; r < p->node.size; r++)
        n += 1 + (int)p->cards[r].units;
    p->devices = otp_plugin_calloc((size_t)n, sizeof *p->devices);
    if (!p->devices)
        return -1;
    p->ndevices = n;
    int id = 0;
    for (int r = 1; r < p->node.size; r++) {
        const otp_rank_card *c = &p->cards[r];
        for (uint32_t u = 0; u <= c->units; u++, id++) {
            otp_device *d = &p->devices[id];
            d->id = id, d->rank = r, d->unit = (uint16_t)u;
            if (u == 0) {
                snprintf(d->plugin, sizeof d->plugin, "cpu");
                d->machines = OTP_MACHINE_X86_64;
                d->local = -1;
            } else {
                snprintf(d->plugin, sizeof d->plugin, "%.15s", c->unit[u - 1].plugin);
                d->machines = c->unit[u - 1].machines;
                d->local = c->unit[u - 1].local;
            }
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
    return unit < n ? &first[unit] : NULL;
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
