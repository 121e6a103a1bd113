/*
 * lifecycle.c - the plugin's life in this process, from its start to the
 * process's end, for both roles.
 *
 * Start (the first call of libomptarget, once): the settings, MPI, the
 * node, and the role: rank 0 is the host, every other rank a worker. Then
 * the collectives of the set-up every rank makes (the device map, the
 * trace's time origin).
 * The worker's begin and end around serving (worker.c's threads): the
 * regions' output captured and their faults caught before the first
 * region; after EXIT, MPI_Finalize and _exit.
 * The host's end: at the program's end (otm_host_end, from rtl.c), or as
 * soon as a region faulted or called exit() (otm_host_end_if_faulted).
 */
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>

#include "../shell/idle.h"
#include "../shell/trace.h"
#include "otm/fault.h"
#include "otm/output.h"
#include "otm/pmpi.h"
#include "plugin.h"

#ifdef OTM_COVERAGE
/* libgcov: writes the .gcda files, which _exit alone would skip. */
void __gcov_dump(void);
#endif

static otm_plugin *instance;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* ---- start ---------------------------------------------------------------- */

static void hook_lock(void *ctx) { pthread_mutex_lock(&((otm_plugin *)ctx)->lock); }
static void hook_unlock(void *ctx) { pthread_mutex_unlock(&((otm_plugin *)ctx)->lock); }
/* The core reads the clock on every poll that finds nothing, for timeouts
 * counted in seconds: the coarse clock (a few ms of resolution) is enough
 * and costs a fraction of the precise one. */
static uint64_t hook_now(void *ctx) { (void)ctx; return otm_clock_coarse_ns(); }

static void hook_log(void *ctx, int level, const char *msg)
{
    (void)ctx;
    otm_plugin_log_line(level, msg);
}

static otm_hooks hooks_for(otm_plugin *p)
{
    otm_hooks h = {.now = hook_now, .lock = hook_lock, .unlock = hook_unlock,
                   .log = hook_log, .ctx = p};
    return h;
}

/* An MPI launcher leaves its mark in the environment. Without one, MPI would
 * start a singleton job of one rank: say how to launch instead. */
static int under_launcher(void)
{
    static const char *const marks[] = {
        "PMI_RANK", "PMI_SIZE", "PMI_FD", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
        "MPI_LOCALNRANKS", "OMPTARGET_MPI_LAUNCHER"};
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
        if (getenv(marks[i]))
            return 1;
    return 0;
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
static int start_mpi(otm_plugin *p)
{
    int inited = 0, provided = 0, size = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
            return otm_plugin_log(OTM_LOG_ERROR, "MPI_Init_thread failed: 0 devices"), -1;
        p->mpi_owned = 1;
    } else if (MPI_Query_thread(&provided) != MPI_SUCCESS) {
        return otm_plugin_log(OTM_LOG_ERROR, "MPI_Query_thread failed: 0 devices"), -1;
    }
    if (provided < MPI_THREAD_MULTIPLE)
        return otm_plugin_log(OTM_LOG_ERROR, "the MPI library granted %s, not "
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
        return otm_plugin_log(OTM_LOG_WARN, "only one MPI rank, so 0 devices; run "
                              "`omptarget-mpirun -n N ./app` with N >= 2 "
                              "(rank 0 runs the program, the others are devices)"), -1;
    return 0;
}

/* Every rank sends its host name and pid to rank 0 at start-up (a
 * collective of the set-up, like the communicator duplications), so that
 * OMPTARGET_MPI_INFO can print which process serves which device. */
typedef struct rank_card {
    char host[72];
    int64_t pid;
} rank_card;

static _Noreturn void abort_job(void);

/* OMPTARGET_MPI_MAP: the map as a file, for whoever must name the ranks
 * of a job that ended before the host's end began (the launcher, when the
 * MPI runtime killed the job because a rank died): a line a rank, the
 * count (the map is whole), then `end` from map_end. A map not written is
 * a warning: the job runs without it. */
static void write_map(const otm_plugin *p, const rank_card *all)
{
    if (!p->settings.map_len)
        return;
    FILE *f = fopen(p->settings.map, "we");
    int ok = f != NULL;
    for (int r = 0; ok && r < p->node.size; r++)
        ok = fprintf(f, "rank %d device %d pid %lld host %s\n", r, r - 1,
                     (long long)all[r].pid, all[r].host) > 0;
    ok = ok && fprintf(f, "ranks %d\n", p->node.size) > 0;     /* it is whole */
    if (f && fclose(f))
        ok = 0;
    if (!ok)
        otm_plugin_log(OTM_LOG_WARN, "cannot write the job's map to %s: %s",
                       p->settings.map, strerror(errno));
}

/* With a map, each rank holds MAP.R (R: its rank) open for writing for
 * as long as it lives: the kernel closes it as the process ends, whatever
 * ends it, and the launcher's witness (tools/witness.c), watching the
 * close events, learns which rank ended first. The descriptor is never
 * closed; without the file there is no witness. */
static void hold_rank_file(const otm_plugin *p)
{
    char path[sizeof p->settings.map + 16];
    if (!p->settings.map_len)
        return;
    snprintf(path, sizeof path, "%s.%d", p->settings.map, p->node.rank);
    if (open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) < 0)
        otm_plugin_log(OTM_LOG_INFO, "rank %d: cannot open %s (%s): the launcher's "
                       "witness will not see this rank end", p->node.rank, path,
                       strerror(errno));
}

/* The host's end begins: from here on it says itself how the job ends. */
static void map_end(const otm_plugin *p)
{
    FILE *f = p->settings.map_len ? fopen(p->settings.map, "ae") : NULL;
    if (f) {
        fputs("end\n", f);
        fclose(f);
    }
}

/* The status the host ends the job with, when the plugin decides it (a
 * fault, a lost device): the launcher exits with it, whatever the MPI
 * runtime reports (an MPI_Abort, a rank it killed). */
static void map_status(const otm_plugin *p, int status)
{
    FILE *f = p->settings.map_len ? fopen(p->settings.map, "ae") : NULL;
    if (f) {
        fprintf(f, "status %d\n", status);
        fclose(f);
    }
}

static void device_map(otm_plugin *p)
{
    rank_card me = {.pid = (int64_t)getpid()}, *all = NULL;
    gethostname(me.host, sizeof me.host - 1);
    /* The other ranks are in the gather already, which needs the buffer. */
    if (p->node.rank == 0 &&
        !(all = otm_plugin_calloc((size_t)p->node.size, sizeof *all))) {
        otm_plugin_log(OTM_LOG_ERROR, "out of memory for the device map");
        abort_job();
    }
    int rc = MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, 0,
                        MPI_COMM_WORLD);
    if (all && rc == MPI_SUCCESS)
        write_map(p, all);
    if (all && rc == MPI_SUCCESS && p->settings.info) {
        otm_plugin_log(OTM_LOG_ERROR, "host program: rank 0 on %s, pid %lld", all[0].host,
                       (long long)all[0].pid);
        for (int r = 1; r < p->node.size; r++)
            otm_plugin_log(OTM_LOG_ERROR, "device %d: rank %d on %s, pid %lld", r - 1, r,
                           all[r].host, (long long)all[r].pid);
    }
    otm_plugin_free(all);
}

/* The ranks leave a barrier at nearly the same instant (within about one
 * message latency): that instant is the trace's time origin on every
 * rank, so that traces of ranks on different hosts line up. A collective
 * of the set-up, like the map above, whatever the settings say. */
static uint64_t common_origin(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    return otm_clock_ns();
}

static void hook_trace(void *ctx, otm_event *ev, int point)
{
    otm_trace_record(((otm_plugin *)ctx)->trace, ev, point);
}

static void start_trace(otm_plugin *p)
{
    char err[160];
    uint64_t origin = common_origin();
    p->trace = otm_trace_new(p->settings.trace, p->settings.info, p->node.rank,
                             p->node.size, origin, err, sizeof err);
    if (p->trace)
        p->node.hooks.trace = hook_trace;
    else if (p->settings.trace_len || (p->settings.info && p->node.rank == 0))
        otm_plugin_log(OTM_LOG_ERROR, "rank %d: %s; no trace or counters",
                       p->node.rank, err);
}

/* The test hook OTM_TEST_KILL_AT=KIND (docs/testing.md): the device rank
 * OTM_TEST_KILL_RANK (default 1) kills itself with SIGKILL the moment the
 * first event of that kind (ALLOC ... PING, as the counters name them)
 * reaches its gate, as a rank killed in the middle of that operation: the
 * fault tests on real MPI use it. The trace, if any, still hears every
 * event. */
static void hook_kill(void *ctx, otm_event *ev, int point)
{
    otm_plugin *p = ctx;
    if (point == OTM_TRACE_BEGIN && ev->side == OTM_DEST && ev->kind == p->test_kill_kind)
        raise(SIGKILL);
    if (p->trace)
        otm_trace_record(p->trace, ev, point);
}

static void start_kill_hook(otm_plugin *p)
{
    const char *kind = getenv("OTM_TEST_KILL_AT"), *rank = getenv("OTM_TEST_KILL_RANK");
    if (!kind || atoi(rank ? rank : "1") != p->node.rank)
        return;
    for (int k = 1; k < OTM_KIND_END; k++)
        if (!strcmp(kind, otm_kind_name(k)))
            p->test_kill_kind = k;
    if (!p->test_kill_kind) {
        otm_plugin_log(OTM_LOG_ERROR, "test hook: OTM_TEST_KILL_AT=%s: not a kind of "
                       "event; the hook is off", kind);
        return;
    }
    otm_plugin_log(OTM_LOG_WARN, "test hook: rank %d dies of SIGKILL at its first %s",
                   p->node.rank, kind);
    p->node.hooks.trace = hook_kill;
}

/* ---- ending the process ------------------------------------------------------ */

/* libomp registers itself in /dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid> and
 * removes the file in its destructor, which _exit skips: this process is
 * ending, so its registration goes now (the name is this process's own). */
static void drop_libomp_registration(void)
{
    char path[96];
    snprintf(path, sizeof path, "/dev/shm/__KMP_REGISTERED_LIB_%d_%d", (int)getpid(),
             (int)getuid());
    unlink(path);
}

/* Writes the coverage counters (a coverage build only), which _exit and
 * MPI_Abort would skip. */
static void dump_coverage(void)
{
#ifdef OTM_COVERAGE
    __gcov_dump();
#endif
}

/* Bytes written to stdout or stderr that their reader has not read yet:
 * only a pipe says (an MPI launcher reads its ranks' output through one). */
static int output_unread(void)
{
    for (int fd = 1; fd <= 2; fd++) {
        struct stat st;
        int queued = 0;
        if (!fstat(fd, &st) && S_ISFIFO(st.st_mode) && !ioctl(fd, FIONREAD, &queued) &&
            queued > 0)
            return 1;
    }
    return 0;
}

/* Before the host's MPI_Abort: the launcher has read what rank 0 wrote.
 * The abort has it kill the job, and the lines written just before, those
 * that say why, were lost once under MPICH. Waits in the idle policy, for
 * at most 2 s. */
static void let_output_drain(const otm_settings *s)
{
    otm_idle idle;
    otm_idle_init(&idle, s);
    fflush(NULL);
    uint64_t until = otm_clock_ns() + 2000000000u;
    while (output_unread() && otm_clock_ns() < until)
        otm_idle_after(&idle, 0, 0);
}

/* The end of a process the plugin decides: what stdio holds is written,
 * libomp's registration removed, coverage counters dumped. */
static _Noreturn void end_process(int status)
{
    fflush(NULL);
    drop_libomp_registration();
    dump_coverage();
    _exit(status);
}

/* A bad setting in a job a launcher started: no rank may run the program
 * instead (a device rank never runs main), so the job ends with status 1.
 * Every rank is here together: they judged each other's settings
 * (agree_settings), or this one is alone (a job of one rank, an MPI that
 * every rank finds wanting). Only rank 0 says why, and MPI is finalised
 * in order: no rank waits in a collective another will not enter. */
static _Noreturn void refuse_job(otm_plugin *p, const char *why)
{
    int inited = 0, provided = 0, rank = 0;
    MPI_Initialized(&inited);
    if (!inited &&
        MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS)
        p->mpi_owned = inited = 1;
    if (inited)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        otm_plugin_log(OTM_LOG_ERROR, "%s; the job ends (status 1) before any rank "
                       "runs the program", why);
    /* Open MPI's mpirun kills the ranks still finalising once one has
     * exited with status 1: this process's registration goes first. */
    drop_libomp_registration();
    if (p->mpi_owned)
        MPI_Finalize();
    end_process(1);
}

/* A rank that cannot take its part in a launched job (its node did not
 * start, memory was short): returning would run main here, and the others
 * wait in the set-up's collectives, so the job is aborted. Before MPI is
 * up (no memory for the instance) it is initialised for MPI_Abort. */
static _Noreturn void abort_job(void)
{
    int rank = -1, inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited)
        MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    otm_plugin_log(OTM_LOG_ERROR, "rank %d cannot take part in the job: it is aborted "
                   "(status 1)", rank);
    drop_libomp_registration();
    dump_coverage();
    MPI_Abort(MPI_COMM_WORLD, 1);
    end_process(1);
}

/* ---- the program's MPI (src/pmpi, otm/pmpi.h) -------------------------------- */

static _Noreturn void end_job(otm_plugin *p, int status, const char *why);

/* The program's MPI_Finalize: the devices end in order, then MPI. */
static int program_finalize(void)
{
    otm_plugin *p = instance;
    p->program_finalized = 1;
    otm_host_end(p);
    int done = 0;
    MPI_Finalized(&done);
    return done ? MPI_SUCCESS : MPI_Finalize();
}

/* The layer said why (an MPI_ERRORS_ARE_FATAL error). */
static _Noreturn void program_end_job(int status)
{
    end_job(instance, status, NULL);
}

static otm_pmpi_host program_mpi = {.finalize = program_finalize,
                                    .end_job = program_end_job};

/* The layer, when the launcher preloaded it, is in the global scope; this
 * plugin, dlopen()ed by libomptarget, is not (it exports only
 * __tgt_rtl_*), so the plugin hands the layer what it needs. */
static otm_pmpi_attach_fn *program_mpi_layer(void)
{
    return (otm_pmpi_attach_fn *)(uintptr_t)dlsym(RTLD_DEFAULT, OTM_PMPI_ATTACH);
}

static void attach_program_mpi(otm_plugin *p)
{
    otm_pmpi_attach_fn *attach = program_mpi_layer();
    program_mpi.size = p->node.size;
    if (attach)
        attach(&program_mpi);
}

static void detach_program_mpi(void)
{
    otm_pmpi_attach_fn *attach = program_mpi_layer();
    if (attach)
        attach(NULL);
}

/* A job of one rank has no devices: under the layer, the MPI the plugin
 * initialised stays up for the program, whose own MPI_Init then succeeds;
 * it is finalised by the program, else at the process's exit. */
static int finalize_once(void)
{
    int done = 0;
    MPI_Finalized(&done);
    return done ? MPI_SUCCESS : MPI_Finalize();
}

static void finalize_at_exit(void)
{
    (void)finalize_once();
}

static _Noreturn void end_lone_job(int status)
{
    end_process(status);
}

/* 1 when the layer took MPI over for the program, 0 when there is none. */
static int leave_mpi_to_program(void)
{
    static otm_pmpi_host lone = {.size = 1, .finalize = finalize_once,
                                 .end_job = end_lone_job};
    otm_pmpi_attach_fn *attach = program_mpi_layer();
    if (!attach || atexit(finalize_at_exit))
        return 0;
    attach(&lone);
    return 1;
}

/* No memory for the instance itself: 0 devices, or in a launched job,
 * where this rank may be a device and must not run the program, the job
 * is aborted. */
static otm_plugin *no_memory_at_start(void)
{
    int launched = under_launcher();
    otm_plugin_log(OTM_LOG_ERROR, "out of memory at start-up%s",
                   launched ? "" : "; 0 devices");
    if (launched)
        abort_job();
    return NULL;
}

/* Waits for the collective `req` for up to `limit` ns (0: for ever);
 * 0 when it completed. */
static int wait_for(MPI_Request *req, uint64_t limit, const otm_settings *s)
{
    otm_idle idle;
    int done = 0;
    uint64_t begin = otm_clock_ns();
    otm_idle_init(&idle, s);
    while (MPI_Test(req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
        if (limit && otm_clock_ns() - begin > limit)
            return -1;
        otm_idle_after(&idle, 0, 0);
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
static void agree_settings(otm_plugin *p, const char *err)
{
    int size = 0, rank = 0;
    MPI_Request req;
    char msg[1024];
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    otm_settings_card mine, *all = otm_plugin_calloc((size_t)size, sizeof *all);
    if (!all) {
        otm_plugin_log(OTM_LOG_ERROR, "out of memory for the settings of %d ranks", size);
        abort_job();
    }
    otm_settings_card_make(&mine, &p->settings, err);
    /* A rank whose settings did not load holds the defaults. */
    uint64_t limit = p->settings.core.timeout_ns;
    if (MPI_Iallgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine,
                       MPI_BYTE, MPI_COMM_WORLD, &req) != MPI_SUCCESS ||
        wait_for(&req, limit, &p->settings)) {
        otm_plugin_log(OTM_LOG_ERROR, "rank %d: the ranks did not all start the plugin "
                       "within %.3g s (OMPTARGET_MPI_TIMEOUT): is every rank the same "
                       "program?", rank, (double)limit / 1e9);
        abort_job();
    }
    otm_status st = otm_settings_judge(all, size, msg, sizeof msg);
    otm_plugin_free(all);
    if (st)
        refuse_job(p, msg);
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
        otm_plugin_log(OTM_LOG_WARN, "OMPTARGET_MPI_STDERR_TO_STDOUT: cannot make "
                       "stderr stdout (%s); they stay apart", strerror(errno));
}

static otm_plugin *start(void)
{
    char err[256];
    otm_plugin *p = otm_plugin_calloc(1, sizeof *p);
    if (!p)
        return no_memory_at_start();
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->pool_lock, NULL);
    pthread_mutex_init(&p->images_lock, NULL);
    pthread_mutex_init(&p->wait_lock, NULL);
    int launched = under_launcher();
    /* NULL: the settings are the process's environment. A bad value in a
     * launched job is judged with the other ranks' (agree_settings). */
    int bad = otm_settings_load(&p->settings, NULL, NULL, err, sizeof err) != OTM_OK;
    if (bad && !launched) {
        otm_plugin_log(OTM_LOG_ERROR, "%s; 0 devices", err);
        return otm_plugin_free(p), NULL;
    }
    otm_plugin_log_level(p->settings.log_level);
    if (!launched) {
        otm_plugin_log(OTM_LOG_WARN, "not started by an MPI launcher, so 0 devices; "
                       "run `omptarget-mpirun -n N ./app` (N >= 2)");
        return otm_plugin_free(p), NULL;
    }
    otm_hooks h = hooks_for(p);
    /* A job of one rank, or an MPI that cannot serve (said why): 0
     * devices, as for a program that holds MPI at a lower thread level. */
    if (start_mpi(p)) {
        if (bad)
            refuse_job(p, err);
        if (p->mpi_owned && !leave_mpi_to_program())
            MPI_Finalize();
        return otm_plugin_free(p), NULL;
    }
    agree_settings(p, bad ? err : NULL);
    if (otm_node_init(&p->node, &p->settings.core, &h))
        abort_job();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, p->world_errhandler);
    p->role = p->node.rank == 0 ? OTM_ROLE_HOST : OTM_ROLE_WORKER;
    if (p->role == OTM_ROLE_HOST && p->settings.stderr_to_stdout)
        merge_stderr();
    if (p->role == OTM_ROLE_HOST)
        otm_host_region_hooks(&p->node.hooks);
    hold_rank_file(p);
    device_map(p);
    start_trace(p);
    if (p->role == OTM_ROLE_WORKER)
        start_kill_hook(p);
    if (p->role == OTM_ROLE_HOST && otm_host_start(p)) {
        otm_plugin_log(OTM_LOG_ERROR, "out of memory for its %d device(s)",
                       p->node.size - 1);
        abort_job();            /* the workers already serve: abort them */
    }
    if (p->role == OTM_ROLE_HOST)
        attach_program_mpi(p);
    return p;
}

static void start_once(void)
{
    instance = start();
}

otm_plugin *otm_plugin_get(void)
{
    pthread_once(&once, start_once);
    return instance;
}

otm_plugin *otm_plugin_host(void)
{
    otm_plugin *p = otm_plugin_get();
    return p && p->role == OTM_ROLE_HOST ? p : NULL;
}

/* ---- the trace, at either role's end --------------------------------------- */

static void say(void *ctx, const char *line)
{
    (void)ctx;
    otm_plugin_log(OTM_LOG_ERROR, "%s", line);
}

void otm_plugin_trace_end(otm_plugin *p)
{
    char msg[1200];
    otm_trace *t = p->trace;
    if (!t)
        return;
    p->node.hooks.trace = NULL;
    p->trace = NULL;
    if (p->settings.trace_len) {
        int rc = otm_trace_write(t, msg, sizeof msg);
        if (rc)
            otm_plugin_log(OTM_LOG_ERROR, "rank %d: %s", p->node.rank, msg);
        else
            otm_plugin_log(p->node.rank == 0 ? OTM_LOG_ERROR : OTM_LOG_INFO,
                           "rank %d: trace written to %s (%llu spans)", p->node.rank,
                           msg, (unsigned long long)otm_trace_spans(t));
        if (otm_trace_dropped(t))
            otm_plugin_log(OTM_LOG_WARN, "rank %d: the trace was full: %llu spans "
                           "dropped (kept the first %u)", p->node.rank,
                           (unsigned long long)otm_trace_dropped(t), OTM_TRACE_CAPACITY);
    }
    if (p->settings.info)
        otm_trace_report(t, say, NULL);
    otm_trace_free(t);
}

/* ---- the host's end ---------------------------------------------------------- */

/* EXIT to every worker, until each acknowledged it or gave up (the core's
 * exit protocol). */
static void exit_workers(otm_plugin *p)
{
    otm_idle idle;
    otm_idle_init(&idle, &p->settings);
    otm_host_exit_begin(&p->node);
    while (p->node.life != OTM_LIFE_DONE)
        otm_idle_after(&idle, otm_host_exit_progress(&p->node), 0);
    if (p->node.exit_failures)
        otm_plugin_log(OTM_LOG_ERROR, "%d device(s) did not acknowledge the exit",
                       p->node.exit_failures);
    else
        otm_plugin_log(OTM_LOG_INFO, "rank 0: all %d devices acknowledged the exit",
                       p->ndevices);
}

/* The status recorded for the job's end (otm_host_end_with), or -1. */
static int recorded_status(otm_plugin *p)
{
    return __atomic_load_n(&p->end_status, __ATOMIC_ACQUIRE) - 1;
}

/* A thread that may not take part in an end that ends the process: it
 * waits for that, holding nothing. */
static _Noreturn void wait_for_the_end(void)
{
    for (;;)
        pause();
}

void otm_host_end_wait(otm_plugin *p)
{
    if (recorded_status(p) >= 0)
        wait_for_the_end();
}

/* The end itself, on the thread the node elected. The other threads
 * finish what they are inside of first: every wait ends, by a reply or a
 * timeout. When the process ends right after (`process_ends`, or a status
 * recorded meanwhile) the devices stay allocated: a thread on its way to
 * the node's door may still read them. */
static void run_end(otm_plugin *p, int process_ends)
{
    otm_idle idle;
    otm_idle_init(&idle, &p->settings);
    assert(!otm_plugin_inside());   /* it would wait for itself */
    while (!otm_host_end_alone(&p->node))
        otm_idle_after(&idle, 0, 0);
    map_end(p);
    detach_program_mpi();
    exit_workers(p);
    otm_plugin_trace_end(p);
    int status = recorded_status(p);
    if (status >= 0)
        map_status(p, status);
    if (!process_ends && status < 0)
        otm_host_release(p);
    /* A worker that never heard EXIT would keep MPI_Finalize waiting for
     * ever: end the job instead of hanging, with the status said. */
    if (p->node.exit_failures) {
        dump_coverage();
        let_output_drain(&p->settings);
        MPI_Abort(MPI_COMM_WORLD, status > 0 ? status : 1);
    }
    otm_node_fini(&p->node);
    otm_plugin_alloc_report();
    if (p->mpi_owned)
        MPI_Finalize();
    otm_node_release(&p->node);
}

/* The job first (run_end), then this process, with the status recorded:
 * the first recorded wins, whoever records later. A thread that loses the
 * election waits for the winner to end the process. */
static _Noreturn void end_job(otm_plugin *p, int status, const char *why)
{
    otm_host_end_with(p, status, why);
    if (!otm_host_end_claim(&p->node))
        wait_for_the_end();
    status = recorded_status(p);
    why = p->end_why;
    if (why)
        otm_plugin_log(OTM_LOG_ERROR, "%s: the job ends with exit status %d", why,
                       status);
    run_end(p, 1);
    end_process(status);
}

void otm_host_end(otm_plugin *p)
{
    if (!otm_host_end_claim(&p->node)) {
        otm_host_end_wait(p);
        return;
    }
    run_end(p, 0);
    int status = recorded_status(p);
    if (status >= 0) {
        const char *why = p->end_why;
        if (why)
            otm_plugin_log(OTM_LOG_ERROR, "%s: the job ends with exit status %d", why,
                           status);
        end_process(status);
    }
}

void otm_host_end_if_faulted(otm_plugin *p)
{
    int status = recorded_status(p);
    if (status >= 0)
        end_job(p, status, NULL);
}

/* ---- the worker's begin and end ---------------------------------------------- */

/* Before the first region: faults in regions become errors, and what the
 * regions print is captured for the host (OMPTARGET_MPI_FORWARD_OUTPUT). */
void otm_worker_begin(otm_plugin *p)
{
    char err[256], prefix[80];
    if (p->settings.forward_output) {
        if (otm_output_start(&p->output, err, sizeof err))
            otm_plugin_log(OTM_LOG_WARN, "rank %d: %s; the regions' output goes to "
                           "this rank's own descriptors", p->node.rank, err);
        else
            otm_plugin_log_to(otm_output_fd(p->output, 2));
    }
    snprintf(prefix, sizeof prefix, "omptarget-mpi: rank %d (device %d): ", p->node.rank,
             p->node.rank - 1);
    int fd = p->output ? otm_output_fd(p->output, 2) : 2;
    if (otm_fault_install(fd, prefix))
        otm_plugin_log(OTM_LOG_WARN, "rank %d: cannot catch faults in target regions",
                       p->node.rank);
}

static uint64_t events_served(const otm_plugin *p)
{
    uint64_t served = 0;
    for (int k = 0; k < OTM_KIND_END; k++)
        served += p->node.stats.events[k];
    return served;
}

void otm_worker_end(otm_plugin *p)
{
    otm_plugin_trace_end(p);
    uint64_t served = events_served(p);
    otm_node_fini(&p->node);
    int rc = p->mpi_owned && MPI_Finalize() != MPI_SUCCESS;
    otm_node_release(&p->node);
    /* What the regions printed and nobody took goes out now. */
    otm_output_stop(p->output);
    p->output = NULL;
    otm_plugin_log_to(2);
    otm_plugin_alloc_report();
    /* Tests read this line to know every worker really finished. */
    otm_plugin_log(OTM_LOG_INFO, "rank %d exited cleanly after %llu events",
                   p->node.rank, (unsigned long long)served);
    end_process(rc);
}
