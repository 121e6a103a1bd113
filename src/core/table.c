/*
 * table.c - a worker's loaded images and the kernels they list. Globals go
 * to the registry (otm/registry.h); kernel addresses live in a sorted
 * array, so EXECUTE checks one with a binary search.
 */
#include <string.h>

#include "internal.h"

int otm__table_has_kernel(const otm_node *node, uint64_t kernel)
{
    size_t lo = 0, hi = node->nkernels;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (node->kernels[mid] == kernel)
            return 1;
        if (node->kernels[mid] < kernel)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static otm_status add_kernel(otm_node *node, uint64_t k)
{
    if (otm__table_has_kernel(node, k))
        return OTM_OK;
    if (node->nkernels == node->kernels_cap) {
        size_t cap = node->kernels_cap ? 2 * node->kernels_cap : 16;
        uint64_t *p = otm__alloc(node, cap * sizeof *p);
        if (!p)
            return OTM_ERR_NOMEM;
        if (node->nkernels)
            memcpy(p, node->kernels, node->nkernels * sizeof *p);
        otm__free(node, node->kernels);
        node->kernels = p;
        node->kernels_cap = cap;
    }
    size_t i = node->nkernels;
    while (i > 0 && node->kernels[i - 1] > k) {
        node->kernels[i] = node->kernels[i - 1];
        i--;
    }
    node->kernels[i] = k;
    node->nkernels++;
    return OTM_OK;
}

static void drop_kernel(otm_node *node, uint64_t k)
{
    for (size_t i = 0; i < node->nkernels; i++) {
        if (node->kernels[i] != k)
            continue;
        memmove(&node->kernels[i], &node->kernels[i + 1],
                (node->nkernels - i - 1) * sizeof *node->kernels);
        node->nkernels--;
        return;
    }
}

static otm_status add_entries(otm_node *node, const otm_entry *e, uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
        otm_status st = OTM_OK;
        if (e[i].size == 0)
            st = add_kernel(node, e[i].addr);
        else if (otm_registry_check(&node->registry, (uintptr_t)e[i].addr,
                                    e[i].size) != OTM_OK)
            st = otm_registry_add(&node->registry, (uintptr_t)e[i].addr,
                                  e[i].size, OTM_REGION_GLOBAL);
        if (st)
            return st;
    }
    return OTM_OK;
}

otm_loaded_image *otm__table_image(otm_node *node, uint64_t id)
{
    for (size_t i = 0; i < node->nimages; i++)
        if (node->images[i].id == id)
            return &node->images[i];
    return NULL;
}

/* 1 when a loaded image other than `except` lists an entry at addr. */
static int entry_shared(const otm_node *node, const otm_loaded_image *except,
                        uint64_t addr)
{
    for (size_t i = 0; i < node->nimages; i++) {
        const otm_loaded_image *im = &node->images[i];
        for (uint64_t j = 0; im != except && j < im->count; j++)
            if (im->entries[j].addr == addr)
                return 1;
    }
    return 0;
}

otm_status otm__table_drop_image(otm_node *node, uint64_t id)
{
    otm_loaded_image *im = otm__table_image(node, id);
    if (!im)
        return OTM_ERR_NO_IMAGE;
    for (uint64_t j = 0; j < im->count; j++) {
        const otm_entry *e = &im->entries[j];
        if (entry_shared(node, im, e->addr))
            continue;
        if (e->size == 0)
            drop_kernel(node, e->addr);
        else
            otm_registry_remove_global(&node->registry, (uintptr_t)e->addr);
    }
    otm__free(node, im->entries);
    *im = node->images[--node->nimages];
    return OTM_OK;
}

otm_status otm__table_add_image(otm_node *node, uint64_t id, const otm_entry *e,
                                uint64_t count)
{
    if (node->nimages == node->images_cap) {
        size_t cap = node->images_cap ? 2 * node->images_cap : 8;
        otm_loaded_image *p = otm__alloc(node, cap * sizeof *p);
        if (!p)
            return OTM_ERR_NOMEM;
        if (node->nimages)
            memcpy(p, node->images, node->nimages * sizeof *p);
        otm__free(node, node->images);
        node->images = p;
        node->images_cap = cap;
    }
    otm_entry *copy = otm__alloc(node, (count ? count : 1) * sizeof *copy);
    if (!copy)
        return OTM_ERR_NOMEM;
    if (count)
        memcpy(copy, e, count * sizeof *copy);
    node->images[node->nimages++] = (otm_loaded_image){id, copy, count};
    otm_status st = add_entries(node, e, count);
    if (st)
        otm__table_drop_image(node, id);
    return st;
}

void otm__table_fini(otm_node *node)
{
    for (size_t i = 0; i < node->nimages; i++)
        otm__free(node, node->images[i].entries);
    otm__free(node, node->images);
    otm__free(node, node->kernels);
    /* A second otm_node_fini (the plugin's, then its owner's) finds nothing. */
    node->images = NULL;
    node->nimages = node->images_cap = 0;
    node->kernels = NULL;
    node->nkernels = node->kernels_cap = 0;
}
