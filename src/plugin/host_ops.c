/*
 * host_ops.c - rank 0: its devices, what their regions print and how they die,
 * the host's queues and the one loop that waits on them, and the
 * operations the entry points run on them.
 *
 * Every entry point may be called from several host threads at once (nowait
 * targets run on hidden helper threads). Each queue has its own lock, held
 * while it is progressed; the node's shared state has the node lock; MPI is
 * initialised with MPI_THREAD_MULTIPLE. Each exported function below that
 * touches the node, its queues or its events does so inside the node
 * (otp_plugin_enter, end.c), so that the end of the job, which one thread
 * runs alone, never meets it there. The host's end of the job is end.c's;
 * the device allocations are memory.c's.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otm/fault.h"
#include "otm/wire.h"

#include "../shell/idle.h"
#include "plugin.h"

int otp_host_start(otp_plugin *p)
{
    if (!p->devices)
        return -1;                  /* the start-up gather made none */
    p->retrieve_waits = 1;      /* until init_plugin says otherwise */
    char why[512];
    if (p->settings.usm == OTM_USM_ON && otp_usm_host_start(p, why, sizeof why))
        otp_plugin_log(OTM_LOG_WARN, "OMPTARGET_MPI_USM=on: %s; regions reach only "
                       "the memory they map", why);
    return 0;
}

/* ---- what regions print, and how they die ---- */

/* Into the host's own stdio streams, so that the output takes its place
 * among what the host program printed before and after the region. */
static void region_output(void *ctx, int rank, int stream, const uint8_t *buf, size_t len)
{
    (void)ctx, (void)rank;
    fwrite(buf, 1, len, stream == 2 ? stderr : stdout);
}

/* The name of the entry at device address `addr` on device d, or NULL. */
static const char *entry_name(otp_device *d, uint64_t addr)
{
    for (size_t i = 0; i < d->nloaded; i++) {
        const __tgt_target_table *t = &d->loaded[i]->table;
        for (const __tgt_offload_entry *e = t->EntriesBegin; e && e < t->EntriesEnd; e++)
            if ((uint64_t)(uintptr_t)e->addr == addr)
                return e->name;
    }
    return NULL;
}

/* What the faulting address is to the host: a NULL pointer; memory of the
 * host's own (its stack, heap, globals, a mapping), which the region can
 * only have got from a host pointer that was never mapped; memory the
 * host keeps read-only, which the region wrote (SEGV_ACCERR: the host
 * would have died there too); the host's code or constants (a virtual
 * table), which a device rank reaches at the host's addresses only where
 * it placed that file there (otm/host_code.h); or no mapping at all (a
 * page the host unmapped while the region ran). */
static void address_hint(uint64_t addr, int code, char *buf, size_t len)
{
    if (addr < 4096) {
        snprintf(buf, len, " (a NULL pointer)");
        return;
    }
    snprintf(buf, len, "; the address lies in no mapping of the host's: memory the host "
             "never had, or unmapped while the region ran");
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    while (maps && fgets(line, sizeof line, maps)) {
        unsigned long long lo, hi;
        char perms[8] = "", path[256] = "";
        if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %255[^\n]", &lo, &hi, perms, path) < 3 ||
            addr < lo || addr >= hi)
            continue;
        const char *file = strrchr(path, '/');
        const char *what = strstr(path, "[stack") ? "the host's stack"
                           : strstr(path, "[heap]") ? "the host's heap" : "the host's memory";
        if (perms[1] != 'w' && code == SEGV_ACCERR)
            snprintf(buf, len, "; the address lies in %s%s%s, which the host keeps "
                     "read-only (%s): the region wrote there, where the host would have "
                     "died of SIGSEGV too",
                     file ? (strchr(perms, 'x') ? "the host's code" : "the host's constants")
                          : what, file ? " of " : "", file ? file + 1 : "", perms);
        else if (file && perms[1] != 'w')
            snprintf(buf, len, "; the address lies in the host's %s of %s: a host "
                     "function pointer or virtual table reaches the same on a device "
                     "only where its rank placed %s at the host's addresses "
                     "(OMPTARGET_MPI_HOST_CODE; a library rank 0 opened after "
                     "start-up is not placed)", strchr(perms, 'x') ? "code" : "constants",
                     file + 1, file + 1);
        else
            snprintf(buf, len, "; the address lies in %s%s: the region uses host memory "
                     "that was not mapped to the device",
                     file ? "the host's globals of " : what, file ? file + 1 : "");
        break;
    }
    if (maps)
        fclose(maps);
}

/* Called on the thread that ends the faulted EXECUTE: reports it and marks
 * the device failed, so that every later call on it fails at once. */
static void region_fault(void *ctx, int rank, uint16_t unit, uint64_t kernel,
                         const otm_region_fault *f)
{
    otp_plugin *p = ctx;
    otp_device *d = otp_devices_at(p, rank, unit);
    char what[160], hint[512], dev[96];
    if (!d)
        return;
    otd_fault ff = {.signo = f->signo, .code = f->code, .addr = f->addr,
                    .exit_status = f->exit_status,
                    .foreign = (f->flags & OTM_EXEC_FOREIGN) != 0};
    if (f->flags & OTM_EXEC_EXITED)
        ff.signo = 0;
    otd_fault_describe(&ff, what, sizeof what);
    hint[0] = '\0';
    /* Only a memory fault's address says where the region reached. */
    if (f->flags & OTM_EXEC_PAGE_REFUSED)
        snprintf(hint, sizeof hint, "; its rank could not place the host's page there "
                 "(its line above says why), so the region faulted as it would without "
                 "that memory");
    else if ((f->flags & OTM_EXEC_FAULTED) && (f->signo == SIGSEGV || f->signo == SIGBUS) &&
             f->code > 0)
        address_hint(f->addr, f->signo == SIGSEGV ? f->code : 0, hint, sizeof hint);
    const char *name = entry_name(d, kernel);
    /* The name bounded so that what and the hint always fit. */
    snprintf(d->failure, sizeof d->failure, "target region %.300s %s%s%s",
             name ? name : "(unknown)", f->flags & OTM_EXEC_EXITED ? "called " : "died of ",
             what, hint);
    otp_plugin_log(OTM_LOG_ERROR, "%s: %s", otp_devices_name(d, dev, sizeof dev), d->failure);
    __atomic_store_n(&d->failed, 1, __ATOMIC_RELEASE);
    /* As in one process: exit(N) ends the program with N, a fatal signal
     * kills it (a shell reports 128 + the signal). First one wins. */
    int status = f->flags & OTM_EXEC_EXITED ? f->exit_status & 0xff : 128 + (f->signo & 0x7f);
    otp_host_end_with(p, status, "the target region ended the program");
}

/* A worker lost (the core's worker_lost hook: a liveness probe, or an
 * operation without progress for a timeout): the device is said lost at
 * once, and the job ends in order as after a fault (libomptarget would end
 * the program at the failed call anyway); the lost worker gets no EXIT, so
 * the host aborts the job, which takes the stopped or dead rank down too. */
static void worker_lost(void *ctx, int rank, otm_status why)
{
    otp_plugin *p = ctx;
    otp_host_device_lost(p, rank, why);
    otp_host_end_with(p, 1, "a device stopped answering");
}

/* A duration as the settings spell it: whole seconds, else ms, us or ns. */
static void duration_text(uint64_t ns, char *buf, size_t len)
{
    static const struct { uint64_t ns; const char *unit; } units[] = {
        {1000000000u, "s"}, {1000000u, "ms"}, {1000u, "us"}, {1u, "ns"}};
    size_t i = 0;
    while (ns % units[i].ns)
        i++;
    snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].ns), units[i].unit);
}

/* A region ran longer than OMPTARGET_MPI_KERNEL_TIMEOUT (the core's
 * region_timeout hook): said once with its device, rank, region and the
 * setting's value, the device marked failed, and the job ends as after a
 * fault, with OTM_EXIT_KERNEL_TIMEOUT. The rank, still in the region,
 * cannot hear the exit: the host aborts the job, which takes it down. */
static void region_timeout(void *ctx, int rank, uint16_t unit, uint64_t kernel)
{
    otp_plugin *p = ctx;
    otp_device *d = otp_devices_at(p, rank, unit);
    char limit[32], dev[96];
    if (!d)
        return;
    duration_text(p->settings.core.kernel_timeout_ns, limit, sizeof limit);
    const char *name = kernel ? entry_name(d, kernel) : NULL;
    pthread_mutex_lock(&p->lock);
    int first = !__atomic_load_n(&d->failed, __ATOMIC_ACQUIRE);
    if (first) {
        snprintf(d->failure, sizeof d->failure, "target region %s ran longer than "
                 "OMPTARGET_MPI_KERNEL_TIMEOUT=%s: the host gave up on it, and on its "
                 "rank, which cannot hear the end of the job while the region runs",
                 name ? name : "(unknown)", limit);
        __atomic_store_n(&d->failed, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&p->lock);
    if (first)
        otp_plugin_log(OTM_LOG_ERROR, "%s: %s", otp_devices_name(d, dev, sizeof dev),
                       d->failure);
    otp_host_end_with(p, OTM_EXIT_KERNEL_TIMEOUT, "a target region ran longer than "
                      "OMPTARGET_MPI_KERNEL_TIMEOUT");
}

void otp_host_region_hooks(otm_hooks *h)
{
    h->region_output = region_output;
    h->region_fault = region_fault;
    h->worker_lost = worker_lost;
    h->region_timeout = region_timeout;
}

otp_pqueue *otp_pqueue_new(otp_plugin *p)
{
    otp_pqueue *q = otp_plugin_calloc(1, sizeof *q);
    if (!q)
        return NULL;
    pthread_mutex_init(&q->lock, NULL);
    q->refs = 1;
    otm_queue_init(&p->node, &q->q);
    return q;
}

static void pqueue_ref(otp_plugin *p, otp_pqueue *q)
{
    pthread_mutex_lock(&p->lock);
    q->refs++;
    pthread_mutex_unlock(&p->lock);
}

static void pqueue_unref(otp_plugin *p, otp_pqueue *q)
{
    pthread_mutex_lock(&p->lock);
    int left = --q->refs;
    pthread_mutex_unlock(&p->lock);
    if (left)
        return;
    for (size_t i = 0; i < q->nwaits; i++)
        pqueue_unref(p, q->waits[i]);
    otp_plugin_free(q->waits);
    otm_queue_fini(&p->node, &q->q);
    pthread_mutex_destroy(&q->lock);
    otp_plugin_free(q);
}

void otp_pqueue_unref(otp_plugin *p, otp_pqueue *q)
{
    if (otp_plugin_enter(p))
        return;
    pqueue_unref(p, q);
    otp_plugin_leave(p);
}

void otp_pqueue_release(otp_plugin *p, otp_pqueue *q)
{
    if (otp_plugin_enter(p))
        return;
    pthread_mutex_lock(&q->lock);
    otp_pqueue **waits = q->waits;
    size_t n = q->nwaits;
    q->waits = NULL;
    q->nwaits = q->waits_cap = 0;
    pthread_mutex_unlock(&q->lock);
    for (size_t i = 0; i < n; i++)
        pqueue_unref(p, waits[i]);
    otp_plugin_free(waits);
    pqueue_unref(p, q);
    otp_plugin_leave(p);
}

/* Adds w to q's waits, with the reference the caller took on it; q's lock
 * is held. Returns 1 when q keeps the reference, 0 when w was there
 * already (or is q), -1 when memory is short. */
static int add_wait(otp_pqueue *q, otp_pqueue *w)
{
    if (w == q)
        return 0;
    for (size_t i = 0; i < q->nwaits; i++)
        if (q->waits[i] == w)
            return 0;
    if (q->nwaits == q->waits_cap) {
        size_t cap = q->waits_cap ? 2 * q->waits_cap : 4;
        otp_pqueue **grown = otp_plugin_realloc(q->waits, cap * sizeof *grown);
        if (!grown)
            return -1;
        q->waits = grown;
        q->waits_cap = cap;
    }
    q->waits[q->nwaits++] = w;
    return 1;
}

static int pqueue_depend(otp_plugin *p, otp_pqueue *q, otp_pqueue *on)
{
    /* on, and what on waits on: the event may sit behind a wait of on's,
     * on a queue that only a waiter progresses (pump_waits goes one level
     * deep). A snapshot under on's lock alone, with references taken, so
     * that no two queue locks are ever held at once here. */
    pthread_mutex_lock(&on->lock);
    size_t n = 1 + on->nwaits;
    otp_pqueue **add = otp_plugin_calloc(n, sizeof *add);
    if (add) {
        add[0] = on;
        memcpy(add + 1, on->waits, on->nwaits * sizeof *add);
        for (size_t i = 0; i < n; i++)
            pqueue_ref(p, add[i]);
    }
    pthread_mutex_unlock(&on->lock);
    if (!add)
        return -1;
    int rc = 0;
    pthread_mutex_lock(&q->lock);
    for (size_t i = 0; i < n; i++) {
        int kept = rc ? 0 : add_wait(q, add[i]);
        rc = kept < 0 ? -1 : rc;
        if (kept == 1)
            add[i] = NULL;
    }
    pthread_mutex_unlock(&q->lock);
    for (size_t i = 0; i < n; i++)
        if (add[i])
            pqueue_unref(p, add[i]);
    otp_plugin_free(add);
    return rc;
}

int otp_pqueue_depend(otp_plugin *p, otp_pqueue *q, otp_pqueue *on)
{
    if (!on || on == q)
        return 0;
    if (otp_plugin_enter(p))
        return -1;
    int rc = pqueue_depend(p, q, on);
    otp_plugin_leave(p);
    return rc;
}

otp_pqueue *otp_async_queue(otp_plugin *p, __tgt_async_info *ai)
{
    if (!ai->Queue && !otp_plugin_enter(p)) {
        ai->Queue = otp_pqueue_new(p);
        otp_plugin_leave(p);
    }
    return ai->Queue;
}

/* What one round of progress on a queue found; nothing when `taken` is 0
 * (the queue's lock was only tried, and another thread held it). */
typedef struct pumped {
    int taken, moved, empty, streaming;
} pumped;

/* Progresses the queues q waits on, skipping any another thread is at.
 * q's lock is held (the list may grow); the others are only tried, so two
 * queues waiting on each other cannot deadlock here. */
static int pump_waits(otp_plugin *p, otp_pqueue *q)
{
    int moved = 0;
    for (size_t i = 0; i < q->nwaits; i++) {
        otp_pqueue *w = q->waits[i];
        if (pthread_mutex_trylock(&w->lock))
            continue;
        moved |= otm_queue_progress(&p->node, &w->q);
        pthread_mutex_unlock(&w->lock);
    }
    return moved;
}

/* Progresses q once under its lock, and the queues it waits on when q
 * moved nothing; with `only_try`, only if q's lock is free. */
static pumped pump_all(otp_plugin *p, otp_pqueue *q, int only_try)
{
    pumped r = {0};
    if (only_try ? pthread_mutex_trylock(&q->lock) : pthread_mutex_lock(&q->lock))
        return r;
    r.taken = 1;
    r.moved = otm_queue_progress(&p->node, &q->q);
    r.empty = otm_queue_empty(&q->q);
    r.streaming = otm_queue_streaming(&q->q);
    if (!r.moved)
        r.moved = pump_waits(p, q);
    pthread_mutex_unlock(&q->lock);
    return r;
}

/*
 * The host's one wait. Many threads may wait at once (libomptarget's
 * hidden helper threads, one per nowait region in flight), and on a node
 * whose cores the device ranks share, each polling thread takes a core
 * from the ranks that must answer it. So one waiting thread at a time
 * polls, for every waiter: it progresses each waiter's queue (only tried:
 * a queue another thread is at is skipped this round) and wakes the
 * waiter whose wait ended. The others sleep on their own condition
 * variable. The poller hands the role to another waiter when its own wait
 * ends. Lock order: wait_lock, then queue locks (tried only).
 */
typedef struct otm_waiter {
    otp_pqueue *q;
    otm_event *ev;              /* NULL: until q is empty */
    pthread_cond_t wake;
    int done;                   /* wait_lock */
    struct otm_waiter *next;
} otm_waiter;

/* One round for the other waiters; wait_lock is held. */
static int pump_others(otp_plugin *p, otm_waiter *self, int *streaming)
{
    int moved = 0;
    for (otm_waiter *w = p->waiters; w; w = w->next) {
        if (w == self || w->done)
            continue;
        pumped r = pump_all(p, w->q, 1);
        moved |= r.moved;
        *streaming |= r.streaming;
        if ((r.taken && !w->ev && r.empty) || (w->ev && otm_event_ended(w->ev))) {
            w->done = 1;
            pthread_cond_signal(&w->wake);
        }
    }
    return moved;
}

/* The poller's loop: until self's wait ended, progresses everybody's.
 * Alone (the synchronous path), it never takes wait_lock: the count of
 * waiters is read without it, and a waiter that just arrived is seen a
 * round later. */
static void poll_for(otp_plugin *p, otm_waiter *self)
{
    ots_idle idle;
    ots_idle_init(&idle, &p->settings);
    while (!self->ev || !otm_event_ended(self->ev)) {
        pumped r = pump_all(p, self->q, 0);
        if (!self->ev && r.empty)
            break;
        if (__atomic_load_n(&p->nwaiters, __ATOMIC_RELAXED) > 1) {
            pthread_mutex_lock(&p->wait_lock);
            r.moved |= pump_others(p, self, &r.streaming);
            pthread_mutex_unlock(&p->wait_lock);
        }
        /* Never asleep while data streams: a transfer advances only while
         * its thread polls. */
        ots_idle_after(&idle, r.moved, r.streaming);
    }
}

/* Until ev ended or, with ev NULL, until q is empty. q may wait
 * (wait_event) on a queue no other thread progresses, so the poller
 * progresses those too, and one thread alone cannot deadlock on its own
 * event. */
static void wait_until(otp_plugin *p, otp_pqueue *q, otm_event *ev)
{
    otm_waiter w = {.q = q, .ev = ev};
    pthread_cond_init(&w.wake, NULL);
    pthread_mutex_lock(&p->wait_lock);
    w.next = p->waiters;
    p->waiters = &w;
    __atomic_add_fetch(&p->nwaiters, 1, __ATOMIC_RELAXED);
    while (!w.done) {
        if (p->polling) {
            /* Woken, run at once (idle.h); the bound only covers a
             * missed wake-up. */
            ots_slice_take(p->settings.slice_ns);
            struct timespec ts = otm_deadline_in(10000000);
            pthread_cond_timedwait(&w.wake, &p->wait_lock, &ts);
            continue;
        }
        p->polling = 1;
        pthread_mutex_unlock(&p->wait_lock);
        poll_for(p, &w);
        pthread_mutex_lock(&p->wait_lock);
        p->polling = 0;
        w.done = 1;
        for (otm_waiter *o = p->waiters; o; o = o->next)
            if (!o->done) {
                pthread_cond_signal(&o->wake);
                break;
            }
    }
    otm_waiter **at = &p->waiters;
    while (*at != &w)
        at = &(*at)->next;
    *at = w.next;
    __atomic_sub_fetch(&p->nwaiters, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&p->wait_lock);
    pthread_cond_destroy(&w.wake);
}

/* q's first failure since it was last taken, kept in q->failed; q's
 * record starts over. */
static otm_status take_failure(otp_pqueue *q)
{
    pthread_mutex_lock(&q->lock);
    otm_status st = (otm_status)q->q.status;
    q->failed = (otp_failure){.status = st, .kind = (otm_kind)q->q.failed_kind,
                              .rank = q->q.failed_rank, .unit = q->q.failed_unit};
    q->q.status = OTM_OK;
    pthread_mutex_unlock(&q->lock);
    return st;
}

/* The libomptarget call an event kind serves, as the lines name it. */
static const char *call_of(otm_kind kind)
{
    switch (kind) {
    case OTM_KIND_ALLOC: return "data_alloc";
    case OTM_KIND_DELETE: return "data_delete";
    case OTM_KIND_SUBMIT: return "data_submit";
    case OTM_KIND_RETRIEVE: return "data_retrieve";
    case OTM_KIND_EXCHANGE: return "data_exchange";
    case OTM_KIND_EXECUTE: return "target region";
    case OTM_KIND_LOAD: return "load_binary";
    case OTM_KIND_UNLOAD: return "unload";
    default: return "an operation";
    }
}

void otp_host_say_failure(otp_plugin *p, const otp_failure *f, int queue_device)
{
    char dev[96];
    const otp_device *d = f->rank > 0 ? otp_devices_at(p, f->rank, f->unit) : NULL;
    otp_plugin_log(OTM_LOG_ERROR, "%s on %s failed: %s", call_of(f->kind),
                   otp_devices_line_name(d, queue_device, dev, sizeof dev), otm_status_text(f->status));
}

otm_status otp_pqueue_wait(otp_plugin *p, otp_pqueue *q)
{
    if (otp_plugin_enter(p))
        return OTM_ERR_SHUTDOWN;
    wait_until(p, q, NULL);
    otp_plugin_leave(p);
    return take_failure(q);
}

int otp_pqueue_query(otp_plugin *p, otp_pqueue *q, otm_status *st)
{
    if (otp_plugin_enter(p)) {
        *st = OTM_ERR_SHUTDOWN;
        return 1;
    }
    pumped r = pump_all(p, q, 0);
    otp_plugin_leave(p);
    if (!r.empty)
        return 0;
    *st = take_failure(q);
    return 1;
}

int otp_event_wait(otp_plugin *p, otp_pqueue *q, otm_event *ev)
{
    if (otp_plugin_enter(p))
        return OTM_ERR_SHUTDOWN;
    wait_until(p, q, ev);
    int st = ev->state == OTM_FAILED ? (int)ev->status : OTM_OK;
    otp_plugin_leave(p);
    return st;
}

/* ev failed and its caller says so: q's synchronize must not say it
 * again (q's progress, which records failures, runs under q's lock). */
static void forget_failure(otp_pqueue *q, otm_event *ev)
{
    pthread_mutex_lock(&q->lock);
    ev->said = 1;
    if (q->q.status != OTM_OK && q->q.failed_id == ev->id)
        q->q.status = OTM_OK;     /* recorded already: ev ended at the head */
    pthread_mutex_unlock(&q->lock);
}

/* Enqueues op on q and starts it; *ev (when not NULL) gets a reference. */
static otm_status enqueue(otp_plugin *p, otp_pqueue *q, const otm_op *op, otm_event **ev)
{
    pthread_mutex_lock(&q->lock);
    otm_status st = otm_host_enqueue(&p->node, &q->q, op, ev);
    /* Start it now: the notification travels while libomptarget goes on
     * with its own work, instead of when the queue is next waited on. */
    if (st == OTM_OK)
        otm_queue_progress(&p->node, &q->q);
    pthread_mutex_unlock(&q->lock);
    return st;
}

/* A device that stopped answering (the core's liveness probes while a
 * region ran on it, or an operation without progress, DESIGN.md §5): said
 * once, with its rank, and marked failed, so that later calls on it fail
 * at once instead of each waiting for its own timeout. */
static void device_lost(otp_plugin *p, otp_device *d, otm_status why)
{
    uint64_t ms = p->settings.core.timeout_ns / 1000000;
    char dev[96];
    pthread_mutex_lock(&p->lock);
    int first = !__atomic_load_n(&d->failed, __ATOMIC_ACQUIRE);
    if (first && why == OTM_ERR_TIMEOUT)
        snprintf(d->failure, sizeof d->failure, "stopped answering: an operation with "
                 "it made no progress for %llu ms (OMPTARGET_MPI_TIMEOUT); its rank "
                 "died or is stopped", (unsigned long long)ms);
    else if (first)
        snprintf(d->failure, sizeof d->failure, "stopped answering while a target "
                 "region ran on it: no answer to a liveness probe within %llu ms (half "
                 "of OMPTARGET_MPI_TIMEOUT); its rank died or is stopped",
                 (unsigned long long)(ms / 2));
    if (first)
        __atomic_store_n(&d->failed, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&p->lock);
    if (first)
        otp_plugin_log(OTM_LOG_ERROR, "%s: %s", otp_devices_name(d, dev, sizeof dev),
                       d->failure);
}

void otp_host_device_lost(otp_plugin *p, int rank, otm_status why)
{
    otp_device *first;
    int n = otp_devices_of_rank(p, rank, &first);
    for (int i = 0; i < n; i++)
        device_lost(p, &first[i], why);
}

static int32_t report(otp_plugin *p, const otm_op *op, const char *what, otm_status st)
{
    if (st == OTM_OK)
        return OFFLOAD_SUCCESS;
    if (st == OTM_ERR_UNRESPONSIVE)
        otp_host_device_lost(p, op->rank, st);
    char dev[96];
    otp_plugin_log(OTM_LOG_ERROR, "%s on %s failed: %s", what,
                   otp_devices_line_name(otp_devices_at(p, op->rank, op->unit), -1, dev, sizeof dev),
                   otm_status_text(st));
    otp_host_end_if_faulted(p);
    return OFFLOAD_FAIL;
}

otm_status otp_host_run_op(otp_plugin *p, const otm_op *op)
{
    if (otp_plugin_enter(p))
        return OTM_ERR_SHUTDOWN;
    otp_pqueue *q = otp_pqueue_new(p);
    otm_status st = q ? enqueue(p, q, op, NULL) : OTM_ERR_NOMEM;
    if (st == OTM_OK)
        st = otp_pqueue_wait(p, q);
    if (q)
        pqueue_unref(p, q);
    otp_plugin_leave(p);
    return st;
}

/* Enqueues op on ai's queue; with `ended`, waits for the operation
 * itself to end (the retrieve rule). Reports as otp_host_submit_op. */
static int32_t submit_async(otp_plugin *p, const otm_op *op, __tgt_async_info *ai,
                            const char *what, int ended)
{
    otm_event *ev = NULL;
    if (otp_plugin_enter(p))
        return report(p, op, what, OTM_ERR_SHUTDOWN);
    otp_pqueue *q = otp_async_queue(p, ai);
    if (!q) {
        otp_plugin_leave(p);
        otp_plugin_log(OTM_LOG_ERROR, "%s: out of memory", what);
        return OFFLOAD_FAIL;
    }
    otm_status st = enqueue(p, q, op, ended ? &ev : NULL);
    if (st == OTM_OK && ended) {
        st = (otm_status)otp_event_wait(p, q, ev);
        if (st)
            forget_failure(q, ev);
        otm_event_unref(&p->node, ev);
    }
    otp_plugin_leave(p);
    return report(p, op, what, st);
}

int32_t otp_host_submit_op(otp_plugin *p, const otm_op *op,
                           __tgt_async_info *ai, const char *what)
{
    if (!ai)
        return report(p, op, what, otp_host_run_op(p, op));
    return submit_async(p, op, ai, what, 0);
}

int32_t otp_host_submit_op_ended(otp_plugin *p, const otm_op *op,
                                 __tgt_async_info *ai, const char *what)
{
    if (!ai)
        return report(p, op, what, otp_host_run_op(p, op));
    return submit_async(p, op, ai, what, 1);
}

