/*
 * worker.c - a rank >= 1 as an OpenMP device: the operations the core runs
 * for the host (load and unload an image, run a region, hand over what the
 * regions printed) and the threads that serve it until EXIT.
 *
 * The worker reaches here from register_lib, inside the program's first
 * constructor, so the program's main never runs on a worker. That may be
 * the constructor of a library the program dlopen()s (its main has no
 * region): glibc then holds its loader lock in this thread for good, and
 * the loader calls (an image's dlopen, dlsym, dlclose) must run on this
 * thread (on_loader_thread). What comes
 * before the first region and after EXIT (output capture and the fault
 * guard; MPI_Finalize and _exit, so that no destructor of libomptarget
 * runs against a half-torn-down plugin) is startup.c's and end.c's.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "../shell/idle.h"
#include "../shell/trace.h"
#include "otm/fault.h"
#include "otm/output.h"
#include "otm/proxy.h"
#include "otm/wire.h"
#include "plugin.h"

/* The entries of an image without a table of its own (not made by clang),
 * or whose table is not the host's: the symbols its host record names, in
 * the host's order, which only a worker holding that record (registered
 * at start-up) knows. */
static otm_status entries_by_name(otp_plugin *p, otp_loaded *l,
                                  const __tgt_device_image *own)
{
    if (!own)
        return otp_plugin_log(OTM_LOG_ERROR, "rank %d: the image has no table of "
                              "entries", p->node.rank), OTM_ERR_NO_KERNEL;
    uint64_t n = (uint64_t)(own->EntriesEnd - own->EntriesBegin);
    l->entries = otp_plugin_calloc(n ? n : 1, sizeof *l->entries);
    if (!l->entries)
        return OTM_ERR_NOMEM;
    for (uint64_t i = 0; i < n; i++) {
        const __tgt_offload_entry *e = &own->EntriesBegin[i];
        if (e->flags == OMP_REGISTER_REQUIRES) {
            l->entries[i] = (otm_entry){0, 0};
            continue;
        }
        void *addr = otd_image_symbol(l->image, e->name);
        if (!addr)
            return otp_plugin_log(OTM_LOG_ERROR, "rank %d: entry %s not in the device "
                                  "image", p->node.rank, e->name), OTM_ERR_NO_KERNEL;
        l->entries[i] = (otm_entry){(uint64_t)(uintptr_t)addr, e->size};
    }
    l->count = n;
    return OTM_OK;
}

/* Takes the image's own entry table, as (address, size) pairs, when its
 * names are the host's in the host's order: the common case, with no
 * symbol lookup. Otherwise each host entry is looked up by name, as the
 * GPU plugins do: `declare target link` gives the host one entry per
 * variable (its `_decl_tgt_ref_ptr` pointer) that the device image defines
 * but does not list. */
static otm_status take_entries(otp_plugin *p, otp_loaded *l, const otm_image_ref *ref,
                               const __tgt_device_image *own)
{
    const otd_image_entry *t = NULL;
    uint64_t n = 0, h = OTM_WIRE_HASH_SEED;
    if (otd_image_entries(l->image, &t, &n))
        return OTM_ERR_NO_KERNEL;
    if (n == 0)
        return entries_by_name(p, l, own);
    for (uint64_t i = 0; i < n; i++)
        if (t[i].name)
            h = otm_wire_hash(t[i].name, strlen(t[i].name) + 1, h);
    if (h != ref->names_hash && !own)
        return otp_plugin_log(OTM_LOG_ERROR, "rank %d: the device image's %llu entries "
                              "are not the host's (their names differ) and this rank "
                              "never registered the host's, so it cannot look them up "
                              "by name", p->node.rank, (unsigned long long)n),
               OTM_ERR_NO_KERNEL;
    if (h != ref->names_hash)
        return entries_by_name(p, l, own);
    l->entries = otp_plugin_calloc(n ? n : 1, sizeof *l->entries);
    if (!l->entries)
        return OTM_ERR_NOMEM;
    for (uint64_t i = 0; i < n; i++)
        l->entries[i] = (otm_entry){(uint64_t)(uintptr_t)t[i].addr, t[i].size};
    l->count = n;
    return OTM_OK;
}

static otp_loaded *loaded_new(otp_plugin *p, uint64_t id)
{
    otp_loaded *l = NULL;
    pthread_mutex_lock(&p->images_lock);
    if (p->nloaded == p->loaded_cap) {
        size_t cap = p->loaded_cap ? 2 * p->loaded_cap : 8;
        otp_loaded *grown = otp_plugin_realloc(p->loaded, cap * sizeof *grown);
        if (grown) {
            p->loaded = grown;
            p->loaded_cap = cap;
        }
    }
    if (p->nloaded < p->loaded_cap) {
        l = &p->loaded[p->nloaded++];
        *l = (otp_loaded){.id = id};
    }
    pthread_mutex_unlock(&p->images_lock);
    return l;
}

static void on_loader_thread(otp_plugin *p, void (*fn)(void *), void *arg);

static void unload_here(otp_plugin *p, uint64_t id)
{
    pthread_mutex_lock(&p->images_lock);
    for (size_t i = 0; i < p->nloaded; i++) {
        if (p->loaded[i].id != id)
            continue;
        otd_image_unload(p->loaded[i].image);
        otp_plugin_free(p->loaded[i].entries);
        p->loaded[i] = p->loaded[--p->nloaded];
        break;
    }
    pthread_mutex_unlock(&p->images_lock);
}

/* Loads the image the host names: the bytes it sent, or this process's
 * own copy (an object it registered at start-up). */
static otm_status load_here(otp_plugin *p, const otm_image_ref *ref, const otm_entry **out,
                            uint64_t *count)
{
    char err[256];
    /* This process's record of the image, when it registered it: its bytes
     * if the host did not send them, and the names of its entries. */
    const void *mine = NULL;
    const __tgt_device_image *own = otp_image_own(p, ref, &mine);
    const void *elf = ref->bytes ? ref->bytes : mine;
    if (!elf)
        return OTM_ERR_NO_IMAGE;
    otp_loaded *l = loaded_new(p, ref->id);
    if (!l)
        return OTM_ERR_NOMEM;
    otm_status st = otd_image_load(elf, (size_t)ref->size, &l->image, err, sizeof err);
    if (st)
        otp_plugin_log(OTM_LOG_ERROR, "rank %d: %s", p->node.rank, err);
    if (st == OTM_OK && otd_fault_hook_exit(otd_image_handle(l->image)))
        otp_plugin_log(OTM_LOG_WARN, "rank %d: exit() in this image's regions will end "
                       "the device", p->node.rank);
    if (st == OTM_OK)
        st = take_entries(p, l, ref, own);
    if (st) {
        unload_here(p, ref->id);
        return st;
    }
    *out = l->entries;
    *count = l->count;
    return OTM_OK;
}

/* The device hooks of loading and unloading: each a loader call. */
typedef struct image_call {
    otp_plugin *p;
    uint16_t unit;
    const otm_image_ref *ref;
    uint64_t id;
    const otm_entry **out;
    uint64_t *count;
    otm_status st;
} image_call;

static void load_call(void *arg)
{
    image_call *c = arg;
    c->st = c->unit ? otp_units_load(c->p, c->unit, c->ref, c->out, c->count)
                    : load_here(c->p, c->ref, c->out, c->count);
}

static void unload_call(void *arg)
{
    image_call *c = arg;
    unload_here(c->p, c->id);
}

/* The CPU's images are this process's; a proxied unit's, its plugin's
 * (loaded through it, on the loader thread too: a host plugin dlopens
 * them). Unified shared memory is the CPU's alone. */
static otm_status load_image(void *ctx, uint16_t unit, const otm_image_ref *ref,
                             const otm_entry **out, uint64_t *count)
{
    if (ref->usm && unit == 0)
        otp_usm_worker_enable(ctx);
    image_call c = {.p = ctx, .unit = unit, .ref = ref, .out = out, .count = count};
    on_loader_thread(ctx, load_call, &c);
    return c.st;
}

/* A proxied unit's plugin has no way to unload an image (libomptarget
 * 14-16 never asks it): it stays loaded there. */
static void unload_image(void *ctx, uint16_t unit, uint64_t id)
{
    if (unit)
        return;
    image_call c = {.p = ctx, .id = id};
    on_loader_thread(ctx, unload_call, &c);
}

/* ---- how long kernels run ---- */

static otp_kernel_time *time_slot(otp_plugin *p, uint64_t kernel)
{
    /* Entry points are at least 16-byte aligned. */
    return &p->kernel_times[(kernel >> 4) % OTM_KERNEL_TIMES];
}

static void kernel_ran(otp_plugin *p, uint64_t kernel, uint64_t ns)
{
    otp_kernel_time *t = time_slot(p, kernel);
    __atomic_store_n(&t->ns, ns, __ATOMIC_RELAXED);
    __atomic_store_n(&t->kernel, kernel, __ATOMIC_RELAXED);
}

/* Whether `kernel` last ran shorter than a thread spins (SPIN): its
 * thread may then run it without waking the spare to hold the gate
 * meanwhile (gate_turn). A kernel not seen yet is not. */
static int kernel_quick(otp_plugin *p, uint64_t kernel)
{
    otp_kernel_time *t = time_slot(p, kernel);
    return __atomic_load_n(&t->kernel, __ATOMIC_RELAXED) == kernel &&
           __atomic_load_n(&t->ns, __ATOMIC_RELAXED) < p->settings.spin_ns;
}

static otm_status run_kernel(void *ctx, uint16_t unit, uint64_t kernel, void **args,
                             uint32_t nargs, uint64_t teams, uint64_t threads,
                             otm_region_fault *fault)
{
    otd_fault f;
    char why[640];
    otp_plugin *p = ctx;
    if (unit) {
        uint64_t t0 = ots_clock_ns();
        otm_status st = otp_units_run(p, unit, kernel, args, nargs, teams, threads, fault);
        kernel_ran(ctx, kernel, ots_clock_ns() - t0);
        return st;
    }
    (void)teams, (void)threads;
    otm_status st = otp_usm_region_begin(p, why, sizeof why);
    if (st)
        return otp_plugin_log(OTM_LOG_ERROR, "rank %d: %s", p->node.rank, why), st;
    uint64_t t0 = ots_clock_ns();
    st = otd_kernel_call_guarded((void *)(uintptr_t)kernel, args, nargs, &f);
    kernel_ran(ctx, kernel, ots_clock_ns() - t0);
    otm_status written = otp_usm_region_end(p);
    if (st == OTM_OK)
        st = written;
    if (st == OTM_ERR_KERNEL_FAULT)
        *fault = (otm_region_fault){
            .signo = f.signo, .code = f.code, .addr = f.addr, .exit_status = f.exit_status,
            .flags = (f.signo ? OTM_EXEC_FAULTED : OTM_EXEC_EXITED) |
                     (f.foreign ? OTM_EXEC_FOREIGN : 0) |
                     (f.signo == SIGSEGV && otp_usm_refused(p, f.addr) ? OTM_EXEC_PAGE_REFUSED
                                                                        : 0)};
    return st;
}

static void output_pending(void *ctx, uint64_t *out, uint64_t *err)
{
    otd_output_pending(((otp_plugin *)ctx)->output, out, err);
}

static otm_status output_take(void *ctx, uint8_t *dst, uint64_t out, uint64_t err)
{
    return otd_output_take(((otp_plugin *)ctx)->output, dst, out, err);
}

otm_device_ops otp_worker_device_ops(otp_plugin *p)
{
    otm_device_ops ops = {.load_image = load_image, .unload_image = unload_image,
                          .run_kernel = run_kernel, .ctx = p};
    otp_units_ops(p, &ops);
    if (p->output) {
        ops.output_pending = output_pending;
        ops.output_take = output_take;
    }
    return ops;
}

/* The worker's threads. HANDLERS kernel threads and one spare (the thread
 * that reached the device loop) share two roles: one thread at a
 * time holds the gate (polls MPI for notifications and moves data events),
 * and only kernel threads run kernels, so every kernel runs on one of the
 * same HANDLERS threads, as in one process a program's kernels run on its
 * own threads. That matters to the kernels' OpenMP: libomp keeps a team of
 * threads for each thread that starts parallel regions, and a team spins
 * for KMP_BLOCKTIME (200 ms) after its region; kernels that moved from
 * thread to thread left a spinning team behind on each, which took a core
 * from the next kernel (DESIGN.md §6).
 *
 * A kernel thread holding the gate that finds a kernel due gives the gate
 * up, wakes a sleeper (the spare, or an idle kernel thread) to take it over
 * and runs the kernel itself: the kernel starts at once, and the wake-up
 * happens off the critical path. Done, it takes the gate back if it is
 * free, or asks for it: the spare gives the gate up to a kernel thread that
 * wants it, and only wakes one when it finds a kernel due. Since at most
 * HANDLERS threads run kernels and the spare runs none, a thread is always
 * free to hold the gate: a kernel never stalls a transfer. Threads without
 * a role sleep on a condition variable and cost nothing.
 *
 * The spare is also the loader thread: the thread holding the gate hands
 * it the loader calls (on_loader_thread) and waits. As it runs no kernel,
 * it answers within a wake-up. */
typedef struct loader_call {
    void (*fn)(void *arg);
    void *arg;
    int done;               /* under the shell's m */
} loader_call;

typedef struct otm_worker_shell {
    otp_plugin *p;
    pthread_mutex_t m;
    pthread_cond_t work;
    pthread_t loader;       /* the thread that reached the device loop */
    _Atomic(loader_call *) call;  /* the loader call handed to it (set
                                   * and cleared under m) */
    pthread_cond_t called;  /* a loader call done, or the slot free */
    atomic_int gate_held;   /* a thread is polling the gate */
    atomic_int gate_wanted; /* kernel threads asking the spare for the gate */
    atomic_int running;     /* threads in otm_handler_run_once */
    atomic_int max_running; /* kernel threads started */
    atomic_int stop;
} shell;

static void on_loader_thread(otp_plugin *p, void (*fn)(void *), void *arg)
{
    shell *sh = p->shell;
    if (!sh || pthread_equal(pthread_self(), sh->loader)) {
        fn(arg);
        return;
    }
    loader_call c = {.fn = fn, .arg = arg};
    pthread_mutex_lock(&sh->m);
    while (atomic_load(&sh->call))
        pthread_cond_wait(&sh->called, &sh->m);
    atomic_store(&sh->call, &c);
    pthread_cond_broadcast(&sh->work);
    while (!c.done)
        pthread_cond_wait(&sh->called, &sh->m);
    pthread_mutex_unlock(&sh->m);
}

/* The loader thread's part: runs the call handed to it, if any. */
static void run_loader_call(shell *sh)
{
    loader_call *c = atomic_load(&sh->call);
    if (!c)
        return;
    c->fn(c->arg);
    pthread_mutex_lock(&sh->m);
    c->done = 1;
    atomic_store(&sh->call, NULL);
    pthread_cond_broadcast(&sh->called);
    pthread_mutex_unlock(&sh->m);
}

/* One thread's part: its shell and its role. */
typedef struct server {
    shell *sh;
    int spare;
} server;

/* Whether a thread may start a kernel event now (a handler slot is free). */
static int kernel_due(shell *sh)
{
    return atomic_load(&sh->running) < atomic_load(&sh->max_running) &&
           otm_node_kernels_waiting(&sh->p->node);
}

/* The kernel a thread would run if it started one now (a handler slot is
 * free), or 0: none is due. */
static uint64_t kernel_to_run(shell *sh)
{
    return atomic_load(&sh->running) < atomic_load(&sh->max_running)
               ? otm_node_kernel_next(&sh->p->node)
               : 0;
}

static void wake(shell *sh, int all)
{
    pthread_mutex_lock(&sh->m);
    if (all)
        pthread_cond_broadcast(&sh->work);
    else
        pthread_cond_signal(&sh->work);
    pthread_mutex_unlock(&sh->m);
}

/* Runs one step of a kernel event if a handler slot is free. */
static int try_kernel(shell *sh)
{
    if (atomic_fetch_add(&sh->running, 1) >= atomic_load(&sh->max_running)) {
        atomic_fetch_sub(&sh->running, 1);
        return 0;
    }
    int moved = otm_handler_run_once(&sh->p->node);
    atomic_fetch_sub(&sh->running, 1);
    return moved;
}

/* Polls the gate until the service ends or the holder should give it up:
 * a kernel thread when a kernel is due to run (it runs it), the spare when
 * a kernel thread asks for the gate. A kernel thread holding the gate also
 * moves the replies and output of kernels that ran (no program code runs
 * there); the spare wakes a kernel thread for any kernel event, and keeps
 * polling.
 *
 * A kernel thread leaving to run a kernel wakes the spare to hold the gate
 * meanwhile, unless that kernel last ran shorter than SPIN (kernel_quick):
 * then it frees the gate and takes it back when the kernel returns, and
 * the region costs no wake-up, no second thread at MPI's lock, and no
 * hand-back (a sleep and a wake-up more). Should such a kernel run long
 * this time, the spare finds the gate free at the end of its doze, 10 ms
 * at most, and holds it until the kernel thread asks for it back. */
static void gate_turn(server *s, ots_idle *idle)
{
    shell *sh = s->sh;
    otm_node *node = &sh->p->node;
    int quick = 0;
    ots_idle_after(idle, 1, 0);
    for (;;) {
        int moved = otm_gate_poll_once(node), replying = 0;
        if (node->life == OTM_LIFE_DONE) {
            atomic_store(&sh->stop, 1);
            break;
        }
        if (s->spare) {
            if (atomic_load(&sh->gate_wanted) > 0)
                break;
            if (moved && kernel_due(sh))
                wake(sh, 0);
        } else if (otm_node_kernels_waiting(node)) {
            /* One look at the kernel queue while it is empty, as it mostly
             * is while the gate waits. */
            uint64_t kernel = kernel_to_run(sh);
            if (kernel) {
                quick = kernel_quick(sh->p, kernel);
                break;
            }
            moved |= otm_handler_reply_once(node);
            replying = !moved;
        }
        ots_idle_after(idle, moved, !moved && (replying || otm_node_streaming(node)));
    }
    atomic_store(&sh->gate_held, 0);
    /* All when kernel threads ask for the gate: the spare, woken alone,
     * would leave it to them and sleep on. */
    int others = !s->spare && atomic_load(&sh->gate_wanted) > 0;
    if (atomic_load(&sh->stop) || others || !quick)
        wake(sh, atomic_load(&sh->stop) || others);
}

/* Sleeps until this thread may have something to do: for a kernel thread,
 * the gate free or a kernel due; for the spare, the gate free and asked
 * for by no kernel thread. The timeout only bounds a missed wake-up. */
static void doze(server *s)
{
    shell *sh = s->sh;
    pthread_mutex_lock(&sh->m);
    int idle = s->spare ? (atomic_load(&sh->gate_held) || atomic_load(&sh->gate_wanted) > 0) &&
                              !atomic_load(&sh->call)
                        : atomic_load(&sh->gate_held) && !kernel_due(sh);
    if (!atomic_load(&sh->stop) && idle) {
        struct timespec ts = otm_deadline_in(10000000);
        pthread_cond_timedwait(&sh->work, &sh->m, &ts);
    }
    pthread_mutex_unlock(&sh->m);
}

/* Takes the gate if it is free (the spare: and no kernel thread asks for
 * it), then holds it for a turn. Returns 0 when it was not taken. */
static int take_gate(server *s, ots_idle *idle)
{
    int free_gate = 0;
    if (s->spare && atomic_load(&s->sh->gate_wanted) > 0)
        return 0;
    if (!atomic_compare_exchange_strong(&s->sh->gate_held, &free_gate, 1))
        return 0;
    gate_turn(s, idle);
    return 1;
}

static void serve(server *s)
{
    shell *sh = s->sh;
    ots_idle idle;
    ots_idle_init(&idle, &sh->p->settings);
    /* The slice is for the host's waits (idle.h). Here it changed nothing
     * measurable (DESIGN.md §6), and kernel threads hold the gate too: a
     * kernel's first thread would keep a slice the program did not ask
     * for. */
    idle.slice_ns = 0;
    ots_trace_name_thread(sh->p->trace, "server");
    while (!atomic_load(&sh->stop)) {
        if (s->spare)
            run_loader_call(sh);
        else if (try_kernel(sh))
            continue;
        if (take_gate(s, &idle))
            continue;
        /* A kernel thread asks the spare for the gate while it sleeps, so
         * that the gate is a kernel thread's whenever one is idle. (It
         * does not spin for it: on a core the spare shares, that only
         * delays the spare giving it up.) */
        if (!s->spare)
            atomic_fetch_add(&sh->gate_wanted, 1);
        doze(s);
        if (!s->spare)
            atomic_fetch_sub(&sh->gate_wanted, 1);
    }
}

static void *serve_thread(void *arg)
{
    serve(arg);
    return NULL;
}

void otp_worker_main(otp_plugin *p)
{
    pthread_t threads[64];
    server roles[64];
    /* At least a kernel thread per device it serves: regions of several
     * devices of this rank (nowait) run at once. */
    int n = p->settings.handlers;
    if (n < 1 + (int)otd_proxy_units(p->proxy))
        n = 1 + (int)otd_proxy_units(p->proxy);
    if (n > 64)
        n = 64;
    shell sh = {.p = p, .loader = pthread_self()};
    server self = {.sh = &sh, .spare = 1};
    atomic_init(&sh.max_running, n);
    atomic_init(&sh.call, NULL);
    pthread_mutex_init(&sh.m, NULL);
    pthread_cond_init(&sh.work, NULL);
    pthread_cond_init(&sh.called, NULL);
    otp_worker_begin(p);
    otm_device_ops ops = otp_worker_device_ops(p);
    if (otm_node_attach_device(&p->node, &ops)) {
        otp_plugin_log(OTM_LOG_ERROR, "rank %d: out of memory for its devices", p->node.rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    p->shell = &sh;
    /* This thread is the spare, the others kernel threads. */
    int started = 0;
    for (int i = 0; i < n; i++) {
        roles[i] = (server){.sh = &sh, .spare = 0};
        if (pthread_create(&threads[i], NULL, serve_thread, &roles[i]))
            break;
        started++;
    }
    if (started == 0) {
        otp_plugin_log(OTM_LOG_ERROR, "rank %d: cannot start its threads", p->node.rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    atomic_store(&sh.max_running, started);
    serve(&self);
    wake(&sh, 1);
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    p->shell = NULL;
    otp_worker_end(p);
}
