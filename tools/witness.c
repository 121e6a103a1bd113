/*
 * omptarget-mpi-witness MAP - which rank of a job, on this machine, ended
 * first; run by omptarget-mpirun beside the job.
 *
 * When a rank dies, the MPI runtime (mpiexec's default) kills every other
 * within milliseconds: nobody in the job is left to say which it was, and
 * MPICH's report may name another rank's pid. This process is not in the
 * job, so it is not killed with it. It waits for the job's map (MAP, the
 * file OMPTARGET_MPI_MAP names: rank 0 writes a line `rank R device D pid
 * P host H` per rank, then `ranks N`), waits on a pidfd of each rank on
 * this machine and, when one ends before the host's end began (MAP has no
 * `end` line yet), appends `lost rank R` to MAP for each rank found ended
 * at that moment, in rank order: one, unless several ended within the
 * same wake-up. Then it exits, as it does when the host's end begins or
 * the launcher that started it is gone. Ranks on other machines are not
 * seen; neither is anything without pidfd_open (Linux 5.3).
 *
 * Exit status: 0; 2 on bad usage.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS 4096
#define CHECK_MS 20         /* how often the map is looked for */
#define PARENT_MS 1000      /* how often the launcher is looked for */

typedef struct watched {
    int rank;
    int fd;
} watched;

static const char *map_path;
static pid_t parent;

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int launcher_gone(void)
{
    return getppid() != parent;
}

/* 1 when MAP has a line equal to `line` (without its newline). */
static int map_has(const char *line)
{
    char buf[256];
    int found = 0;
    FILE *f = fopen(map_path, "re");
    while (f && !found && fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = '\0';
        found = !strcmp(buf, line);
    }
    if (f)
        fclose(f);
    return found;
}

/* 1 once MAP is whole (its `ranks N` line is there). */
static int map_whole(void)
{
    char buf[256];
    int whole = 0;
    FILE *f = fopen(map_path, "re");
    while (f && !whole && fgets(buf, sizeof buf, f))
        whole = !strncmp(buf, "ranks ", 6);
    if (f)
        fclose(f);
    return whole;
}

static int pidfd_of(long long pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

/* Opens a pidfd for each rank of MAP on this machine; returns how many. */
static int watch_ranks(watched *w, struct pollfd *fds)
{
    struct utsname me;
    char buf[256], host[200];
    int n = 0, rank, device;
    long long pid;
    FILE *f = fopen(map_path, "re");
    if (!f)
        return 0;
    if (uname(&me)) {
        fclose(f);
        return 0;
    }
    while (n < MAX_RANKS && fgets(buf, sizeof buf, f)) {
        if (sscanf(buf, "rank %d device %d pid %lld host %199s", &rank, &device, &pid,
                   host) != 4 || strcmp(host, me.nodename))
            continue;
        int fd = pidfd_of(pid);
        if (fd < 0)
            continue;
        w[n] = (watched){.rank = rank, .fd = fd};
        fds[n] = (struct pollfd){.fd = fd, .events = POLLIN};
        n++;
    }
    fclose(f);
    return n;
}

/* Appends `lost rank R` for each ended rank, in MAP's (rank) order. */
static void report(const watched *w, const struct pollfd *fds, int n)
{
    FILE *f = fopen(map_path, "ae");
    for (int i = 0; f && i < n; i++)
        if (fds[i].revents)
            fprintf(f, "lost rank %d\n", w[i].rank);
    if (f)
        fclose(f);
}

int main(int argc, char **argv)
{
    static watched w[MAX_RANKS];
    static struct pollfd fds[MAX_RANKS];
    if (argc != 2) {
        fprintf(stderr, "usage: omptarget-mpi-witness MAP\n");
        return 2;
    }
    map_path = argv[1];
    parent = getppid();
    while (!map_whole()) {
        if (launcher_gone())
            return 0;
        pause_ms(CHECK_MS);
    }
    int n = watch_ranks(w, fds);
    if (n == 0)
        return 0;
    for (;;) {
        int ready = poll(fds, (nfds_t)n, PARENT_MS);
        if (ready < 0 && errno != EINTR)
            return 0;
        if (ready > 0) {
            if (!map_has("end"))
                report(w, fds, n);
            return 0;
        }
        if (launcher_gone() || map_has("end"))
            return 0;
    }
}
