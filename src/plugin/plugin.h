/*
 * plugin.h - the process-wide state of the plugin and its internal API.
 *
 * libomptarget calls free functions, so the plugin keeps one instance per
 * process (the only mutable global of the production code), created on the
 * first call and torn down at unregister_lib (libomptarget 14) or
 * deinit_plugin (16, which calls it first). Everything else hangs off it:
 * the settings, this rank's otm_node, and per role the host's devices or
 * the worker's loaded images.
 */
#ifndef OTM_PLUGIN_H
#define OTM_PLUGIN_H

#include <pthread.h>
#include <stdint.h>

#include "abi.h"
#include "otm/device.h"
#include "otm/node.h"
#include "otm/settings.h"

typedef enum otm_role {
    OTM_ROLE_NONE = 0,      /* not started, or no usable MPI job */
    OTM_ROLE_HOST,
    OTM_ROLE_WORKER
} otm_role;

/* A host queue: one per __tgt_async_info, plus one per synchronous call. */
typedef struct otm_pqueue otm_pqueue;
struct otm_pqueue {
    otm_queue q;
    pthread_mutex_t lock;   /* held while progressing q */
    int refs;               /* the async info, events, waiting queues */
    otm_pqueue **waits;     /* queues this one waits on (wait_event): a
                             * wait progresses them too, so one thread
                             * alone cannot deadlock on its own event */
    size_t nwaits, waits_cap;
};

/* A recorded event (create/record/wait/sync/destroy_event). */
typedef struct otm_pevent {
    otm_event *ev;          /* reference to the recorded event, or NULL */
    otm_pqueue *queue;      /* where it runs, to progress it when synced */
} otm_pevent;

/* Pool of freed device allocations, per device and size. */
typedef struct otm_pool_entry {
    uint64_t addr, size;
    struct otm_pool_entry *next;
} otm_pool_entry;

/* A live device allocation, known so the pool can keep it on delete. */
typedef struct otm_live {
    uint64_t addr, size;
} otm_live;

typedef struct otm_device {
    int rank;
    int initialized;
    __tgt_target_table *tables;     /* one per image of the program */
    otm_pool_entry *pool;           /* freed allocations kept for reuse */
    otm_live *live;                 /* allocations handed out (pool on) */
    size_t nlive, live_cap;
} otm_device;

typedef struct otm_loaded {
    otm_image *image;
    otm_entry *entries;
    uint64_t count;
} otm_loaded;

typedef struct otm_plugin {
    otm_role role;
    otm_settings settings;
    otm_node node;
    struct otm_trace *trace;        /* spans and counters, or NULL (trace.h) */
    pthread_mutex_t lock;           /* the node's lock hook */
    int mpi_owned;                  /* we initialised MPI, we finalise it */
    __tgt_bin_desc *desc;
    int usm_requested;
    /* host */
    otm_device *devices;
    int ndevices;
    pthread_mutex_t pool_lock;
    void **pinned;                  /* host-pinned allocations */
    size_t npinned, pinned_cap;
    /* worker */
    otm_loaded *loaded;             /* per image of desc */
} otm_plugin;

/* The instance, started on first use (MPI initialised, settings read, the
 * node set up). NULL with one line on stderr when there is no usable MPI
 * job (no launcher, a single rank, a bad setting). */
otm_plugin *otm_plugin_get(void);
/* The instance if it exists and is a host, else NULL. */
otm_plugin *otm_plugin_host(void);

void otm_plugin_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Once no thread records any more: writes this rank's trace file, prints
 * the host's counters (OMPTARGET_MPI_INFO) and frees the recorder. */
void otm_plugin_trace_end(otm_plugin *p);

/* ---- worker (worker.c) ---- */
otm_device_ops otm_worker_device_ops(otm_plugin *p);
/* Serves as a device until the host's EXIT; never returns. */
void otm_worker_main(otm_plugin *p) __attribute__((noreturn));

/* ---- host (host.c) ---- */
int otm_host_start(otm_plugin *p);
void otm_host_stop(otm_plugin *p);
otm_device *otm_host_device(int32_t id);
otm_pqueue *otm_pqueue_new(otm_plugin *p);
void otm_pqueue_unref(otm_plugin *p, otm_pqueue *q);
/* The queue of an async info, created on first use. NULL: out of memory. */
otm_pqueue *otm_async_queue(otm_plugin *p, __tgt_async_info *ai);
/* Records that q waits on an event of `on` (takes a reference). -1 when
 * memory is short. */
int otm_pqueue_depend(otm_plugin *p, otm_pqueue *q, otm_pqueue *on);
/* Waits for every event of q; returns its first failure. */
otm_status otm_pqueue_wait(otm_plugin *p, otm_pqueue *q);
/* Progresses q (and the queues it waits on) once, without blocking.
 * Returns 1 when q is empty, with its first failure in *st (then reset),
 * else 0. */
int otm_pqueue_query(otm_plugin *p, otm_pqueue *q, otm_status *st);
/* Waits for one event of q (progressing q); returns its status. */
int otm_event_wait(otm_plugin *p, otm_pqueue *q, otm_event *ev);
/* Enqueues op on the async info's queue, or runs it synchronously when ai
 * is NULL. Returns OFFLOAD_SUCCESS / OFFLOAD_FAIL with the reason logged. */
int32_t otm_host_submit_op(otm_plugin *p, const otm_op *op,
                           __tgt_async_info *ai, const char *what);

#endif
