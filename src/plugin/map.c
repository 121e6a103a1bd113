/*
 * map.c - the job's map: which process (host, pid) is which rank and
 * device, gathered at start-up on rank 0 for OMPTARGET_MPI_INFO and for
 * the map file OMPTARGET_MPI_MAP, which the launcher reads when a job ends
 * before the host could say how (the lines `end` and `status`), and the
 * file MAP.R each rank holds open while it lives, and how rank 0 itself
 * ended (the lines `rank0 exit N` and `rank0 signal N`).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "plugin.h"

/* OMPTARGET_MPI_MAP: the map as a file, for whoever must name the ranks
 * of a job that ended before the host's end began (the launcher, when the
 * MPI runtime killed the job because a rank died): a line a rank, the
 * count (the map is whole), then `end` from map_end. A map not written is
 * a warning: the job runs without it. */
static void write_map(otp_plugin *p, const otp_rank_card *all)
{
    if (!p->settings.map_len)
        return;
    FILE *f = fopen(p->settings.map, "we");
    int ok = f != NULL;
    for (int r = 0; ok && r < p->node.size; r++) {
        otp_device *first = NULL;
        char dev[16] = "-1";                        /* rank 0: the program */
        if (r && otp_devices_of_rank(p, r, &first))
            snprintf(dev, sizeof dev, "%d", first->id);
        else if (r)
            snprintf(dev, sizeof dev, "none");      /* CPU_DEVICES=off, no plugin */
        ok = fprintf(f, "rank %d device %s pid %lld host %s\n", r, dev,
                     (long long)all[r].pid, all[r].host) > 0;
    }
    /* The proxied devices, a line each (the launcher reads the ranks'). */
    for (int i = 0; ok && i < p->ndevices; i++) {
        const otp_device *d = &p->devices[i];
        if (d->unit)
            ok = fprintf(f, "device %d rank %d unit %u plugin %s local %d host %s\n", d->id,
                         d->rank, d->unit, d->plugin, d->local, all[d->rank].host) > 0;
    }
    ok = ok && fprintf(f, "ranks %d\n", p->node.size) > 0;     /* it is whole */
    if (f && fclose(f))
        ok = 0;
    if (!ok)
        otp_plugin_log(OTM_LOG_WARN, "cannot write the job's map to %s: %s",
                       p->settings.map, strerror(errno));
}

/* With a map, each rank holds MAP.R (R: its rank) open for writing for
 * as long as it lives: the kernel closes it as the process ends, whatever
 * ends it, and the launcher's witness (tools/witness.c), watching the
 * close events, learns which rank ended first. The descriptor is never
 * closed; without the file there is no witness. */
void otp_map_hold_rank_file(const otp_plugin *p)
{
    char path[sizeof p->settings.map + 16];
    if (!p->settings.map_len)
        return;
    snprintf(path, sizeof path, "%s.%d", p->settings.map, p->node.rank);
    if (open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) < 0)
        otp_plugin_log(OTM_LOG_INFO, "rank %d: cannot open %s (%s): the launcher's "
                       "witness will not see this rank end", p->node.rank, path,
                       strerror(errno));
}

/* The host's end begins: from here on it says itself how the job ends. */
void otp_map_end(const otp_plugin *p)
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
void otp_map_status(const otp_plugin *p, int status)
{
    FILE *f = p->settings.map_len ? fopen(p->settings.map, "ae") : NULL;
    if (f) {
        fprintf(f, "status %d\n", status);
        fclose(f);
    }
}

/* Rank 0's map, open for appending from the host's start: the lines of
 * its own end are written from an on_exit handler and a signal handler,
 * which must not open files. -1 without a map. */
static int host_end_fd = -1;

/* "rank0 WHAT N\n" with one write(2): async-signal-safe. */
static void write_host_end(const char *what, int n)
{
    char line[48], digits[12];
    size_t len = 0, nd = 0;
    unsigned v = (unsigned)n;
    for (const char *w = "rank0 "; *w;)
        line[len++] = *w++;
    while (*what)
        line[len++] = *what++;
    line[len++] = ' ';
    do
        digits[nd++] = (char)('0' + v % 10);
    while ((v /= 10) && nd < sizeof digits);
    while (nd)
        line[len++] = digits[--nd];
    line[len++] = '\n';
    if (write(host_end_fd, line, len) < 0) {
        /* Nothing left to tell: the launcher falls back on MPI's status. */
    }
}

static void host_exits(int status, void *arg)
{
    (void)arg;
    write_host_end("exit", status & 0xff);
}

/* The fatal signals whose end rank 0 writes down, and what handled each
 * before (UCX, under MPICH, installs its own for SIGSEGV in MPI_Init). */
static const int fatal[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
static struct sigaction before[sizeof fatal / sizeof fatal[0]];

/* Writes the end once, then passes the signal on: to the handler that was
 * there before, or to its default action, which ends rank 0 as it would
 * have (raised here, delivered as the handler returns; a fault's
 * instruction would also raise it again). */
static void host_dies(int signo, siginfo_t *si, void *uc)
{
    static atomic_flag said = ATOMIC_FLAG_INIT;
    if (!atomic_flag_test_and_set(&said))
        write_host_end("signal", signo);
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
        if (fatal[i] != signo)
            continue;
        sigaction(signo, &before[i], NULL);
        if (before[i].sa_flags & SA_SIGINFO)
            before[i].sa_sigaction(signo, si, uc);
        else if (before[i].sa_handler != SIG_DFL && before[i].sa_handler != SIG_IGN)
            before[i].sa_handler(signo);
        else
            raise(signo);
    }
}

/* Rank 0's own end, for the launcher: when rank 0 ends first (a crash,
 * libomptarget's abort), the MPI runtime kills the other ranks and reports
 * whichever end it counted last; the launcher reports rank 0's instead
 * (`rank0 exit N` from on_exit, `rank0 signal N` from a handler of the
 * fatal signals, which then hands the signal to the handler it replaced:
 * the MPI library's, or the default). A signal ignored stays ignored; a
 * handler the program installs later replaces this one. */
void otp_map_watch_host(const otp_plugin *p)
{
    if (!p->settings.map_len ||
        (host_end_fd = open(p->settings.map, O_WRONLY | O_APPEND | O_CLOEXEC)) < 0)
        return;
    on_exit(host_exits, NULL);
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
        struct sigaction sa = {.sa_sigaction = host_dies,
                               .sa_flags = SA_SIGINFO | SA_ONSTACK};
        sigfillset(&sa.sa_mask);
        if (!sigaction(fatal[i], NULL, &before[i]) && before[i].sa_handler != SIG_IGN)
            sigaction(fatal[i], &sa, NULL);
    }
}

/* OMPTARGET_MPI_INFO: which process serves which device. */
static void print_map(otp_plugin *p, const otp_rank_card *all)
{
    otp_plugin_log(OTM_LOG_ERROR, "host program: rank 0 on %s, pid %lld", all[0].host,
                   (long long)all[0].pid);
    for (int i = 0; i < p->ndevices; i++) {
        const otp_device *d = &p->devices[i];
        char kind[48] = "";
        if (d->unit)
            snprintf(kind, sizeof kind, ", %s device %d", d->plugin, d->local);
        otp_plugin_log(OTM_LOG_ERROR, "device %d: rank %d on %s, pid %lld%s", d->id, d->rank,
                       all[d->rank].host, (long long)all[d->rank].pid, kind);
    }
}

void otp_map_gather(otp_plugin *p)
{
    otp_rank_card *me = otp_plugin_calloc(1, sizeof *me), *all = NULL;
    if (!me) {
        otp_plugin_log(OTM_LOG_ERROR, "out of memory for the device map");
        otp_exit_abort_job();       /* the others wait in the gather */
    }
    me->pid = (int64_t)getpid();
    gethostname(me->host, sizeof me->host - 1);
    if (p->node.rank != 0)
        otp_units_open(p, me);
    /* The other ranks are in the gather already, which needs the buffer. */
    if (p->node.rank == 0 &&
        !(all = otp_plugin_calloc((size_t)p->node.size, sizeof *all))) {
        otp_plugin_log(OTM_LOG_ERROR, "out of memory for the device map");
        otp_exit_abort_job();
    }
    int rc = MPI_Gather(me, (int)sizeof *me, MPI_BYTE, all, (int)sizeof *me, MPI_BYTE, 0,
                        MPI_COMM_WORLD);
    otp_plugin_free(me);
    if (!all)
        return;
    for (int r = 1; rc == MPI_SUCCESS && r < p->node.size; r++)
        if (all[r].units > OTP_UNITS_MAX)
            all[r].units = OTP_UNITS_MAX;   /* a card of another build */
    p->cards = all;
    if (rc != MPI_SUCCESS)
        memset(all, 0, (size_t)p->node.size * sizeof *all);
    if (otp_devices_build(p)) {
        otp_plugin_log(OTM_LOG_ERROR, "out of memory for the device table");
        otp_exit_abort_job();
    }
    write_map(p, all);
    if (p->settings.info)
        print_map(p, all);
}
