/*
 * worker.c - a rank >= 1 as an OpenMP device.
 *
 * The worker reaches here from register_lib, inside the program's first
 * constructor: it serves the host until EXIT, then finalises MPI and leaves
 * with _exit, so the program's main never runs on a worker and no
 * destructor of libomptarget runs against a half-torn-down plugin.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "../shell/idle.h"
#include "plugin.h"

static otm_status load_image(void *ctx, uint64_t index, const otm_entry **out,
                             uint64_t *count)
{
    otm_plugin *p = ctx;
    char err[256];
    if (!p->desc || index >= (uint64_t)p->desc->NumDeviceImages)
        return OTM_ERR_NO_KERNEL;
    otm_loaded *l = &p->loaded[index];
    __tgt_device_image *img = &p->desc->DeviceImages[index];
    uint64_t n = (uint64_t)(img->EntriesEnd - img->EntriesBegin);
    if (!l->image) {
        size_t size = (size_t)((char *)img->ImageEnd - (char *)img->ImageStart);
        otm_status st = otm_image_load(img->ImageStart, size, &l->image, err, sizeof err);
        if (st)
            return otm_plugin_log(OTM_LOG_ERROR, "rank %d: image %llu: %s", p->node.rank,
                                  (unsigned long long)index, err), st;
        l->entries = calloc(n ? n : 1, sizeof *l->entries);
        if (!l->entries)
            return OTM_ERR_NOMEM;
        for (uint64_t i = 0; i < n; i++) {
            __tgt_offload_entry *e = &img->EntriesBegin[i];
            void *addr = otm_image_symbol(l->image, e->name);
            if (!addr)
                return otm_plugin_log(OTM_LOG_ERROR, "rank %d: entry %s not in the "
                                      "device image", p->node.rank, e->name),
                       OTM_ERR_NO_KERNEL;
            l->entries[i] = (otm_entry){(uint64_t)(uintptr_t)addr, e->size};
        }
        l->count = n;
    }
    *out = l->entries;
    *count = l->count;
    return OTM_OK;
}

static otm_status run_kernel(void *ctx, uint64_t kernel, void **args,
                             uint32_t nargs, uint64_t teams, uint64_t threads)
{
    (void)ctx, (void)teams, (void)threads;
    return otm_kernel_call((void *)(uintptr_t)kernel, args, nargs);
}

otm_device_ops otm_worker_device_ops(otm_plugin *p)
{
    otm_device_ops ops = {.load_image = load_image, .run_kernel = run_kernel, .ctx = p};
    return ops;
}

/* The handler threads sleep on a condition variable when there is no
 * kernel to run, and the gate wakes them when it queues one: a kernel
 * starts within a futex wake-up instead of a polling period, and idle
 * handlers cost nothing. */
typedef struct shell {
    otm_plugin *p;
    pthread_mutex_t m;
    pthread_cond_t work;
    atomic_int stop;
} shell;

static int kernels_waiting(otm_node *node)
{
    otm_lock(node);
    int waiting = 0;
    for (otm_event *ev = node->kern_head; ev && !waiting; ev = ev->next)
        waiting = !ev->claimed;
    otm_unlock(node);
    return waiting;
}

static void *handler_loop(void *arg)
{
    shell *sh = arg;
    otm_node *node = &sh->p->node;
    while (!atomic_load(&sh->stop)) {
        if (otm_handler_run_once(node))
            continue;
        pthread_mutex_lock(&sh->m);
        if (!atomic_load(&sh->stop) && !kernels_waiting(node)) {
            /* The timeout only bounds a missed wake-up. */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 10000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&sh->work, &sh->m, &ts);
        }
        pthread_mutex_unlock(&sh->m);
    }
    return NULL;
}

static void gate_loop(shell *sh)
{
    otm_plugin *p = sh->p;
    otm_idle idle;
    otm_idle_init(&idle, &p->settings);
    while (p->node.life != OTM_LIFE_DONE) {
        int moved = otm_gate_poll_once(&p->node);
        if (moved && kernels_waiting(&p->node)) {
            pthread_mutex_lock(&sh->m);
            pthread_cond_broadcast(&sh->work);
            pthread_mutex_unlock(&sh->m);
        }
        otm_idle_after(&idle, moved);
    }
}

void otm_worker_main(otm_plugin *p)
{
    pthread_t threads[64];
    int n = p->settings.handlers < 64 ? p->settings.handlers : 64;
    shell sh = {.p = p};
    pthread_mutex_init(&sh.m, NULL);
    pthread_cond_init(&sh.work, NULL);
    p->loaded = calloc((size_t)(p->desc ? p->desc->NumDeviceImages : 0) + 1,
                       sizeof *p->loaded);
    p->node.hooks.device = otm_worker_device_ops(p);
    for (int i = 0; i < n; i++)
        if (pthread_create(&threads[i], NULL, handler_loop, &sh))
            n = i;
    if (n == 0 || !p->loaded) {
        otm_plugin_log(OTM_LOG_ERROR, "rank %d: cannot start its threads", p->node.rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    gate_loop(&sh);
    atomic_store(&sh.stop, 1);
    pthread_mutex_lock(&sh.m);
    pthread_cond_broadcast(&sh.work);
    pthread_mutex_unlock(&sh.m);
    for (int i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
    uint64_t served = 0;
    for (int k = 0; k < OTM_KIND_END; k++)
        served += p->node.stats.events[k];
    otm_node_fini(&p->node);
    int rc = p->mpi_owned && MPI_Finalize() != MPI_SUCCESS;
    otm_node_release(&p->node);
    /* Tests read this line to know every worker really finished. */
    otm_plugin_log(OTM_LOG_INFO, "rank %d exited cleanly after %llu events",
                   p->node.rank, (unsigned long long)served);
    fflush(NULL);
    _exit(rc);
}
