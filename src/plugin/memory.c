/*
 * memory.c - the host's side of data_alloc and data_delete: the pool of
 * freed device allocations, and host-pinned memory.
 *
 * An allocation is a round trip to the worker (ALLOC, DELETE); a program
 * that maps and unmaps the same sizes in a loop would pay two per
 * iteration. With OMPTARGET_MPI_POOL on, a deleted allocation up to
 * pool_max bytes stays on the device (up to 256 of them and 16 x pool_max
 * bytes per device) and the next data_alloc of exactly that size takes it
 * back without a message; deleting an address the pool already holds is
 * refused as a double free. Host-pinned memory
 * (TARGET_ALLOC_HOST) is plain host memory: MPI reads and writes it
 * without page locking. Every list here is under p->pool_lock, so any host
 * thread may call in.
 */
#include <stdint.h>
#include <stdlib.h>

#include "plugin.h"

/* Freed allocations kept per device at most, and their bytes at most, in
 * allocations of the largest size the pool keeps: beyond, a delete is
 * real, so the device memory the pool holds away from the program stays
 * bounded (256 MiB with the default OMPTARGET_MPI_POOL_MAX). */
#define POOL_ENTRIES_MAX 256
#define POOL_LARGEST_MAX 16

static void *alloc_pinned(otp_plugin *p, int64_t size)
{
    void *ptr = otp_plugin_malloc(size ? (size_t)size : 1);
    pthread_mutex_lock(&p->pool_lock);
    if (ptr && p->npinned == p->pinned_cap) {
        size_t cap = p->pinned_cap ? 2 * p->pinned_cap : 16;
        void **grown = otp_plugin_realloc(p->pinned, cap * sizeof *grown);
        if (grown) {
            p->pinned = grown;
            p->pinned_cap = cap;
        }
    }
    if (ptr && p->npinned < p->pinned_cap)
        p->pinned[p->npinned++] = ptr;
    else if (ptr)
        otp_plugin_free(ptr), ptr = NULL;
    pthread_mutex_unlock(&p->pool_lock);
    return ptr;
}

static int free_pinned(otp_plugin *p, void *ptr)
{
    int found = 0;
    pthread_mutex_lock(&p->pool_lock);
    for (size_t i = 0; i < p->npinned && !found; i++) {
        if (p->pinned[i] == ptr) {
            p->pinned[i] = p->pinned[--p->npinned];
            found = 1;
        }
    }
    pthread_mutex_unlock(&p->pool_lock);
    if (found)
        otp_plugin_free(ptr);
    return found;
}

/* Takes a pooled allocation of exactly `size` bytes, or returns 0. */
static uint64_t pool_take(otp_plugin *p, otp_device *d, uint64_t size)
{
    uint64_t addr = 0;
    pthread_mutex_lock(&p->pool_lock);
    for (otp_pool_entry **e = &d->pool; *e; e = &(*e)->next) {
        if ((*e)->size == size) {
            otp_pool_entry *hit = *e;
            *e = hit->next;
            addr = hit->addr;
            d->pool_bytes -= hit->size;
            otp_plugin_free(hit);
            break;
        }
    }
    pthread_mutex_unlock(&p->pool_lock);
    return addr;
}

static void live_add(otp_plugin *p, otp_device *d, uint64_t addr, uint64_t size)
{
    pthread_mutex_lock(&p->pool_lock);
    if (d->nlive == d->live_cap) {
        size_t cap = d->live_cap ? 2 * d->live_cap : 64;
        otp_live *grown = otp_plugin_realloc(d->live, cap * sizeof *grown);
        if (grown) {
            d->live = grown;
            d->live_cap = cap;
        }
    }
    if (d->nlive < d->live_cap)   /* else: not pooled, deleted for real */
        d->live[d->nlive++] = (otp_live){addr, size};
    pthread_mutex_unlock(&p->pool_lock);
}

/* Whether the pool may keep `size` more bytes of d's. */
static int pool_room(const otp_plugin *p, const otp_device *d, int entries, uint64_t size)
{
    return entries < POOL_ENTRIES_MAX &&
           d->pool_bytes + size <= POOL_LARGEST_MAX * p->settings.pool_max;
}

/* Keeps a freed allocation in the pool when it is known and there is room.
 * Returns 1 if it was kept, -1 if it is in the pool already (a double
 * free: deleting it on the device would leave the pool holding a dangling
 * address), 0 if it must be deleted on the device. */
static int pool_keep(otp_plugin *p, otp_device *d, uint64_t addr)
{
    int kept = 0, entries = 0;
    pthread_mutex_lock(&p->pool_lock);
    for (otp_pool_entry *e = d->pool; e; e = e->next, entries++)
        if (e->addr == addr)
            kept = -1;
    if (kept < 0)
        return pthread_mutex_unlock(&p->pool_lock), -1;
    for (size_t i = d->nlive; i-- > 0;) {
        if (d->live[i].addr != addr)
            continue;
        uint64_t size = d->live[i].size;
        otp_pool_entry *e =
            pool_room(p, d, entries, size) ? otp_plugin_malloc(sizeof *e) : NULL;
        if (e) {
            *e = (otp_pool_entry){addr, size, d->pool};
            d->pool = e;
            d->pool_bytes += size;
            kept = 1;
        }
        d->live[i] = d->live[--d->nlive];
        break;
    }
    pthread_mutex_unlock(&p->pool_lock);
    return kept;
}

void *otp_memory_alloc(otp_plugin *p, otp_device *d, int64_t size, int32_t kind)
{
    if (kind == TARGET_ALLOC_HOST) {
        void *ptr = alloc_pinned(p, size);
        if (!ptr)
            otp_plugin_log(OTM_LOG_ERROR, "data_alloc of %lld host-pinned bytes on device "
                           "%d failed: out of memory", (long long)size, d->id);
        return ptr;
    }
    int pooled = p->settings.pool && (uint64_t)size <= p->settings.pool_max;
    uint64_t addr = pooled ? pool_take(p, d, (uint64_t)size) : 0;
    if (addr) {
        live_add(p, d, addr, (uint64_t)size);
        return (void *)(uintptr_t)addr;
    }
    otm_op op = {.kind = OTM_KIND_ALLOC, .rank = d->rank, .unit = d->unit,
                 .size = (uint64_t)size, .arg = (uint64_t)kind, .result = &addr};
    if (otp_host_submit_op(p, &op, NULL, "data_alloc") != OFFLOAD_SUCCESS)
        return NULL;
    if (pooled)
        live_add(p, d, addr, (uint64_t)size);
    return (void *)(uintptr_t)addr;
}

int32_t otp_memory_delete(otp_plugin *p, otp_device *d, void *tgt)
{
    if (free_pinned(p, tgt))
        return OFFLOAD_SUCCESS;
    int pooled = pool_keep(p, d, (uint64_t)(uintptr_t)tgt);
    if (pooled < 0) {
        otp_plugin_log(OTM_LOG_ERROR, "data_delete on device %d: pointer already freed",
                       d->id);
        return OFFLOAD_FAIL;
    }
    if (pooled)
        return OFFLOAD_SUCCESS;
    otm_op op = {.kind = OTM_KIND_DELETE, .rank = d->rank, .unit = d->unit,
                 .addr = (uint64_t)(uintptr_t)tgt};
    return otp_host_submit_op(p, &op, NULL, "data_delete");
}

void otp_memory_release(otp_plugin *p)
{
    for (int i = 0; i < p->ndevices; i++) {
        otp_device *d = &p->devices[i];
        while (d->pool) {
            otp_pool_entry *e = d->pool;
            d->pool = e->next;
            otp_plugin_free(e);
        }
        otp_plugin_free(d->live);
    }
    for (size_t i = 0; i < p->npinned; i++)
        otp_plugin_free(p->pinned[i]);
    otp_plugin_free(p->pinned);
}
