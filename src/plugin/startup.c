/*
 * startup.c - the plugin's start in this process, for both roles.
 *
 * The first call of libomptarget starts the instance, once: the settings,
 * MPI, the ranks' settings compared, the node, and the role: rank 0 is the
 * host, every other rank a worker. Then the collectives of the set-up every
 * rank makes (the job's map, the trace's time origin). A worker, before it
 * serves, captures its regions' output and catches their faults.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "../shell/idle.h"
#include "../shell/trace.h"
#include "otm/fault.h"
#include "otm/output.h"
#include "plugin.h"

static otp_plugin *instance;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void hook_lock(void *ctx) { pthread_mutex_lock(&((otp_plugin *)ctx)->lock); }
static void hook_unlock(void *ctx) { pthread_mutex_unlock(&((otp_plugin *)ctx)->lock); }
/* The core reads the clock on every poll that finds nothing, for timeouts
 * counted in seconds: the coarse clock (a few ms of resolution) is enough
 * and costs a fraction of the precise one. */
static uint64_t hook_now(void *ctx) { (void)ctx; return ots_clock_coarse_ns(); }

static void hook_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    otp_plugin_log_line(level, msg);
}

static otm_hooks hooks_for(otp_plugin *p)
{
    otm_hooks h = {.now = hook_now, .lock = hook_lock, .unlock = hook_unlock,
                   .log = hook_log, .ctx = p};
    return h;
}

static const char *thread_level_name(int level)
{
    if (level == MPI_THREAD_SINGLE)
        return "MPI_THREAD_SINGLE";
    if (level == MPI_THREAD_FUNNELED)
        return "MPI_THREAD_FUNNELED";
    if (level == MPI_THREAD_SERIALIZED)
        return "MPI_THREAD_SERIALIZED";
    return "an unknown thread level";
}

/* The host's program threads and a worker's handler threads call MPI
 * concurrently, so MPI_THREAD_MULTIPLE is required, whoever initialises
 * MPI: the plugin, or the program before its first target construct.
 * 0: a job to serve; -1: none (a job of one rank, or MPI cannot serve;
 * said why). */
static int start_mpi(otp_plugin *p)
{
    int inited = 0, provided = 0, size = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
            return otp_plugin_log(OTM_LOG_ERROR, "MPI_Init_thread failed: 0 devices"), -1;
        p->mpi_owned = 1;
    } else if (MPI_Query_thread(&provided) != MPI_SUCCESS) {
        return otp_plugin_log(OTM_LOG_ERROR, "MPI_Query_thread failed: 0 devices"), -1;
    }
    if (provided < MPI_THREAD_MULTIPLE)
        return otp_plugin_log(OTM_LOG_ERROR, "the MPI library granted %s, not "
                              "MPI_THREAD_MULTIPLE, which the plugin's threads need: "
                              "0 devices; %s", thread_level_name(provided),
                              inited ? "the program initialised MPI itself: request "
                                       "MPI_THREAD_MULTIPLE from MPI_Init_thread"
                                     : "use an MPI built with thread support"), -1;
    /* The node's communicators, duplicated from MPI_COMM_WORLD, return
     * errors; MPI_COMM_WORLD gets its handler back once they exist
     * (keep_world_handler), for the program. */
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &p->world_errhandler);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2)
        return otp_plugin_log(OTM_LOG_WARN, "only one MPI rank, so 0 devices; run "
                              "`omptarget-mpirun -n N ./app` with N >= 2 "
                              "(rank 0 runs the program, the others are devices)"), -1;
    return 0;
}

/* The ranks leave a barrier at nearly the same instant (within about one
 * message latency): that instant is the trace's time origin on every
 * rank, so that traces of ranks on different hosts line up. A collective
 * of the set-up, like the map above, whatever the settings say. */
static uint64_t common_origin(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    return ots_clock_ns();
}

static void hook_trace(void *ctx, otm_event *ev, int point)
{
    ots_trace_record(((otp_plugin *)ctx)->trace, ev, point);
}

/* The counters of OMPTARGET_MPI_INFO, per device of the table rather than
 * per rank; short of memory they stay per rank, which a line says. */
static void count_per_device(otp_plugin *p)
{
    size_t n = p->ndevices ? (size_t)p->ndevices : 1;
    int *rank_of = otp_plugin_calloc(n, sizeof *rank_of);
    uint16_t *unit_of = otp_plugin_calloc(n, sizeof *unit_of);
    for (int i = 0; rank_of && unit_of && i < p->ndevices; i++)
        rank_of[i] = p->devices[i].rank, unit_of[i] = p->devices[i].unit;
    if (!rank_of || !unit_of ||
        ots_trace_set_devices(p->trace, p->ndevices, rank_of, unit_of))
        otp_plugin_log(OTM_LOG_WARN, "out of memory: the counters are per rank");
    otp_plugin_free(rank_of);
    otp_plugin_free(unit_of);
}

static void start_trace(otp_plugin *p)
{
    char err[160];
    uint64_t origin = common_origin();
    p->trace = ots_trace_new(p->settings.trace, p->settings.info, p->node.rank,
                             p->node.size, origin, err, sizeof err);
    if (p->trace)
        p->node.hooks.trace = hook_trace;
    if (p->trace && p->role == OTM_ROLE_HOST)
        count_per_device(p);
    else if (p->settings.trace_len || (p->settings.info && p->node.rank == 0))
        otp_plugin_log(OTM_LOG_ERROR, "rank %d: %s; no trace or counters",
                       p->node.rank, err);
}


/* No memory for the instance itself: 0 devices, or in a launched job,
 * where this rank may be a device and must not run the program, the job
 * is aborted. */
static otp_plugin *no_memory_at_start(void)
{
    int launched = otm_settings_launched(NULL, NULL);
    otp_plugin_log(OTM_LOG_ERROR, "out of memory at start-up%s",
                   launched ? "" : "; 0 devices");
    if (launched)
        otp_exit_abort_job();
    return NULL;
}

/* Waits for the collective `req` for up to `limit` ns (0: for ever);
 * 0 when it completed. */
static int wait_for(MPI_Request *req, uint64_t limit, const otm_settings *s)
{
    ots_idle idle;
    int done = 0;
    uint64_t begin = ots_clock_ns();
    ots_idle_init(&idle, s);
    while (MPI_Test(req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
        if (limit && ots_clock_ns() - begin > limit)
            return -1;
        ots_idle_after(&idle, 0, 0);
    }
    return done ? 0 : -1;
}

/* The ranks' settings agree, or the job is refused on every rank at once.
 * Each rank's card (its values, or the line saying why its own did not
 * load) goes to every rank in one collective that every rank enters
 * whatever its settings, before anything depends on them (the
 * communicators that OMPTARGET_MPI_NUM_COMMS counts are duplicated next,
 * collectively); each rank then judges the same cards the same way. A rank
 * that never enters (another program, a rank that died) is waited for one
 * timeout, then the job is aborted. `err`: this rank's settings did not
 * load, and why. */
static void agree_settings(otp_plugin *p, const char *err)
{
    int size = 0, rank = 0;
    MPI_Request req;
    char msg[1024];
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    otm_settings_card mine, *all = otp_plugin_calloc((size_t)size, sizeof *all);
    if (!all) {
        otp_plugin_log(OTM_LOG_ERROR, "out of memory for the settings of %d ranks", size);
        otp_exit_abort_job();
    }
    otm_settings_card_make(&mine, &p->settings, err);
    /* A rank whose settings did not load holds the defaults. */
    uint64_t limit = p->settings.core.timeout_ns;
    if (MPI_Iallgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine,
                       MPI_BYTE, MPI_COMM_WORLD, &req) != MPI_SUCCESS ||
        wait_for(&req, limit, &p->settings)) {
        otp_plugin_log(OTM_LOG_ERROR, "rank %d: the ranks did not all start the plugin "
                       "within %.3g s (OMPTARGET_MPI_TIMEOUT): is every rank the same "
                       "program?", rank, (double)limit / 1e9);
        otp_exit_abort_job();
    }
    otm_status st = otm_settings_judge(all, size, msg, sizeof msg);
    otp_plugin_free(all);
    if (st)
        otp_exit_refuse_job(p, msg);
}

/* OMPTARGET_MPI_STDERR_TO_STDOUT: rank 0's stderr becomes its stdout, so
 * that what the program, libomptarget and the plugin write to the two
 * reaches a caller who merged them (2>&1) in the order written. mpiexec
 * forwards a rank's two streams apart, and on a busy machine a line
 * written to stderr could come out after stdout lines written later. */
static void merge_stderr(void)
{
    fflush(stderr);
    if (dup2(STDOUT_FILENO, STDERR_FILENO) < 0)
        otp_plugin_log(OTM_LOG_WARN, "OMPTARGET_MPI_STDERR_TO_STDOUT: cannot make "
                       "stderr stdout (%s); they stay apart", strerror(errno));
}

static otp_plugin *start(void)
{
    char err[256];
    otp_plugin *p = otp_plugin_calloc(1, sizeof *p);
    if (!p)
        return no_memory_at_start();
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->pool_lock, NULL);
    pthread_mutex_init(&p->images_lock, NULL);
    pthread_mutex_init(&p->wait_lock, NULL);
    int launched = otm_settings_launched(NULL, NULL);
    /* NULL: the settings are the process's environment. A bad value in a
     * launched job is judged with the other ranks' (agree_settings). */
    int bad = otm_settings_load(&p->settings, NULL, NULL, err, sizeof err) != OTM_OK;
    if (bad && !launched) {
        otp_plugin_log(OTM_LOG_ERROR, "%s; 0 devices", err);
        return otp_plugin_free(p), NULL;
    }
    otp_plugin_log_level(p->settings.log_level);
    /* Without a launcher's mark MPI would start a singleton job of one
     * rank: say how to launch instead. */
    if (!launched) {
        otp_plugin_log(OTM_LOG_WARN, "not started by an MPI launcher, so 0 devices; "
                       "run `omptarget-mpirun -n N ./app` (N >= 2)");
        return otp_plugin_free(p), NULL;
    }
    otm_hooks h = hooks_for(p);
    /* A job of one rank, or an MPI that cannot serve (said why): 0
     * devices, as for a program that holds MPI at a lower thread level. */
    if (start_mpi(p)) {
        if (bad)
            otp_exit_refuse_job(p, err);
        if (p->mpi_owned && !otp_program_leave_mpi())
            MPI_Finalize();
        return otp_plugin_free(p), NULL;
    }
    agree_settings(p, bad ? err : NULL);
    if (otm_node_init(&p->node, &p->settings.core, &h))
        otp_exit_abort_job();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, p->world_errhandler);
    p->role = p->node.rank == 0 ? OTM_ROLE_HOST : OTM_ROLE_WORKER;
    if (p->role == OTM_ROLE_HOST && p->settings.stderr_to_stdout)
        merge_stderr();
    if (p->role == OTM_ROLE_HOST)
        otp_host_region_hooks(&p->node.hooks);
    otp_map_hold_rank_file(p);
    otp_map_gather(p);
    if (p->role == OTM_ROLE_HOST)
        otp_map_watch_host(p);
    otp_addresses_share(p);
    start_trace(p);
    if (p->role == OTM_ROLE_WORKER)
        otp_test_kill_start(p);
    if (p->role == OTM_ROLE_HOST && otp_host_start(p)) {
        otp_plugin_log(OTM_LOG_ERROR, "out of memory for its %d device(s)",
                       p->node.size - 1);
        otp_exit_abort_job();            /* the workers already serve: abort them */
    }
    if (p->role == OTM_ROLE_HOST)
        otp_program_attach(p);
    return p;
}

static void start_once(void)
{
    otp_exit_cover_aborts();
    instance = start();
}

otp_plugin *otp_plugin_get(void)
{
    pthread_once(&once, start_once);
    return instance;
}

otp_plugin *otp_plugin_host(void)
{
    otp_plugin *p = otp_plugin_get();
    return p && p->role == OTM_ROLE_HOST ? p : NULL;
}

/* Before the first region: faults in regions become errors, and what the
 * regions print is captured for the host (OMPTARGET_MPI_FORWARD_OUTPUT). */
void otp_worker_begin(otp_plugin *p)
{
    char err[256], prefix[80];
    if (p->settings.forward_output) {
        if (otd_output_start(&p->output, err, sizeof err))
            otp_plugin_log(OTM_LOG_WARN, "rank %d: %s; the regions' output goes to "
                           "this rank's own descriptors", p->node.rank, err);
        else
            otp_plugin_log_to(otd_output_fd(p->output, 2));
    }
    snprintf(prefix, sizeof prefix, "omptarget-mpi: rank %d (device %d): ", p->node.rank,
             p->node.rank - 1);
    int fd = p->output ? otd_output_fd(p->output, 2) : 2;
    if (otd_fault_install(fd, prefix))
        otp_plugin_log(OTM_LOG_WARN, "rank %d: cannot catch faults in target regions",
                       p->node.rank);
}

