/*
 * registry.c - the sorted array of the regions the host may touch.
 *
 * Invariants: items[0..count) is sorted by base, bases are distinct and
 * non-zero, base + size never overflows, and no two regions overlap. For
 * the overlap rule a zero-sized region claims the one address at its base:
 * two regions may then never share a base (remove finds them by base), and
 * no zero-sized region hides inside another one, where it could be
 * confused with the enclosing region.
 *
 * With these invariants the only region that can contain an address is the
 * last one starting at or below it, which is what makes bisection enough.
 */
#include "otm/registry.h"

#include <stdlib.h>
#include <string.h>

/* Room for the first few regions; the array then doubles. */
#define REGISTRY_MIN_CAP 16

static void *registry_alloc(const otm_registry *r, size_t size)
{
    return r->alloc ? r->alloc(r->ctx, size) : malloc(size);
}

static void registry_release(const otm_registry *r, void *p)
{
    if (!p)
        return;
    if (r->release)
        r->release(r->ctx, p);
    else
        free(p);
}

void otm_registry_init(otm_registry *r, void *(*alloc)(void *ctx, size_t size),
                       void (*release)(void *ctx, void *p), void *ctx)
{
    r->items = NULL;
    r->count = 0;
    r->cap = 0;
    r->alloc = alloc;
    r->release = release;
    r->ctx = ctx;
}

void otm_registry_fini(otm_registry *r)
{
    registry_release(r, r->items);
    r->items = NULL;
    r->count = 0;
    r->cap = 0;
}

/* Index of the first region whose base is >= base (count when none). */
static size_t lower_bound(const otm_registry *r, uintptr_t base)
{
    size_t lo = 0, hi = r->count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (r->items[mid].base < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The last address a region claims for the overlap rule (see the top). */
static uintptr_t claim_last(uintptr_t base, uint64_t size)
{
    return size == 0 ? base : base + (uintptr_t)(size - 1);
}

/* Whether [base, base + size) overlaps a region, given that `pos` is where
 * it would be inserted. Sorted, disjoint regions are also sorted by their
 * last address, so only the two neighbours can overlap. */
static int overlaps(const otm_registry *r, size_t pos, uintptr_t base,
                    uint64_t size)
{
    const otm_region *prev = pos > 0 ? &r->items[pos - 1] : NULL;
    const otm_region *next = pos < r->count ? &r->items[pos] : NULL;

    if (prev && claim_last(prev->base, prev->size) >= base)
        return 1;
    return next && next->base <= claim_last(base, size);
}

/* Doubles the array. A fresh block is taken rather than realloc'ed because
 * the instance's hooks have no realloc; on failure nothing changes. */
static otm_status grow(otm_registry *r)
{
    size_t cap = r->cap ? r->cap * 2 : REGISTRY_MIN_CAP;
    otm_region *items;

    if (cap > SIZE_MAX / sizeof *items)
        return OTM_ERR_NOMEM;
    items = registry_alloc(r, cap * sizeof *items);
    if (!items)
        return OTM_ERR_NOMEM;
    if (r->count)
        memcpy(items, r->items, r->count * sizeof *items);
    registry_release(r, r->items);
    r->items = items;
    r->cap = cap;
    return OTM_OK;
}

otm_status otm_registry_add(otm_registry *r, uintptr_t base, uint64_t size,
                            otm_region_kind kind)
{
    size_t pos;

    if (kind != OTM_REGION_ALLOC && kind != OTM_REGION_GLOBAL)
        return OTM_ERR_INVALID;
    if (base == 0 || size > (uint64_t)(UINTPTR_MAX - base))
        return OTM_ERR_INVALID;
    pos = lower_bound(r, base);
    if (overlaps(r, pos, base, size))
        return OTM_ERR_INVALID;
    if (r->count == r->cap && grow(r) != OTM_OK)
        return OTM_ERR_NOMEM;
    memmove(&r->items[pos + 1], &r->items[pos],
            (r->count - pos) * sizeof *r->items);
    r->items[pos].base = base;
    r->items[pos].size = size;
    r->items[pos].kind = kind;
    r->count++;
    return OTM_OK;
}

static otm_status remove_kind(otm_registry *r, uintptr_t base, uint64_t *size,
                              otm_region_kind kind)
{
    size_t pos = lower_bound(r, base);

    if (pos == r->count || r->items[pos].base != base ||
        r->items[pos].kind != kind)
        return OTM_ERR_BAD_POINTER;
    if (size)
        *size = r->items[pos].size;
    memmove(&r->items[pos], &r->items[pos + 1],
            (r->count - pos - 1) * sizeof *r->items);
    r->count--;
    return OTM_OK;
}

otm_status otm_registry_remove(otm_registry *r, uintptr_t base, uint64_t *size)
{
    return remove_kind(r, base, size, OTM_REGION_ALLOC);
}

otm_status otm_registry_remove_global(otm_registry *r, uintptr_t base)
{
    return remove_kind(r, base, NULL, OTM_REGION_GLOBAL);
}

/* The last region starting at or below `addr`, or NULL. */
static const otm_region *region_below(const otm_registry *r, uintptr_t addr)
{
    size_t pos = lower_bound(r, addr);

    if (pos < r->count && r->items[pos].base == addr)
        return &r->items[pos];
    return pos > 0 ? &r->items[pos - 1] : NULL;
}

otm_status otm_registry_check(const otm_registry *r, uintptr_t addr,
                              uint64_t len)
{
    const otm_region *reg;
    uintptr_t end;

    if (len > (uint64_t)(UINTPTR_MAX - addr))
        return OTM_ERR_BAD_SIZE;
    if (addr == 0 && len == 0)
        return OTM_OK;
    reg = region_below(r, addr);
    if (!reg)
        return OTM_ERR_BAD_POINTER;
    end = reg->base + (uintptr_t)reg->size;
    /* An empty access may sit at the end of a region; a non-empty one must
     * end there at the latest. addr >= reg->base holds by construction, and
     * addr + len cannot overflow after the test above. */
    if (len == 0 ? addr <= end : addr + (uintptr_t)len <= end)
        return OTM_OK;
    return OTM_ERR_BAD_POINTER;
}
