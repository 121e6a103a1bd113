/*
 * plugin_log.c - the plugin's lines on stderr: its own (otp_plugin_log) and the
 * core's (the node's log hook), filtered by the OMPTARGET_MPI_LOG level,
 * one write per line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "plugin.h"

/* Warnings and errors until the settings are read: a bad setting is
 * reported at that level. */
static int log_level = OTM_LOG_WARN;
/* Where the plugin's own lines go: stderr, or on a worker that captures
 * its regions' output, the descriptor stderr was before. */
static int log_fd = 2;

/* One write per line, so that lines of different ranks sharing a terminal
 * under mpiexec do not interleave. */
static void put_line(const char *line)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%s\n", line);
    if (n <= 0)
        return;
    size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    if (log_fd == 2) {
        fflush(stderr);     /* after what the program wrote there */
        if (write(2, buf, len) < 0)
            return;
    } else if (write(log_fd, buf, len) < 0) {
        return;
    }
}

void otp_plugin_log_to(int fd)
{
    log_fd = fd;
}

void otp_plugin_log_level(int level)
{
    log_level = level;
}

void otp_plugin_log(int level, const char *fmt, ...)
{
    char line[480];
    va_list ap;
    if (level > log_level)
        return;
    int n = snprintf(line, sizeof line, "omptarget-mpi: ");
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    put_line(line);
}

void otp_plugin_log_line(int level, const char *line)
{
    if (level <= log_level)
        put_line(line);
}
