/*
 * proxy_omp.h - what the OpenMP programs of tests/proxy share: the job's
 * device numbering with proxied devices (rank 1's CPU, rank 1's
 * OTM_ACCEL_DEVICES devices of the test plugin, rank 2's CPU, ...), and a
 * region's view of where a mapped object lies on its rank.
 */
#ifndef PROXY_OMP_H
#define PROXY_OMP_H

#include "omp_check.h"

/* The test plugin's devices per rank, as the plugin reads it. */
static inline int accel_devices(void)
{
    const char *s = getenv("OTM_ACCEL_DEVICES");
    return s && *s ? atoi(s) : 3;
}

/* 1 when each rank's CPU is a device (first of its rank's), 0 with
 * OMPTARGET_MPI_CPU_DEVICES=off. */
static inline int cpu_devices(void)
{
    const char *s = getenv("OMPTARGET_MPI_CPU_DEVICES");
    return !(s && !strcmp(s, "off"));
}

/* Devices per device rank: its CPU and the plugin's. */
static inline int per_rank(void)
{
    return cpu_devices() + accel_devices();
}

static inline int rank_of(int d)
{
    return d / per_rank() + 1;
}

/* The plugin's own number of device d, -1 for a rank's CPU. */
static inline int local_of(int d)
{
    return d % per_rank() - cpu_devices();
}

/* Stops the program unless it has 2 device ranks' worth of devices (the
 * driver's 3 ranks) and OTM_TEST_NDEVICES says the same. */
static inline int require_proxied_devices(void)
{
    int n = require_devices(1);
    CHECK(n == 2 * per_rank(), "%d devices, expected 2 ranks x (%d CPU + %d proxied) = %d", n,
          cpu_devices(), accel_devices(), 2 * per_rank());
    return n;
}

#pragma omp declare target
/* "perms name" of the mapping of this process holding p, from
 * /proc/self/maps (called in a region: the device rank's view). */
static inline void where_is(const void *p, char *out, int len)
{
    char line[512];
    FILE *f = fopen("/proc/self/maps", "r");
    snprintf(out, (size_t)len, "(not mapped)");
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        int at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &at) < 3)
            continue;
        if ((unsigned long)p < lo || (unsigned long)p >= hi)
            continue;
        line[strcspn(line, "\n")] = '\0';
        snprintf(out, (size_t)len, "%s %s", perms, at ? line + at : "");
        break;
    }
    if (f)
        fclose(f);
}
#pragma omp end declare target

/* A mapped object of device d lies where it must: a proxied device's in
 * the arena of the plugin's device, open while the region runs; a CPU
 * device's in its rank's own memory. */
static inline void check_where(int d, const char *what, const char *w)
{
    int l = local_of(d);
    if (l < 0) {
        CHECK(!strstr(w, "otmaccel"), "device %d (rank %d's CPU): %s lies in '%s'", d,
              rank_of(d), what, w);
        return;
    }
    char want[64];
    snprintf(want, sizeof want, "otmaccel-arena-%d", l);
    CHECK(strstr(w, want) && !strncmp(w, "rw", 2), "device %d (rank %d, otmaccel device %d): "
          "%s lies in '%s', expected the open arena %s", d, rank_of(d), l, what, w, want);
}

#endif
