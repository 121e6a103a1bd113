/*
 * otm/registry.h - the worker's record of what device memory the host may
 * touch.
 *
 * Every address and size the host sends is checked here before the worker
 * reads or writes memory: a range is valid only when it lies entirely
 * inside one live allocation or one loaded global. Ranges are half-open
 * [base, base + size). Zero-sized allocations are recorded (they may be
 * deleted) but no non-empty range lies inside them. A zero-length access is
 * valid at any address inside or at the end of a region (it touches no
 * byte); NULL with length 0 is also valid.
 *
 * The registry is a sorted array searched by bisection: lookups are
 * O(log n), inserts and removals O(n), fine for the thousands of live
 * allocations a program keeps. It takes no locks.
 */
#ifndef OTM_REGISTRY_H
#define OTM_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "otm/status.h"

typedef enum otm_region_kind {
    OTM_REGION_ALLOC = 1,   /* made by an ALLOC event; DELETE may remove it */
    OTM_REGION_GLOBAL = 2,  /* a global of a loaded image; never deleted,
                             * dropped when its image is unloaded */
} otm_region_kind;

typedef struct otm_region {
    uintptr_t base;
    uint64_t size;
    otm_region_kind kind;
} otm_region;

typedef struct otm_registry {
    otm_region *items;      /* sorted by base, non-overlapping */
    size_t count;
    size_t cap;
    void *(*alloc)(void *ctx, size_t size);
    void (*release)(void *ctx, void *p);
    void *ctx;
} otm_registry;

/* Prepares an empty registry using the instance's allocator (NULL hooks mean
 * malloc/free). Never fails. */
void otm_registry_init(otm_registry *r, void *(*alloc)(void *ctx, size_t size),
                       void (*release)(void *ctx, void *p), void *ctx);
void otm_registry_fini(otm_registry *r);

/* Records a region. OTM_ERR_INVALID if it overlaps a recorded region, has a
 * base of 0, or base + size overflows; OTM_ERR_NOMEM if the array cannot
 * grow. On error the registry is unchanged. */
otm_status otm_registry_add(otm_registry *r, uintptr_t base, uint64_t size,
                            otm_region_kind kind);

/* Removes the ALLOC region starting exactly at `base` and returns its size
 * in *size (may be NULL). OTM_ERR_BAD_POINTER when no ALLOC region starts
 * there (globals cannot be removed). */
otm_status otm_registry_remove(otm_registry *r, uintptr_t base, uint64_t *size);

/* Removes the GLOBAL region starting exactly at `base`, when its image is
 * unloaded. OTM_ERR_BAD_POINTER when no GLOBAL region starts there. */
otm_status otm_registry_remove_global(otm_registry *r, uintptr_t base);

/* OTM_OK when [addr, addr + len) lies inside one recorded region (see the
 * rules for len 0 above); OTM_ERR_BAD_SIZE when addr + len overflows;
 * OTM_ERR_BAD_POINTER otherwise. */
otm_status otm_registry_check(const otm_registry *r, uintptr_t addr,
                              uint64_t len);

#endif
