/*
 * plugin.h - the process-wide state of the plugin and its internal API.
 *
 * libomptarget calls free functions, so the plugin keeps one instance per
 * process (what else keeps state at file scope, and why, is listed in
 * DESIGN.md, "Names and state at file scope"), created on the first call
 * and torn down at unregister_lib (libomptarget 14) or deinit_plugin (16,
 * which calls it first). Everything else hangs off it: the settings, this
 * rank's otm_node, and per role the host's devices or the worker's loaded
 * images.
 *
 * The files, and what each declares below:
 *   rtl.c        the __tgt_rtl_* entry points (abi.h), the only exports
 *   alloc.c      the plugin's own memory, and its test hook
 *   startup.c    the instance's start, the worker's begin
 *   program.c    the end at the program's end, the program's MPI layer
 *   release.c    the teardown of the host's state after the job's end
 *   end.c        the host's end of the job, the worker's
 *   fence.c      the end's fence, the status the job ends with
 *   exit.c       the end of a process, and of a job that cannot start
 *   map.c        the job's map (OMPTARGET_MPI_INFO, OMPTARGET_MPI_MAP)
 *   addresses.c  rank 0's program and libraries placed at rank 0's
 *                addresses on the device ranks (otm/host_code.h)
 *   test_hooks.c the test hook that kills a device rank
 *   plugin_log.c the plugin's lines on stderr
 *   images.c     the program's registered descriptors and images
 *   memory.c     data_alloc and data_delete: the pool, host-pinned memory
 *   host_ops.c   rank 0: devices, region output and faults, queues, waits
 *   worker.c     a rank >= 1: the device operations and the serving threads
 *   usm_host.c   unified shared memory: rank 0's page server
 *   usm.c        unified shared memory: a worker's pager and what it does
 *                around each region
 */
#ifndef OTM_PLUGIN_H
#define OTM_PLUGIN_H

#include <pthread.h>
#include <stdint.h>

#include "abi.h"
#include "otm/device.h"
#include "otm/node.h"
#include "otm/pmpi.h"
#include "otm/settings.h"

typedef enum otp_role {
    OTM_ROLE_NONE = 0,      /* not started, or no usable MPI job */
    OTM_ROLE_HOST,
    OTM_ROLE_WORKER
} otp_role;

/* A host queue: one per __tgt_async_info, plus one per synchronous call. */
/* A queue's first failure: its status, and the operation and device of
 * the event that failed. */
typedef struct otp_failure {
    otm_status status;
    otm_kind kind;
    int rank;
    uint16_t unit;
} otp_failure;

typedef struct otp_pqueue otp_pqueue;
struct otp_pqueue {
    otm_queue q;
    otp_failure failed;     /* the failure the last wait or query took */
    pthread_mutex_t lock;   /* held while progressing q */
    int refs;               /* the async info, events, waiting queues */
    otp_pqueue **waits;     /* queues this one waits on (wait_event): a
                             * wait progresses them too, so one thread
                             * alone cannot deadlock on its own event */
    size_t nwaits, waits_cap;
};

/* A recorded event (create/record/wait/sync/destroy_event). */
typedef struct otp_pevent {
    otm_event *ev;          /* reference to the recorded event, or NULL */
    otp_pqueue *queue;      /* where it runs, to progress it when synced */
} otp_pevent;

/* Pool of freed device allocations, per device and size (memory.c). */
typedef struct otp_pool_entry {
    uint64_t addr, size;
    struct otp_pool_entry *next;
} otp_pool_entry;

/* A live device allocation, known so the pool can keep it on delete. */
typedef struct otp_live {
    uint64_t addr, size;
} otp_live;

/* An image loaded on a device, as the host knows it. */
typedef struct otp_hosted {
    __tgt_bin_desc *desc;           /* the descriptor that holds it */
    const void *image;              /* where its bytes start */
    uint64_t id;                    /* the LOAD's id */
    __tgt_target_table table;       /* what libomptarget uses */
} otp_hosted;

/* What a rank tells rank 0 at start-up (map.c's gather): where it runs,
 * and the devices of other plugins it serves, its units 1 and up
 * (units.c): each one's plugin, the plugin's number for it and the ELF
 * machines of the images it takes (OTP_MACHINE_*). */
#define OTP_UNITS_MAX 64
#define OTP_MACHINE_X86_64 1u
#define OTP_MACHINE_CUDA 2u
#define OTP_MACHINE_AMDGPU 4u
typedef struct otp_unit_card {
    char plugin[16];
    int32_t local;
    uint32_t machines;
} otp_unit_card;
typedef struct otp_rank_card {
    char host[72];
    int64_t pid;
    uint32_t units;
    otp_unit_card unit[OTP_UNITS_MAX];
} otp_rank_card;

/* A device of the job (devices.c): a worker rank's unit (0: its CPU). */
typedef struct otp_device {
    int id;                         /* its number for libomptarget */
    int rank;
    uint16_t unit;
    int32_t local;                  /* its plugin's number for it (units 1..) */
    uint32_t machines;              /* the images it takes (OTP_MACHINE_*) */
    char plugin[16];                /* "cpu" for unit 0, else its plugin */
    int initialized;
    otp_hosted **loaded;            /* images loaded on it */
    size_t nloaded, loaded_cap;
    otp_pool_entry *pool;           /* freed allocations kept for reuse */
    uint64_t pool_bytes;            /* their sizes summed */
    otp_live *live;                 /* allocations handed out (pool on) */
    size_t nlive, live_cap;
    int failed;                     /* a region faulted: every call fails */
    char failure[1024];             /* why, for those calls */
} otp_device;

/* How long a kernel last ran on this worker (worker.c): one slot per
 * kernel address modulo OTM_KERNEL_TIMES, a later kernel of the same slot
 * taking it over. Written by the thread that ran the kernel, read by the
 * gate's holder (atomically, each field). */
#define OTM_KERNEL_TIMES 64
typedef struct otp_kernel_time {
    uint64_t kernel, ns;
} otp_kernel_time;

/* An image loaded on a worker. */
typedef struct otp_loaded {
    uint64_t id;
    otd_image *image;
    otm_entry *entries;
    uint64_t count;
} otp_loaded;

typedef struct otp_usm otp_usm;

typedef struct otp_plugin {
    otp_role role;
    otm_settings settings;
    otm_node node;
    struct ots_trace *trace;        /* spans and counters, or NULL (trace.h) */
    pthread_mutex_t lock;           /* the node's lock hook */
    int mpi_owned;                  /* we initialised MPI, we finalise it */
    MPI_Errhandler world_errhandler;  /* MPI_COMM_WORLD's, the program's */
    int program_finalized;          /* the program's MPI_Finalize ended the
                                     * devices (src/pmpi) */
    int usm_requested;              /* refused: its devices do not start */
    int usm_on;                     /* pages are served (atomic) */
    struct otp_usm *usm;            /* usm.c's state, or NULL */
    int retrieve_waits;             /* data_retrieve_async returns once its
                                     * retrieve ended (the retrieve rule,
                                     * rtl.c): libomptarget 14; 15 and later
                                     * call init_plugin, which clears it */
    /* the program's registered descriptors (images.c) */
    pthread_mutex_t images_lock;
    __tgt_bin_desc **descs;
    size_t ndescs, descs_cap;
    /* host */
    pthread_mutex_t wait_lock;      /* the waits in progress (host_ops.c) */
    struct otm_waiter *waiters;     /* threads in the host's wait */
    int nwaiters;                   /* their number (written under
                                     * wait_lock, read atomically) */
    int polling;                    /* one of them polls for all */
    otp_device *devices;            /* the job's devices (devices.c) */
    int ndevices;
    otp_rank_card *cards;           /* every rank's, from the start-up gather */
    pthread_mutex_t pool_lock;      /* pools, live lists, pinned (memory.c) */
    void **pinned;                  /* host-pinned allocations */
    size_t npinned, pinned_cap;
    uint64_t next_load;             /* id of the next LOAD (images_lock) */
    int end_recorded;               /* otp_host_end_with was first (atomic) */
    const char *end_why;            /* why the job ends, NULL: said already */
    int end_status;                 /* 1 + the status the job ends with, 0:
                                     * none yet (atomic; written after
                                     * end_why) */
    /* worker */
    struct otd_proxy *proxy;        /* the plugins whose devices it serves
                                     * as units 1.. (units.c), or NULL */
    otp_loaded *loaded;             /* images loaded (images_lock) */
    size_t nloaded, loaded_cap;
    int expected_registrations;     /* start-up descriptors to wait for */
    struct otm_worker_shell *shell; /* the worker's threads (worker.c) */
    struct otd_output *output;      /* the regions' captured output */
    int test_kill_kind;             /* OTM_TEST_KILL_AT's kind, or 0 */
    otp_kernel_time kernel_times[OTM_KERNEL_TIMES];
} otp_plugin;

/* ---- the start (startup.c) ---- */

/* The instance, started on first use (MPI initialised, settings read, the
 * node set up, the role decided: rank 0 hosts, the others are devices).
 * NULL with one line on stderr when there is no usable MPI job (no
 * launcher, a single rank, a bad setting). Thread-safe: started once. */
otp_plugin *otp_plugin_get(void);
/* The instance if it exists and is a host, else NULL. */
otp_plugin *otp_plugin_host(void);
/* A worker, before it serves: the regions' output captured
 * (OMPTARGET_MPI_FORWARD_OUTPUT) and their faults caught; a part that
 * fails is logged and done without. */
void otp_worker_begin(otp_plugin *p);

/* ---- the end at the program's end, the program's MPI (program.c) ---- */

/* The end at the program's end (the last unregister_lib, the program's
 * MPI_Finalize): otp_host_end_run, then the host's state freed. A thread
 * that loses the election returns at once, or, when the job's end ends the
 * process (a status is recorded), waits for that (otp_host_end_wait). If a
 * region faulted while the end drained the queues, the process then ends
 * with its status, as it would alone. */
void otp_host_end(otp_plugin *p);
/* Frees what otp_host_start made and the calls since added to the devices
 * (memory: otp_memory_release; image records: otp_images_release); no
 * device is left. After the job's end only (release.c). */
void otp_host_release(otp_plugin *p);
/* The host, at its start: hands the program's MPI layer (src/pmpi), when
 * the launcher preloaded it, the program's MPI_Finalize and fatal errors,
 * which end the devices first. */
void otp_program_attach(otp_plugin *p);
/* A job of one rank: the layer keeps up the MPI the plugin initialised,
 * for the program, which finalises it (else the process's exit). 1 when
 * the layer took MPI over, 0 when there is no layer. */
int otp_program_leave_mpi(void);

/* ---- the end's fence and the status the job ends with (fence.c) ---- */

/* The end's fence: a host thread calls these around what it does with the
 * node, its queues and its events (otm_host_enter, otm/node.h); the
 * functions of host_ops.c do so themselves. Nested calls count once.
 * otp_plugin_enter returns 0 (inside), or -1 once the end was claimed:
 * the caller touches nothing of the node and fails; when the end ends the
 * process it never returns (otp_host_end_wait). */
int otp_plugin_enter(otp_plugin *p);
void otp_plugin_leave(otp_plugin *p);
/* How deep the calling thread is inside the node (0: outside). */
int otp_plugin_inside(void);
/* The status of a job whose region ran longer than
 * OMPTARGET_MPI_KERNEL_TIMEOUT: a program whose alarm went off, 128 +
 * SIGALRM, as a fault gives 128 + its signal (and unlike timeout(1)'s 124,
 * which a wrapper of the job may give for itself). */
#define OTM_EXIT_KERNEL_TIMEOUT 142
/* Records the status the job is to end with, and why (otm_host_end_if_
 * faulted says it; `why` NULL: said already); the first one wins. */
void otp_host_end_with(otp_plugin *p, int status, const char *why);
/* The status recorded (otp_host_end_with), or -1. */
int otp_host_end_status(otp_plugin *p);
/* Where a thread goes that may not take part in the end (it lost the
 * election, or the node refused it): when the end ends the process (a
 * status is recorded), it waits here for ever, so that libomptarget never
 * sees its call fail and aborts the process under the end; otherwise it
 * returns. */
void otp_host_end_wait(otp_plugin *p);
/* Waits for ever, holding nothing, for the end that ends the process. */
_Noreturn void otp_host_end_park(void);

/* ---- the host's end of the job, the worker's (end.c) ---- */

/*
 * The host's end of the job. Any host thread may come to it, several at
 * once (a fault seen by each thread waiting on that device, the program's
 * end); the node elects one (otm_host_end_claim, otm/node.h), which waits
 * until no thread is inside the node (otp_plugin_enter), then runs it
 * alone: EXIT to every worker and their acknowledgements, the trace, the
 * host's state freed, then MPI_Finalize, or MPI_Abort when a worker missed
 * the EXIT. None of these is called inside the node.
 */
/* The end itself, on the thread the node elected: it waits for the other
 * threads to leave the node (every wait ends, by a reply or a timeout),
 * then ends the job. `release` frees the host's state when no status is
 * recorded (the process goes on); NULL when the process ends right after. */
void otp_host_end_run(otp_plugin *p, void (*release)(otp_plugin *p));
/* The job first (otp_host_end_run), then this process, with the status
 * recorded: the first recorded wins. A thread that loses the election
 * waits for the winner to end the process. */
_Noreturn void otp_host_end_job(otp_plugin *p, int status, const char *why);
/* After a region faulted or called exit() (region_fault) or a device was
 * lost (worker_lost): ends the job and the process with the status
 * recorded, as in one process, saying so once. A failing entry point
 * calls it before it returns; no-op when nothing is recorded. */
void otp_host_end_if_faulted(otp_plugin *p);
/* Once no thread records any more: writes this rank's trace file, prints
 * the host's counters (OMPTARGET_MPI_INFO) and frees the recorder. */
void otp_plugin_trace_end(otp_plugin *p);
/* A worker, once its threads ended after EXIT: the trace, the node,
 * MPI_Finalize, the regions' last output; then _exit, with 1 when
 * MPI_Finalize failed. */
void otp_worker_end(otp_plugin *p) __attribute__((noreturn));
/* The program's MPI layer's attach function (otm/pmpi.h), when the
 * launcher preloaded it, else NULL. */
otm_pmpi_attach_fn *otp_program_mpi_layer(void);

/* ---- the end of a process (exit.c) ---- */

/* The end of a process the plugin decides: what stdio holds is written,
 * libomp's registration removed (its destructor will not run), coverage
 * counters dumped, then _exit(status). */
_Noreturn void otp_exit_process(int status);
/* A bad setting in a job a launcher started: no rank may run the program,
 * so the job ends with status 1, every rank together, rank 0 saying `why`;
 * MPI is initialised if it was not, and finalised in order. */
_Noreturn void otp_exit_refuse_job(otp_plugin *p, const char *why);
/* A rank that cannot take its part in a launched job (its node did not
 * start, memory was short): the job is aborted (MPI_Abort, status 1), MPI
 * initialised for it if it was not. */
_Noreturn void otp_exit_abort_job(void);
/* Before the host's MPI_Abort: waits, in the idle policy of s and for at
 * most 2 s, until the launcher has read what rank 0 wrote. */
void otp_exit_drain_output(const otm_settings *s);
/* Writes the coverage counters (a coverage build only; else nothing),
 * which _exit and MPI_Abort would skip. */
void otp_exit_dump_coverage(void);
/* A coverage build only (else nothing): SIGABRT writes the counters
 * before it ends the process. */
void otp_exit_cover_aborts(void);

/* ---- rank 0's addresses (addresses.c) ---- */

/* The collective of the set-up that every rank enters: rank 0 describes
 * its loaded objects, and each device rank places them at rank 0's
 * addresses (otm/host_code.h; OMPTARGET_MPI_HOST_CODE), said at DEBUG. A
 * description that cannot be made or placed is a warning; no memory for
 * it on a device rank aborts the job. */
void otp_addresses_share(otp_plugin *p);

/* ---- the job's devices (devices.c) ---- */

/* Rank 0, after the start-up gather (p->cards): the table of the job's
 * devices, rank by rank, each rank's CPU first, then its proxied devices
 * in its order. -1 when there is no memory for it. */
int otp_devices_build(otp_plugin *p);
/* The device that is unit `unit` of `rank`, or NULL. */
otp_device *otp_devices_at(otp_plugin *p, int rank, uint16_t unit);
/* Every device of `rank`, for what concerns the rank (it was lost). */
int otp_devices_of_rank(otp_plugin *p, int rank, otp_device **first);
/* Which device d is, for the lines that name it: "device 3 (rank 2,
 * cuda device 0)" or "device 1 (rank 2)" for a rank's CPU. */
const char *otp_devices_name(const otp_device *d, char *buf, size_t len);
/* The device as a failure's line names it: a rank's CPU "device 3" (as
 * docs/bad-input.md lists the lines), a proxied device as
 * otp_devices_name does; "device ID" when d is NULL (id < 0: "device ?"). */
const char *otp_devices_line_name(const otp_device *d, int id, char *buf, size_t len);

/* ---- a worker's proxied devices (units.c) ---- */

/* A worker, before the start-up gather: opens the plugins of
 * OMPTARGET_MPI_REMOTE_PLUGINS from its libomptarget's directory (their
 * devices become its units 1 and up; each skipped or opened is said at
 * INFO) and fills its card. */
void otp_units_open(otp_plugin *p, otp_rank_card *me);
/* Its device hooks for units 1.. (their memory, images and kernels), on
 * top of the CPU's ops: ops->units counts them. */
void otp_units_ops(otp_plugin *p, otm_device_ops *ops);
otm_status otp_units_load(otp_plugin *p, uint16_t unit, const otm_image_ref *ref,
                          const otm_entry **out, uint64_t *count);
otm_status otp_units_run(otp_plugin *p, uint16_t unit, uint64_t kernel, void **args,
                         uint32_t nargs, uint64_t teams, uint64_t threads,
                         otm_region_fault *fault);
/* A worker's end: the plugins closed. */
void otp_units_close(otp_plugin *p);

/* ---- the job's map (map.c) ---- */

/* The collective of the set-up that every rank enters: each sends its host
 * name and pid to rank 0, which writes the map file (OMPTARGET_MPI_MAP)
 * and, with OMPTARGET_MPI_INFO, prints which process serves which device.
 * A map not written is a warning; no memory for it on rank 0 aborts the
 * job. */
void otp_map_gather(otp_plugin *p);

/* With a map, this rank holds MAP.R (R: its rank) open for as long as it
 * lives, for the launcher's witness; a warning (info) if it cannot. */
void otp_map_hold_rank_file(const otp_plugin *p);
/* The map's line `end`: the host's end begins, and says how the job ends. */
void otp_map_end(const otp_plugin *p);
/* Rank 0, with a map: its own end is appended to the map as it happens
 * (`rank0 exit N` at exit, `rank0 signal N` for a fatal signal of default
 * action), for the launcher to report when rank 0 ended first. */
void otp_map_watch_host(const otp_plugin *p);
/* The map's line `status S`: the status the host ends the job with. */
void otp_map_status(const otp_plugin *p, int status);

/* ---- the test hook that kills a device rank (test_hooks.c) ---- */

/* A worker at its start: with OTM_TEST_KILL_AT=KIND for this rank
 * (OTM_TEST_KILL_RANK, default 1; docs/testing.md), it kills itself with
 * SIGKILL the moment the first event of that kind reaches its gate. A word
 * that is not a kind is said, and the hook is off. */
void otp_test_kill_start(otp_plugin *p);

/* ---- the plugin's own memory (alloc.c) ---- */

/* Every allocation of src/plugin goes through these four (the core's go
 * through the node's hooks, the device's and the shell's are their own).
 * They are malloc, calloc, realloc and free of libc, but for the test hook
 * OTM_TEST_FAIL_ALLOC (alloc.c, docs/testing.md): it makes the Nth
 * allocation of one process return NULL, once, as libc would when memory
 * is short (a failed realloc leaves ptr as it was). So every caller checks
 * for NULL and fails cleanly: an entry point returns OFFLOAD_FAIL or NULL
 * with one line saying out of memory, a worker replies OTM_ERR_NOMEM, and
 * a failure at start-up gives 0 devices or aborts the job. Thread-safe. */
void *otp_plugin_malloc(size_t size);
void *otp_plugin_calloc(size_t n, size_t size);
void *otp_plugin_realloc(void *ptr, size_t size);
void otp_plugin_free(void *ptr);
/* With the test hook set for this process, one line saying how many
 * allocations it made (the tests sweep N over them); nothing otherwise.
 * Called where a process ends: the host's end, the worker's. */
void otp_plugin_alloc_report(void);

/* ---- the plugin's lines on stderr (plugin_log.c) ---- */

/* Formats one line, prefixed "omptarget-mpi: ", if level is within the
 * log level; one write, so that ranks' lines do not interleave. */
void otp_plugin_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* As otp_plugin_log, for a line that has its prefix (the core's). */
void otp_plugin_log_line(int level, const char *line);
/* The level above which lines are dropped (OMPTARGET_MPI_LOG); warnings
 * until the settings are read. */
void otp_plugin_log_level(int level);
/* Sends the plugin's lines to descriptor fd from now on (2 by default). */
void otp_plugin_log_to(int fd);

/* ---- the program's images (images.c) ---- */
/* Registers a descriptor (once); returns how many are registered, or -1
 * when memory is short. */
int otp_desc_add(otp_plugin *p, __tgt_bin_desc *desc);
/* Forgets a descriptor; returns how many are left, or -1 if it was not
 * registered. */
int otp_desc_remove(otp_plugin *p, __tgt_bin_desc *desc);
/* The registered descriptor that holds `image`, or NULL. */
__tgt_bin_desc *otp_desc_of(otp_plugin *p, const __tgt_device_image *image);
/* The ELF bytes of an image record (unwrapped from clang 16's offload
 * binary). */
otm_status otp_image_elf(const __tgt_device_image *image, const void **elf,
                         size_t *size, char *err, size_t errlen);
/* otm_wire_hash over the entries' names, each with its NUL, in order. */
/* The ELF machine of an image (unwrapped), as OTP_MACHINE_*; 0 for one
 * that is no ELF or of another machine. */
uint32_t otp_image_machine(const __tgt_device_image *image);
uint64_t otp_names_hash(const __tgt_offload_entry *begin, const __tgt_offload_entry *end);
/* Worker: the registered image `ref` names (size, hash, and the names of
 * its host entries), with its ELF bytes in *elf; NULL when there is none. */
const __tgt_device_image *otp_image_own(otp_plugin *p, const otm_image_ref *ref,
                                        const void **elf);
/* load_binary of `image` on device d (NULL: a bad id, said already): the
 * table of the host's record of it, made on the first load (LOAD, by
 * reference first, then with the image's bytes when the worker does not
 * hold it), or NULL with the reason logged. All or nothing: when memory is
 * short, d lists nothing new. Host threads may call in at once. */
__tgt_target_table *otp_images_load(otp_plugin *p, otp_device *d, int32_t id,
                                    __tgt_device_image *image);
/* Unloads, on device d, the images of `desc` (every image when NULL) and
 * drops their records; a device that failed is sent nothing. */
void otp_images_unload(otp_plugin *p, otp_device *d, __tgt_bin_desc *desc);
/* Frees the records of device d at the end of the job (the workers drop
 * the images at EXIT); none is left. */
void otp_images_release(otp_device *d);
/* How many loaded objects call __tgt_register_lib: the registrations the
 * start-up of the program makes (0 if none could be told). */
int otp_startup_registrations(void);

/* ---- device memory (memory.c): host threads may call in at once ---- */

/* data_alloc of size >= 0 bytes of a kind other than shared on device d:
 * host-pinned memory (TARGET_ALLOC_HOST), a freed allocation of the same
 * size from d's pool, or a new one (ALLOC). NULL, with the reason
 * logged, when memory is short or the ALLOC failed. When there is no
 * memory to remember a pooled allocation, it is not pooled (its delete is
 * real). */
void *otp_memory_alloc(otp_plugin *p, otp_device *d, int64_t size, int32_t kind);
/* data_delete of tgt (not NULL) on device d: frees host-pinned memory,
 * keeps a pooled size in d's pool, else deletes it on the device. A
 * pointer the pool holds already fails (a double free). OFFLOAD_SUCCESS,
 * or OFFLOAD_FAIL with the reason logged. */
int32_t otp_memory_delete(otp_plugin *p, otp_device *d, void *tgt);
/* Frees the pools and the host-pinned memory left at the end of the job
 * (the workers drop the device memory at EXIT). */
void otp_memory_release(otp_plugin *p);

/* ---- host (host_ops.c) ---- */
/* The devices: one per rank >= 1. -1 when memory is short. */
int otp_host_start(otp_plugin *p);
/* Worker `rank` stopped answering: `why` OTM_ERR_UNRESPONSIVE, to a
 * liveness probe while a region ran on it; OTM_ERR_TIMEOUT, an operation
 * with it made no progress for a timeout (the core's worker_lost). Said
 * once, with its device and rank, and the device marked failed, so that
 * later calls on it fail at once. */
void otp_host_device_lost(otp_plugin *p, int rank, otm_status why);
/* The node's hooks of the host: the regions' output to stdout/stderr, and
 * their faults reported and their device marked failed. */
void otp_host_region_hooks(otm_hooks *h);
/* A new empty queue with one reference; NULL when memory is short. */
otp_pqueue *otp_pqueue_new(otp_plugin *p);
/* Drops a reference; the last one frees q and drops q's references on the
 * queues it waits on. */
void otp_pqueue_unref(otp_plugin *p, otp_pqueue *q);
/* The async info lets go of q (synchronize, or query_async that found it
 * empty): q's waits go first, then the info's reference. A wait matters
 * only while a wait_event of q is queued, and two queues that waited on
 * each other's events would otherwise hold each other for ever. */
void otp_pqueue_release(otp_plugin *p, otp_pqueue *q);
/* The queue of an async info, created on first use. NULL: out of memory. */
otp_pqueue *otp_async_queue(otp_plugin *p, __tgt_async_info *ai);
/* Records that q waits on an event of `on`: q's waits gain `on` and the
 * queues `on` waits on, each with a reference (so that one wait of q's
 * progresses every queue the event may depend on). -1 when memory is
 * short. */
int otp_pqueue_depend(otp_plugin *p, otp_pqueue *q, otp_pqueue *on);
/* Waits for every event of q; returns its first failure (then reset).
 * This and otp_event_wait share the host's one wait loop. */
otm_status otp_pqueue_wait(otp_plugin *p, otp_pqueue *q);
/* Progresses q (and the queues it waits on) once, without blocking.
 * Returns 1 when q is empty, with its first failure in *st (then reset),
 * else 0. */
int otp_pqueue_query(otp_plugin *p, otp_pqueue *q, otm_status *st);
/* Waits for one event of q (progressing q); returns its status. */
int otp_event_wait(otp_plugin *p, otp_pqueue *q, otm_event *ev);
/* The line of a failure found by a wait (synchronize, query_async,
 * sync_event): the operation, its device (rank, plugin) and why;
 * `queue_device` when the event's device is not known. */
void otp_host_say_failure(otp_plugin *p, const otp_failure *f, int queue_device);
/* Enqueues op on the async info's queue, or runs it synchronously when ai
 * is NULL. Returns OFFLOAD_SUCCESS / OFFLOAD_FAIL with the reason logged. */
int32_t otp_host_submit_op(otp_plugin *p, const otm_op *op,
                           __tgt_async_info *ai, const char *what);
/* Runs op synchronously on a queue of its own; returns its status. */
otm_status otp_host_run_op(otp_plugin *p, const otm_op *op);
/* As otp_host_submit_op, but returns only once the operation itself ended
 * (the queue's later events stay queued), with its own status: the
 * retrieve rule of rtl.c. The queue keeps every failure for synchronize. */
int32_t otp_host_submit_op_ended(otp_plugin *p, const otm_op *op,
                                 __tgt_async_info *ai, const char *what);

/* ---- worker (worker.c) ---- */
/* The operations the core calls to serve the host: loading and unloading
 * images, running regions under the fault guard, handing over their
 * output (when otp_worker_begin captures it). */
otm_device_ops otp_worker_device_ops(otp_plugin *p);
/* Serves as a device until the host's EXIT, then ends the process
 * (otp_worker_end); never returns. */
void otp_worker_main(otp_plugin *p) __attribute__((noreturn));

/* ---- unified shared memory (usm_host.c, usm.c) ---- */

/* Rank 0: the page server's thread started (once); OTM_OK, or a status
 * with the sentence in why saying why it cannot serve (the ranks share
 * rank 0's layout, this system gives no userfaultfd, no memory or
 * thread). */
otm_status otp_usm_host_start(otp_plugin *p, char *why, size_t len);
/* Rank 0, at the job's end, after the exit protocol: the server stopped. */
void otp_usm_host_stop(otp_plugin *p);
/* A worker: the pager opened and its thread started, once; a pager that
 * cannot open makes every region fail with the reason. */
void otp_usm_worker_enable(otp_plugin *p);
/* A worker, before a region runs: the host's ranges reserved here.
 * OTM_OK (also when unified shared memory is off), else a status with the
 * sentence in why; the region must then not run. */
otm_status otp_usm_region_begin(otp_plugin *p, char *why, size_t len);
/* A worker, after a region that began: its writes sent back to rank 0,
 * and the pages dropped when no other region runs. OTM_OK, or the status
 * of a writeback that failed (said on stderr). */
otm_status otp_usm_region_end(otp_plugin *p);
/* A worker: 1 when `addr` lies in a page of rank 0's that the pager was
 * among the last to refuse for a reason of its own (no memory, rank 0 not
 * answering), which it said in a line; 0 otherwise. */
int otp_usm_refused(otp_plugin *p, uint64_t addr);
/* A worker's end: the pager's thread stopped, the pager closed. */
void otp_usm_worker_stop(otp_plugin *p);
/* Either rank, after its stop: the state freed. */
void otp_usm_release(otp_plugin *p);

#endif
