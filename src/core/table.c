/*
 * table.c - the images loaded on each of a worker's units and the kernels
 * they list. Globals go to the unit's registry (otm/registry.h); kernel
 * addresses live in a sorted array, so EXECUTE checks one with a binary
 * search.
 */
#include <string.h>

#include "internal.h"

int otm__table_has_kernel(const otm_unit *u, uint64_t kernel)
{
    size_t lo = 0, hi = u->nkernels;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u->kernels[mid] == kernel)
            return 1;
        if (u->kernels[mid] < kernel)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static otm_status add_kernel(otm_node *node, otm_unit *u, uint64_t k)
{
    if (otm__table_has_kernel(u, k))
        return OTM_OK;
    if (u->nkernels == u->kernels_cap) {
        size_t cap = u->kernels_cap ? 2 * u->kernels_cap : 16;
        uint64_t *p = otm__alloc(node, cap * sizeof *p);
        if (!p)
            return OTM_ERR_NOMEM;
        if (u->nkernels)
            memcpy(p, u->kernels, u->nkernels * sizeof *p);
        otm__free(node, u->kernels);
        u->kernels = p;
        u->kernels_cap = cap;
    }
    size_t i = u->nkernels;
    while (i > 0 && u->kernels[i - 1] > k) {
        u->kernels[i] = u->kernels[i - 1];
        i--;
    }
    u->kernels[i] = k;
    u->nkernels++;
    return OTM_OK;
}

static void drop_kernel(otm_unit *u, uint64_t k)
{
    for (size_t i = 0; i < u->nkernels; i++) {
        if (u->kernels[i] != k)
            continue;
        memmove(&u->kernels[i], &u->kernels[i + 1], (u->nkernels - i - 1) * sizeof *u->kernels);
        u->nkernels--;
        return;
    }
}

static otm_status add_entries(otm_node *node, otm_unit *u, const otm_entry *e,
                              uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
        otm_status st = OTM_OK;
        if (e[i].size == 0)
            st = add_kernel(node, u, e[i].addr);
        else if (otm_registry_check(&u->registry, (uintptr_t)e[i].addr, e[i].size) != OTM_OK)
            st = otm_registry_add(&u->registry, (uintptr_t)e[i].addr, e[i].size,
                                  OTM_REGION_GLOBAL);
        if (st)
            return st;
    }
    return OTM_OK;
}

otm_loaded_image *otm__table_image(otm_unit *u, uint64_t id)
{
    for (size_t i = 0; i < u->nimages; i++)
        if (u->images[i].id == id)
            return &u->images[i];
    return NULL;
}

/* 1 when a loaded image other than `except` lists an entry at addr. */
static int entry_shared(const otm_unit *u, const otm_loaded_image *except, uint64_t addr)
{
    for (size_t i = 0; i < u->nimages; i++) {
        const otm_loaded_image *im = &u->images[i];
        for (uint64_t j = 0; im != except && j < im->count; j++)
            if (im->entries[j].addr == addr)
                return 1;
    }
    return 0;
}

otm_status otm__table_drop_image(otm_node *node, otm_unit *u, uint64_t id)
{
    otm_loaded_image *im = otm__table_image(u, id);
    if (!im)
        return OTM_ERR_NO_IMAGE;
    for (uint64_t j = 0; j < im->count; j++) {
        const otm_entry *e = &im->entries[j];
        if (entry_shared(u, im, e->addr))
            continue;
        if (e->size == 0)
            drop_kernel(u, e->addr);
        else
            otm_registry_remove_global(&u->registry, (uintptr_t)e->addr);
    }
    otm__free(node, im->entries);
    *im = u->images[--u->nimages];
    return OTM_OK;
}

otm_status otm__table_add_image(otm_node *node, otm_unit *u, uint64_t id, const otm_entry *e,
                                uint64_t count)
{
    if (u->nimages == u->images_cap) {
        size_t cap = u->images_cap ? 2 * u->images_cap : 8;
        otm_loaded_image *p = otm__alloc(node, cap * sizeof *p);
        if (!p)
            return OTM_ERR_NOMEM;
        if (u->nimages)
            memcpy(p, u->images, u->nimages * sizeof *p);
        otm__free(node, u->images);
        u->images = p;
        u->images_cap = cap;
    }
    otm_entry *copy = otm__alloc(node, (count ? count : 1) * sizeof *copy);
    if (!copy)
        return OTM_ERR_NOMEM;
    if (count)
        memcpy(copy, e, count * sizeof *copy);
    u->images[u->nimages++] = (otm_loaded_image){id, copy, count};
    otm_status st = add_entries(node, u, e, count);
    if (st)
        otm__table_drop_image(node, u, id);
    return st;
}

void otm__table_fini(otm_node *node, otm_unit *u)
{
    for (size_t i = 0; i < u->nimages; i++)
        otm__free(node, u->images[i].entries);
    otm__free(node, u->images);
    otm__free(node, u->kernels);
    /* A second otm_node_fini (the plugin's, then its owner's) finds nothing. */
    u->images = NULL;
    u->nimages = u->images_cap = 0;
    u->kernels = NULL;
    u->nkernels = u->kernels_cap = 0;
}
