/*
 * rtl.c - the __tgt_rtl_* entry points libomptarget calls, and the host's
 * record of the images loaded on each device (the tables load_binary hands
 * out, dropped at unregister_lib).
 *
 * Each one checks its arguments (they come from libomptarget and from the
 * user's program through it), turns the call into an operation of the core
 * (host_ops.c runs it; memory.c serves data_alloc and data_delete), and reports
 * failure as OFFLOAD_FAIL with a line on stderr saying why. The job starts
 * with the first call and ends with the last unregister_lib, or with
 * deinit_plugin when nothing was registered (program.c's otp_host_end).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "otm/wire.h"
#include "plugin.h"

static int32_t fail(const char *fmt, const char *what, int32_t id)
{
    otp_plugin_log(OTM_LOG_ERROR, fmt, what, (int)id);
    return OFFLOAD_FAIL;
}

/* The device, or NULL (logged) for a bad id, a process without devices or
 * a device that failed. */
static otp_device *device(int32_t id)
{
    otp_plugin *p = otp_plugin_host();
    if (p && p->program_finalized) {
        otp_plugin_log(OTM_LOG_ERROR, "device %d: the program's MPI_Finalize ended the "
                       "devices; no target construct can run after it", (int)id);
        return NULL;
    }
    if (!p || id < 0 || id >= p->ndevices) {
        otp_plugin_log(OTM_LOG_ERROR, "invalid device id %d", (int)id);
        return NULL;
    }
    otp_device *d = &p->devices[id];
    if (__atomic_load_n(&d->failed, __ATOMIC_ACQUIRE)) {
        char dev[96];
        otp_plugin_log(OTM_LOG_ERROR, "%s failed earlier: %s",
                       otp_devices_name(d, dev, sizeof dev), d->failure);
        otp_host_end_if_faulted(p);
        return NULL;
    }
    return d;
}

/* 1 when the pages of [start, end) at both ends are mapped: mincore fails
 * with ENOMEM on a page that is not. */
static int range_mapped(const void *start, const void *end)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)start;
    uintptr_t b = (uintptr_t)end;
    unsigned char v;
    if (!start || b <= a)
        return 0;
    return mincore((void *)(a & ~(page - 1)), 1, &v) == 0 &&
           mincore((void *)((b - 1) & ~(page - 1)), 1, &v) == 0;
}

/* libomptarget 15 asks again about every image it was ever given, also
 * that of a library dlclose()d since, whose pages (the image and its
 * descriptor) are gone: such an image is not valid, rather than a fault in
 * reading it. */
/* The machines of the images the job's devices take: its ranks' CPUs',
 * and those of the plugins they proxy. */
static uint32_t job_machines(void)
{
    otp_plugin *p = otp_plugin_get();
    uint32_t bits = 0;
    for (int i = 0; p && p->role == OTM_ROLE_HOST && i < p->ndevices; i++)
        bits |= p->devices[i].machines;
    return bits;
}

static const char *machine_name(uint32_t m)
{
    return m == OTP_MACHINE_X86_64 ? "x86_64" : m == OTP_MACHINE_CUDA ? "nvptx" : "amdgpu";
}

/* Host: each image of desc that no device of the job takes is said once,
 * at INFO (a plugin of rank 0's own may still take it); the device asked
 * to run it says the rest at load_binary. */
static void say_untaken_images(const __tgt_bin_desc *desc)
{
    uint32_t job = job_machines();
    for (int k = 0; k < desc->NumDeviceImages; k++) {
        uint32_t m = otp_image_machine(&desc->DeviceImages[k]);
        if (m && !(m & job))
            otp_plugin_log(OTM_LOG_INFO, "register_lib: the program's %s image runs on no "
                           "device of this job (no device rank's CPU or proxied plugin "
                           "takes it: OMPTARGET_MPI_REMOTE_PLUGINS, _CPU_DEVICES)",
                           machine_name(m));
    }
}

/* An x86_64 image this rank's CPU devices load (checked in full), or an
 * image of a machine a proxied device takes (its plugin checks the rest
 * where it is loaded). */
int32_t __tgt_rtl_is_valid_binary(__tgt_device_image *image)
{
    char err[160];
    const void *elf;
    size_t size;
    if (!range_mapped(image, image + 1) || !range_mapped(image->ImageStart, image->ImageEnd) ||
        otp_image_elf(image, &elf, &size, err, sizeof err) != OTM_OK)
        return 0;
    if (otd_image_check(elf, size, err, sizeof err) == OTM_OK)
        return 1;
    uint32_t m = otp_image_machine(image);
    return m != OTP_MACHINE_X86_64 && (m & job_machines()) != 0;
}

int32_t __tgt_rtl_number_of_devices(void)
{
    otp_plugin *p = otp_plugin_get();
    if (!p)
        return 0;
    /* A worker reports one device so that libomptarget calls register_lib,
     * where the worker starts serving. */
    return p->role == OTM_ROLE_HOST ? p->ndevices : 1;
}

/* A worker serves once the program's start-up registered every descriptor
 * it has (the executable's comes last: its constructors run after those of
 * the libraries), from inside that constructor, so the program's main
 * never runs on a worker. A library the program dlopens later is not
 * registered there; the host sends its images' bytes. */
int32_t __tgt_rtl_register_lib(__tgt_bin_desc *desc)
{
    otp_plugin *p = otp_plugin_get();
    if (!p || !desc)
        return OFFLOAD_SUCCESS;
    int n = otp_desc_add(p, desc);
    otp_plugin_log(OTM_LOG_DEBUG, "register_lib %p: %d registered", (void *)desc, n);
    if (n < 0)
        otp_plugin_log(OTM_LOG_ERROR, "register_lib: out of memory");
    if (p->role != OTM_ROLE_WORKER) {
        if (n >= 0 && p->role == OTM_ROLE_HOST)
            say_untaken_images(desc);
        return n < 0 ? OFFLOAD_FAIL : OFFLOAD_SUCCESS;
    }
    if (p->expected_registrations == 0)
        p->expected_registrations = otp_startup_registrations();
    if (n < 0 || n >= p->expected_registrations)
        otp_worker_main(p);
    return OFFLOAD_SUCCESS;
}

/* The host's end of the job (otp_host_end). It comes with the last
 * unregister_lib (libomptarget 14 and 16), or with deinit_plugin when
 * nothing was registered; once. */
static int32_t stop_host(void)
{
    otp_plugin *p = otp_plugin_host();
    if (p)
        otp_host_end(p);
    return OFFLOAD_SUCCESS;
}

static size_t registered(otp_plugin *p)
{
    pthread_mutex_lock(&p->images_lock);
    size_t n = p->ndescs;
    pthread_mutex_unlock(&p->images_lock);
    return n;
}

/* Releases the images of `desc` on every device (a library dlclosed), and
 * ends the job when no descriptor is left: the program is ending. That is
 * also so for a descriptor whose register_lib failed (out of memory) when
 * no other is registered: it may be the program's only one. */
int32_t __tgt_rtl_unregister_lib(__tgt_bin_desc *desc)
{
    otp_plugin *p = otp_plugin_host();
    if (!p)
        return OFFLOAD_SUCCESS;
    int left = otp_desc_remove(p, desc);
    otp_plugin_log(OTM_LOG_DEBUG, "unregister_lib %p: %d left", (void *)desc, left);
    if (left == 0 || (left < 0 && registered(p) == 0))
        return stop_host();     /* the workers drop everything at EXIT */
    if (p->node.life != OTM_LIFE_DONE)
        for (int i = 0; i < p->ndevices; i++)
            otp_images_unload(p, &p->devices[i], desc);
    return OFFLOAD_SUCCESS;
}

/* LLVM 15 and later: the first call after dlopen. It starts the instance
 * (MPI, the settings), as number_of_devices would; a process without an
 * MPI job still succeeds here and then reports 0 devices, because a
 * failure would only make libomptarget retry the same file under its
 * other name. None of these versions needs the retrieve rule (below), so
 * it turns it off: it stays for libomptarget 14 alone, which never calls
 * init_plugin. */
int32_t __tgt_rtl_init_plugin(void)
{
    otp_plugin *p = otp_plugin_get();
    if (p)
        __atomic_store_n(&p->retrieve_waits, 0, __ATOMIC_RELAXED);
    return OFFLOAD_SUCCESS;
}

/* LLVM 16: called at the end of every unregistration (a dlclose too),
 * just before unregister_lib, which ends the job with the last one. Only
 * a program that registered nothing ends here. */
int32_t __tgt_rtl_deinit_plugin(void)
{
    otp_plugin *p = otp_plugin_host();
    if (!p)
        return OFFLOAD_SUCCESS;
    return registered(p) ? OFFLOAD_SUCCESS : stop_host();
}

/* LLVM 16: the device is no longer used. Its memory lives until the job
 * ends (the workers free everything at EXIT); after the end of the job
 * there is nothing left to do. */
int32_t __tgt_rtl_deinit_device(int32_t id)
{
    otp_plugin *p = otp_plugin_host();
    if (p && p->node.life == OTM_LIFE_DONE)
        return OFFLOAD_SUCCESS;
    otp_device *d = device(id);
    if (!d)
        return OFFLOAD_FAIL;
    d->initialized = 0;
    return OFFLOAD_SUCCESS;
}

int64_t __tgt_rtl_init_requires(int64_t flags)
{
    otp_plugin *p = otp_plugin_host();
    char why[512] = "OMPTARGET_MPI_USM is off";
    if (p && (flags & OMP_REQ_UNIFIED_SHARED_MEMORY) &&
        (p->settings.usm == OTM_USM_OFF || otp_usm_host_start(p, why, sizeof why))) {
        otp_plugin_log(OTM_LOG_ERROR, "the program requires unified shared memory, "
                       "which cannot be served: %s; its devices are disabled", why);
        p->usm_requested = 1;
    }
    return flags;
}

int32_t __tgt_rtl_init_device(int32_t id)
{
    otp_plugin *p = otp_plugin_get();
    /* The program's main runs on a worker only when a registration the
     * worker waited for never came: serve from here rather than run it. */
    if (p && p->role == OTM_ROLE_WORKER) {
        otp_plugin_log(OTM_LOG_WARN, "rank %d: the program reached a target "
                       "construct on a device rank; it serves from here",
                       p->node.rank);
        otp_worker_main(p);
    }
    otp_device *d = device(id);
    if (!d)
        return OFFLOAD_FAIL;
    if (otp_plugin_host()->usm_requested)
        return fail("%s: device %d not started", "unified shared memory", id);
    d->initialized = 1;
    return OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_supports_empty_images(void)
{
    return 0;
}

/* ---- images ---- */

__tgt_target_table *__tgt_rtl_load_binary(int32_t id, __tgt_device_image *image)
{
    return otp_images_load(otp_plugin_host(), device(id), id, image);
}

/* ---- memory (memory.c) ---- */

void *__tgt_rtl_data_alloc(int32_t id, int64_t size, void *host, int32_t kind)
{
    (void)host;
    otp_device *d = device(id);
    if (!d)
        return NULL;            /* device() said why */
    if (size < 0)
        return fail("%s on device %d: bad size", "data_alloc", id), NULL;
    if (kind == TARGET_ALLOC_SHARED)
        return fail("%s on device %d: shared memory cannot span processes",
                    "data_alloc", id), NULL;
    return otp_memory_alloc(otp_plugin_host(), d, size, kind);
}

int32_t __tgt_rtl_data_delete(int32_t id, void *tgt)
{
    /* After the program's MPI_Finalize the devices are gone, their memory
     * with them: nothing is left to free. (libomptarget 19 frees what its
     * memory manager kept at the program's end, after that MPI_Finalize.) */
    otp_plugin *p = otp_plugin_host();
    if (p && p->program_finalized)
        return OFFLOAD_SUCCESS;
    otp_device *d = device(id);
    if (!d)
        return OFFLOAD_FAIL;
    if (!tgt)
        return fail("%s on device %d: NULL pointer", "data_delete", id);
    return otp_memory_delete(otp_plugin_host(), d, tgt);
}

/* ---- transfers ---- */

static int32_t transfer(int32_t id, otm_kind kind, void *tgt, void *host,
                        int64_t size, __tgt_async_info *ai, const char *what)
{
    otp_device *d = device(id);
    if (!d)
        return OFFLOAD_FAIL;
    if (size < 0 || (size > 0 && (!tgt || !host)))
        return fail("%s on device %d: bad pointer or size", what, id);
    if (size == 0)
        return OFFLOAD_SUCCESS;
    otm_op op = {.kind = kind, .rank = d->rank, .unit = d->unit,
                 .addr = (uint64_t)(uintptr_t)tgt, .host = host, .size = (uint64_t)size};
    otp_plugin *p = otp_plugin_host();
    if (kind == OTM_KIND_RETRIEVE && __atomic_load_n(&p->retrieve_waits, __ATOMIC_RELAXED))
        return otp_host_submit_op_ended(p, &op, ai, what);
    return otp_host_submit_op(p, &op, ai, what);
}

int32_t __tgt_rtl_data_submit(int32_t id, void *tgt, void *host, int64_t size)
{
    return transfer(id, OTM_KIND_SUBMIT, tgt, host, size, NULL, "data_submit");
}

int32_t __tgt_rtl_data_submit_async(int32_t id, void *tgt, void *host, int64_t size,
                                    __tgt_async_info *ai)
{
    if (!ai)
        return fail("%s on device %d: no async info", "data_submit_async", id);
    return transfer(id, OTM_KIND_SUBMIT, tgt, host, size, ai, "data_submit");
}

int32_t __tgt_rtl_data_retrieve(int32_t id, void *host, void *tgt, int64_t size)
{
    return transfer(id, OTM_KIND_RETRIEVE, tgt, host, size, NULL, "data_retrieve");
}

/* The retrieve rule, for libomptarget 14 (retrieve_waits): host memory a
 * retrieve writes holds the device's bytes when data_retrieve_async
 * returns, as with the in-process plugin. The queue's earlier operations
 * run first (it is in order); its later ones stay asynchronous.
 * libomptarget 14 relies on this: right after issuing the retrieve of a
 * struct with pointer members (target update from, the end of target
 * data, exit data), it writes the host's own pointers back into the struct
 * (the shadow-pointer restore) without synchronizing, so a retrieve that
 * landed later would put device addresses there. 15 synchronizes first,
 * 16 and later restore in a post-processing step after the queue ended.
 * There the rule would only cost: the thread that issued the retrieve
 * would wait for the kernel ahead of it, so a nowait region would hold a
 * hidden helper thread for its whole run instead of being polled
 * (query_async) by whichever helper is free (DESIGN.md §6). */
int32_t __tgt_rtl_data_retrieve_async(int32_t id, void *host, void *tgt, int64_t size,
                                      __tgt_async_info *ai)
{
    if (!ai)
        return fail("%s on device %d: no async info", "data_retrieve_async", id);
    return transfer(id, OTM_KIND_RETRIEVE, tgt, host, size, ai, "data_retrieve");
}

int32_t __tgt_rtl_is_data_exchangable(int32_t src, int32_t dst)
{
    otp_plugin *p = otp_plugin_host();
    return p && src >= 0 && src < p->ndevices && dst >= 0 && dst < p->ndevices;
}

int32_t __tgt_rtl_data_exchange_async(int32_t src, void *sptr, int32_t dst, void *dptr,
                                      int64_t size, __tgt_async_info *ai)
{
    otp_device *s = device(src), *d = device(dst);
    if (!s || !d)
        return OFFLOAD_FAIL;
    if (size < 0 || (size > 0 && (!sptr || !dptr)))
        return fail("%s from device %d: bad pointer or size", "data_exchange", src);
    if (size == 0)
        return OFFLOAD_SUCCESS;
    otm_op op = {.kind = OTM_KIND_EXCHANGE, .rank = s->rank, .peer = d->rank,
                 .unit = s->unit, .peer_unit = d->unit, .addr = (uint64_t)(uintptr_t)sptr,
                 .addr2 = (uint64_t)(uintptr_t)dptr, .size = (uint64_t)size};
    /* libomptarget (14 to 16) copies through the host only when this call
     * fails, and drops what synchronize says of the queue: the exchange
     * must have ended when the call returns. */
    return otp_host_submit_op_ended(otp_plugin_host(), &op, ai, "data_exchange");
}

int32_t __tgt_rtl_data_exchange(int32_t src, void *sptr, int32_t dst, void *dptr,
                                int64_t size)
{
    return __tgt_rtl_data_exchange_async(src, sptr, dst, dptr, size, NULL);
}

/* ---- kernels ---- */

int32_t __tgt_rtl_run_target_team_region_async(int32_t id, void *entry, void **args,
                                               ptrdiff_t *offsets, int32_t nargs,
                                               int32_t teams, int32_t threads,
                                               uint64_t tripcount, __tgt_async_info *ai)
{
    (void)tripcount;
    otp_device *d = device(id);
    if (!d)
        return OFFLOAD_FAIL;
    if (!entry || nargs < 0 || (nargs > 0 && !args))
        return fail("%s on device %d: bad kernel or arguments", "run_target_region", id);
    uint64_t *vals = otp_plugin_calloc((size_t)nargs + 1, sizeof *vals);
    int64_t *offs = otp_plugin_calloc((size_t)nargs + 1, sizeof *offs);
    int32_t rc = OFFLOAD_FAIL;
    if (!vals || !offs) {
        fail("%s on device %d: out of memory", "run_target_region", id);
    } else {
        for (int32_t i = 0; i < nargs; i++) {
            vals[i] = (uint64_t)(uintptr_t)args[i];
            offs[i] = offsets ? (int64_t)offsets[i] : 0;
        }
        otm_op op = {.kind = OTM_KIND_EXECUTE, .rank = d->rank, .unit = d->unit,
                     .arg = (uint64_t)(uintptr_t)entry, .nargs = (uint32_t)nargs,
                     .args = vals, .offsets = offs,
                     .teams = (uint64_t)(teams > 0 ? teams : 1),
                     .threads = (uint64_t)(threads > 0 ? threads : 0)};
        rc = otp_host_submit_op(otp_plugin_host(), &op, ai, "run_target_region");
    }
    otp_plugin_free(vals);
    otp_plugin_free(offs);
    return rc;
}

int32_t __tgt_rtl_run_target_team_region(int32_t id, void *entry, void **args,
                                         ptrdiff_t *offsets, int32_t nargs, int32_t teams,
                                         int32_t threads, uint64_t tripcount)
{
    return __tgt_rtl_run_target_team_region_async(id, entry, args, offsets, nargs, teams,
                                                  threads, tripcount, NULL);
}

int32_t __tgt_rtl_run_target_region_async(int32_t id, void *entry, void **args,
                                          ptrdiff_t *offsets, int32_t nargs,
                                          __tgt_async_info *ai)
{
    return __tgt_rtl_run_target_team_region_async(id, entry, args, offsets, nargs, 1, 0,
                                                  0, ai);
}

int32_t __tgt_rtl_run_target_region(int32_t id, void *entry, void **args,
                                    ptrdiff_t *offsets, int32_t nargs)
{
    return __tgt_rtl_run_target_team_region_async(id, entry, args, offsets, nargs, 1, 0,
                                                  0, NULL);
}

/* LLVM 16: one entry point for every kernel launch. The kernel's own
 * arguments are args/offsets (kargs->NumArgs of them, as libomptarget 16's
 * host plugin reads them); the teams and threads of the first dimension
 * are the launch's. */
int32_t __tgt_rtl_launch_kernel(int32_t id, void *entry, void **args, ptrdiff_t *offsets,
                                __tgt_kernel_arguments *kargs, __tgt_async_info *ai)
{
    if (!kargs)
        return fail("%s on device %d: no kernel arguments", "launch_kernel", id);
    if (kargs->NumArgs > INT32_MAX)
        return fail("%s on device %d: too many kernel arguments", "launch_kernel", id);
    int32_t teams = kargs->NumTeams[0] > INT32_MAX ? INT32_MAX : (int32_t)kargs->NumTeams[0];
    int32_t threads = kargs->ThreadLimit[0] > INT32_MAX ? INT32_MAX
                                                        : (int32_t)kargs->ThreadLimit[0];
    return __tgt_rtl_run_target_team_region_async(id, entry, args, offsets,
                                                  (int32_t)kargs->NumArgs, teams, threads,
                                                  kargs->Tripcount, ai);
}

/* ---- queues and events ---- */

int32_t __tgt_rtl_synchronize(int32_t id, __tgt_async_info *ai)
{
    otp_plugin *p = otp_plugin_host();
    if (!device(id))
        return OFFLOAD_FAIL;
    if (!ai)
        return fail("%s on device %d: no async info", "synchronize", id);
    if (!ai->Queue)
        return OFFLOAD_SUCCESS;
    otp_pqueue *q = ai->Queue;
    otm_status st = otp_pqueue_wait(p, q);
    otp_failure f = q->failed;
    ai->Queue = NULL;
    otp_pqueue_release(p, q);
    if (st == OTM_ERR_UNRESPONSIVE)
        otp_host_device_lost(p, p->devices[id].rank, st);
    if (st) {
        otp_host_say_failure(p, &f, id);
        otp_host_end_if_faulted(p);
        return OFFLOAD_FAIL;
    }
    return OFFLOAD_SUCCESS;
}

/* LLVM 16: advances the queue without blocking; once it is empty the
 * queue is released (Queue = NULL), as synchronize would. */
int32_t __tgt_rtl_query_async(int32_t id, __tgt_async_info *ai)
{
    otp_plugin *p = otp_plugin_host();
    if (!device(id))
        return OFFLOAD_FAIL;
    if (!ai)
        return fail("%s on device %d: no async info", "query_async", id);
    if (!ai->Queue)
        return OFFLOAD_SUCCESS;
    otp_pqueue *q = ai->Queue;
    otm_status st = OTM_OK;
    if (!otp_pqueue_query(p, q, &st))
        return OFFLOAD_SUCCESS;
    otp_failure f = q->failed;
    ai->Queue = NULL;
    otp_pqueue_release(p, q);
    if (st == OTM_ERR_UNRESPONSIVE)
        otp_host_device_lost(p, p->devices[id].rank, st);
    if (st) {
        otp_host_say_failure(p, &f, id);
        otp_host_end_if_faulted(p);
        return OFFLOAD_FAIL;
    }
    return OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_create_event(int32_t id, void **event)
{
    if (!device(id))
        return OFFLOAD_FAIL;
    if (!event)
        return fail("%s on device %d: NULL event", "create_event", id);
    *event = otp_plugin_calloc(1, sizeof(otp_pevent));
    if (!*event)
        return fail("%s on device %d: out of memory", "create_event", id);
    return OFFLOAD_SUCCESS;
}

static void pevent_clear(otp_plugin *p, otp_pevent *e)
{
    if (otp_plugin_enter(p))
        return;
    if (e->ev)
        otm_event_unref(&p->node, e->ev);
    if (e->queue)
        otp_pqueue_unref(p, e->queue);
    e->ev = NULL;
    e->queue = NULL;
    otp_plugin_leave(p);
}

int32_t __tgt_rtl_record_event(int32_t id, void *event, __tgt_async_info *ai)
{
    otp_plugin *p = otp_plugin_host();
    otp_pevent *e = event;
    if (!device(id))
        return OFFLOAD_FAIL;
    if (!e || !ai)
        return fail("%s on device %d: NULL event or async info", "record_event", id);
    otp_pqueue *q = otp_async_queue(p, ai);
    if (!q)
        return fail("%s on device %d: out of memory", "record_event", id);
    pevent_clear(p, e);
    if (otp_plugin_enter(p))
        return fail("%s on device %d: the job has ended", "record_event", id);
    pthread_mutex_lock(&q->lock);
    e->ev = otm_queue_last(&p->node, &q->q);
    pthread_mutex_unlock(&q->lock);
    if (e->ev) {
        pthread_mutex_lock(&p->lock);
        q->refs++;
        pthread_mutex_unlock(&p->lock);
        e->queue = q;
    }
    otp_plugin_leave(p);
    return OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_wait_event(int32_t id, void *event, __tgt_async_info *ai)
{
    otp_plugin *p = otp_plugin_host();
    otp_pevent *e = event;
    if (!device(id))
        return OFFLOAD_FAIL;
    if (!e || !ai)
        return fail("%s on device %d: NULL event or async info", "wait_event", id);
    if (!e->ev)
        return OFFLOAD_SUCCESS;   /* recorded on an empty queue */
    otp_pqueue *q = otp_async_queue(p, ai);
    if (!q || otp_pqueue_depend(p, q, e->queue))
        return fail("%s on device %d: out of memory", "wait_event", id);
    otm_op op = {.kind = OTM_KIND_SYNC, .target = e->ev};
    return otp_host_submit_op(p, &op, ai, "wait_event");
}

int32_t __tgt_rtl_sync_event(int32_t id, void *event)
{
    otp_plugin *p = otp_plugin_host();
    otp_pevent *e = event;
    if (!device(id))
        return OFFLOAD_FAIL;
    if (!e)
        return fail("%s on device %d: NULL event", "sync_event", id);
    if (!e->ev)
        return OFFLOAD_SUCCESS;
    int st = otp_event_wait(p, e->queue, e->ev);
    if (st) {
        otp_failure f = {.status = (otm_status)st, .kind = e->ev->kind, .rank = e->ev->rank,
                         .unit = e->ev->unit};
        otp_host_say_failure(p, &f, id);
        otp_host_end_if_faulted(p);
        return OFFLOAD_FAIL;
    }
    return OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_destroy_event(int32_t id, void *event)
{
    otp_plugin *p = otp_plugin_host();
    if (!device(id))
        return OFFLOAD_FAIL;
    if (!event)
        return fail("%s on device %d: NULL event", "destroy_event", id);
    pevent_clear(p, event);
    otp_plugin_free(event);
    return OFFLOAD_SUCCESS;
}

/* LLVM 16 (llvm_omp_target_lock_mem): transfers read and write host memory
 * through MPI, which needs no page locking, so the locked pointer is the
 * host pointer itself. */
int32_t __tgt_rtl_data_lock(int32_t id, void *host, int64_t size, void **locked)
{
    if (!device(id))
        return OFFLOAD_FAIL;
    if (!host || size < 0 || !locked)
        return fail("%s on device %d: bad pointer or size", "data_lock", id);
    *locked = host;
    return OFFLOAD_SUCCESS;
}

int32_t __tgt_rtl_data_unlock(int32_t id, void *host)
{
    if (!device(id))
        return OFFLOAD_FAIL;
    if (!host)
        return fail("%s on device %d: NULL pointer", "data_unlock", id);
    return OFFLOAD_SUCCESS;
}

void __tgt_rtl_print_device_info(int32_t id)
{
    otp_device *d = device(id);
    otp_plugin *p = otp_plugin_host();
    const char *host = p && p->cards ? p->cards[d ? d->rank : 0].host : "?";
    if (d && d->unit)
        printf("    omptarget-mpi device %d: MPI rank %d on %s, %s device %d (its plugin "
               "libomptarget.rtl.%s)\n", (int)id, d->rank, host, d->plugin, d->local,
               d->plugin);
    else if (d)
        printf("    omptarget-mpi device %d: MPI rank %d on %s, its CPU\n", (int)id, d->rank,
               host);
}

void __tgt_rtl_set_info_flag(uint32_t flags)
{
    (void)flags;
}
