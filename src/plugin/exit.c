/*
 * exit.c - how the plugin ends a process: stdio written, libomp's
 * registration removed, the coverage counters dumped, then _exit; and the
 * two ends of a job that cannot start (a bad setting: every rank refuses
 * it; a rank that cannot take its part: the job is aborted).
 */
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>

#include "../shell/idle.h"
#include "plugin.h"

#ifdef OTM_COVERAGE
/* libgcov: writes the .gcda files, which _exit alone would skip. */
void __gcov_dump(void);
#endif

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
void otp_exit_dump_coverage(void)
{
#ifdef OTM_COVERAGE
    __gcov_dump();
#endif
}

#ifdef OTM_COVERAGE
static void dump_then_abort(int signo)
{
    __gcov_dump();
    signal(signo, SIG_DFL);
    raise(signo);
}
#endif

/* A coverage build only (else nothing): the counters are written when the
 * process aborts too, as libomptarget does on a refused program, so that
 * the paths leading there are counted. */
void otp_exit_cover_aborts(void)
{
#ifdef OTM_COVERAGE
    signal(SIGABRT, dump_then_abort);
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
void otp_exit_drain_output(const otm_settings *s)
{
    ots_idle idle;
    ots_idle_init(&idle, s);
    fflush(NULL);
    uint64_t until = ots_clock_ns() + 2000000000u;
    while (output_unread() && ots_clock_ns() < until)
        ots_idle_after(&idle, 0, 0);
}

/* The end of a process the plugin decides: what stdio holds is written,
 * libomp's registration removed, coverage counters dumped. */
_Noreturn void otp_exit_process(int status)
{
    fflush(NULL);
    drop_libomp_registration();
    otp_exit_dump_coverage();
    _exit(status);
}

/* A bad setting in a job a launcher started: no rank may run the program
 * instead (a device rank never runs main), so the job ends with status 1.
 * Every rank is here together: they judged each other's settings
 * (agree_settings), or this one is alone (a job of one rank, an MPI that
 * every rank finds wanting). Only rank 0 says why, and MPI is finalised
 * in order: no rank waits in a collective another will not enter. */
_Noreturn void otp_exit_refuse_job(otp_plugin *p, const char *why)
{
    int inited = 0, provided = 0, rank = 0;
    MPI_Initialized(&inited);
    if (!inited &&
        MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS)
        p->mpi_owned = inited = 1;
    if (inited)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        otp_plugin_log(OTM_LOG_ERROR, "%s; the job ends (status 1) before any rank "
                       "runs the program", why);
    /* Open MPI's mpirun kills the ranks still finalising once one has
     * exited with status 1: this process's registration goes first. */
    drop_libomp_registration();
    if (p->mpi_owned)
        MPI_Finalize();
    otp_exit_process(1);
}

/* A rank that cannot take its part in a launched job (its node did not
 * start, memory was short): returning would run main here, and the others
 * wait in the set-up's collectives, so the job is aborted. Before MPI is
 * up (no memory for the instance) it is initialised for MPI_Abort. */
_Noreturn void otp_exit_abort_job(void)
{
    int rank = -1, inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited)
        MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    otp_plugin_log(OTM_LOG_ERROR, "rank %d cannot take part in the job: it is aborted "
                   "(status 1)", rank);
    drop_libomp_registration();
    otp_exit_dump_coverage();
    MPI_Abort(MPI_COMM_WORLD, 1);
    otp_exit_process(1);
}
