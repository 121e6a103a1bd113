/*
 * node.c - a rank's instance: set-up (communicators, tags, the sink) and
 * tear-down of everything it holds.
 */
#include <string.h>

#include "internal.h"

/* Handles are ints in MPICH and pointers in Open MPI, so they are only
 * assigned and compared with ==, never with numbers. A zeroed node holds
 * the handle 0 (NULL in Open MPI), which names no object in either ABI
 * (MPICH encodes a kind in the top bits of every valid handle), so it is
 * treated as the null handle: otm_node_fini is safe on a zeroed node. */
static int comm_held(MPI_Comm c)
{
    return c != MPI_COMM_NULL && c != (MPI_Comm)0;
}

static int request_held(MPI_Request r)
{
    return r != MPI_REQUEST_NULL && r != (MPI_Request)0;
}

static otm_status dup_comm(MPI_Comm *out)
{
    if (MPI_Comm_dup(MPI_COMM_WORLD, out) != MPI_SUCCESS) {
        *out = MPI_COMM_NULL;
        return OTM_ERR_MPI;
    }
    if (MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN) != MPI_SUCCESS)
        return OTM_ERR_MPI;
    return OTM_OK;
}

static otm_status query_world(otm_node *node)
{
    int *ub = NULL, flag = 0;
    if (MPI_Comm_rank(MPI_COMM_WORLD, &node->rank) != MPI_SUCCESS ||
        MPI_Comm_size(MPI_COMM_WORLD, &node->size) != MPI_SUCCESS ||
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag) != MPI_SUCCESS)
        return OTM_ERR_MPI;
    /* MPI promises at least 32767. */
    node->tag_ub = flag && ub ? *ub : 32767;
    return node->tag_ub > OTM_TAG_FIRST ? OTM_OK : OTM_ERR_MPI;
}

static otm_status make_comms(otm_node *node)
{
    node->control = node->pages = MPI_COMM_NULL;
    node->comms = otm__alloc(node, sizeof *node->comms * (size_t)node->cfg.ncomms);
    if (!node->comms)
        return OTM_ERR_NOMEM;
    for (int i = 0; i < node->cfg.ncomms; i++)
        node->comms[i] = MPI_COMM_NULL;
    otm_status st = dup_comm(&node->control);
    for (int i = 0; i < node->cfg.ncomms && !st; i++)
        st = dup_comm(&node->comms[i]);
    if (st == OTM_OK)
        st = dup_comm(&node->pages);
    return st;
}

static otm_status make_tags(otm_node *node)
{
    int last = node->tag_ub;
    if (node->cfg.tag_space < last - OTM_TAG_FIRST + 1)
        last = OTM_TAG_FIRST + node->cfg.tag_space - 1;
    node->tags = otm__alloc(node, sizeof *node->tags * (size_t)node->cfg.ncomms);
    if (!node->tags)
        return OTM_ERR_NOMEM;
    memset(node->tags, 0, sizeof *node->tags * (size_t)node->cfg.ncomms);
    for (int i = 0; i < node->cfg.ncomms; i++) {
        otm_status st = otm_tags_init(&node->tags[i], OTM_TAG_FIRST, last,
                                      node->hooks.alloc, node->hooks.ctx);
        if (st)
            return st;
    }
    return OTM_OK;
}

/* The worker's units, each with an empty registry (the host makes them
 * too: nothing happens on them). */
static otm_status make_units(otm_node *node)
{
    uint16_t n = node->hooks.device.units ? node->hooks.device.units : 1;
    node->units = otm__alloc(node, n * sizeof *node->units);
    if (!node->units)
        return OTM_ERR_NOMEM;
    memset(node->units, 0, n * sizeof *node->units);
    node->nunits = n;
    for (uint16_t i = 0; i < n; i++)
        otm_registry_init(&node->units[i].registry, node->hooks.alloc, node->hooks.release,
                          node->hooks.ctx);
    return OTM_OK;
}

otm_status otm_node_init(otm_node *node, const otm_config *cfg,
                         const otm_hooks *hooks)
{
    memset(node, 0, sizeof *node);
    if (otm_config_check(cfg))
        return OTM_ERR_INVALID;
    node->cfg = *cfg;
    node->hooks = *hooks;
    node->gate_req = MPI_REQUEST_NULL;
    otm_status st = make_units(node);
    if (st == OTM_OK)
        st = query_world(node);
    if (st == OTM_OK)
        st = make_comms(node);
    if (st == OTM_OK && node->rank == 0)
        st = make_tags(node);
    if (st == OTM_OK && node->rank == 0) {
        node->lost = otm__alloc(node, (size_t)node->size);
        st = node->lost ? OTM_OK : OTM_ERR_NOMEM;
        if (node->lost)
            memset(node->lost, 0, (size_t)node->size);
    }
    /* The host discards too: the output of a region it has no memory for. */
    if (st == OTM_OK) {
        node->sink = otm__alloc(node, OTM_SCRATCH_MAX);
        st = node->sink ? OTM_OK : OTM_ERR_NOMEM;
    }
    if (st) {
        otm_node_fini(node);
        memset(node, 0, sizeof *node);
    }
    return st;
}

static void free_comms(otm_node *node)
{
    if (node->comms) {
        for (int i = 0; i < node->cfg.ncomms; i++)
            if (comm_held(node->comms[i]))
                MPI_Comm_free(&node->comms[i]);
        otm__free(node, node->comms);
        node->comms = NULL;
    }
    if (comm_held(node->control))
        MPI_Comm_free(&node->control);
    if (comm_held(node->pages))
        MPI_Comm_free(&node->pages);
}

/* Unit u's allocations: the worker's own memory for unit 0, the device's
 * through its hook for the others. */
static void free_unit(otm_node *node, uint16_t u)
{
    const otm_device_ops *d = &node->hooks.device;
    otm_registry *r = &node->units[u].registry;
    for (size_t i = 0; i < r->count; i++) {
        if (r->items[i].kind != OTM_REGION_ALLOC)
            continue;
        if (u == 0)
            otm__free(node, (void *)r->items[i].base);
        else if (d->mem_free)
            d->mem_free(d->ctx, u, (uint64_t)r->items[i].base);
    }
    otm_registry_fini(r);
    otm__table_fini(node, &node->units[u]);
}

otm_status otm_node_attach_device(otm_node *node, const otm_device_ops *ops)
{
    for (uint16_t u = 0; u < node->nunits; u++)
        if (node->units[u].registry.count || node->units[u].nimages)
            return OTM_ERR_BUSY;
    for (uint16_t u = 0; u < node->nunits; u++)
        free_unit(node, u);
    otm__free(node, node->units);
    node->units = NULL;
    node->nunits = 0;
    node->hooks.device = *ops;
    return make_units(node);
}

static void free_worker(otm_node *node)
{
    for (uint16_t u = 0; u < node->nunits; u++)
        free_unit(node, u);
    otm__free(node, node->units);
    node->units = NULL;
    node->nunits = 0;
    otm__free(node, node->sink);
    if (request_held(node->gate_req))
        MPI_Request_free(&node->gate_req);
    otm__free(node, node->gate_buf);
    /* A second otm_node_fini (the plugin's, then its owner's) finds nothing. */
    node->sink = node->gate_buf = NULL;
}

void otm_node_fini(otm_node *node)
{
    while (node->all) {
        otm_event *ev = node->all;
        otm__slots_abandon(ev);
        ev->target = NULL;   /* freed by this loop on its own */
        otm__event_free(node, ev);
    }
    free_worker(node);
    if (node->tags) {
        for (int i = 0; i < node->cfg.ncomms; i++)
            otm_tags_fini(&node->tags[i], node->hooks.release, node->hooks.ctx);
        otm__free(node, node->tags);
        node->tags = NULL;
    }
    otm__free(node, node->exit_events);
    node->exit_events = NULL;
    otm__free(node, node->lost);
    node->lost = NULL;
    free_comms(node);
}

void otm_node_release(otm_node *node)
{
    otm__event_bury(node);
}
