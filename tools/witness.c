/*
 * omptarget-mpi-witness MAP - which rank of a job, on this machine, ended
 * first; run by omptarget-mpirun beside the job.
 *
 * When a rank dies, the MPI runtime (mpiexec's default) kills every other
 * within milliseconds: nobody in the job is left to say which it was, and
 * MPICH's report may name another rank's pid. This process is not in the
 * job, so it is not killed with it.
 *
 * Each rank holds MAP.R (R: its rank) open for writing from its start
 * and never closes it: the kernel closes it as the process ends, whatever
 * ends it, at the moment its connections to mpiexec close, which is what
 * tells mpiexec (before the parent hears of the end). The ranks mpiexec
 * then kills close theirs only after that. An inotify descriptor watching
 * the files queues their close events in the order the kernel closed them,
 * however late this process reads them: the first is the first rank that
 * ended. (Waking on a lock, or on a pidfd, gives the order in which this
 * process's threads ran, which a loaded machine can swap.)
 *
 * It waits for the job's map (MAP: rank 0 writes a line `rank R device D
 * pid P host H` per rank, then `ranks N`), watches MAP.R of each rank of
 * this machine, and at the first close event before the host's end began
 * (MAP has no `end` line yet) appends `lost rank R` to MAP for each rank
 * whose file was closed by then, in that order; then it exits. It also
 * exits when the host's end begins or the launcher that started it is
 * gone. Ranks of other machines, or whose file cannot be watched, are not
 * seen.
 *
 * Exit status: 0; 2 on bad usage.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS 4096
#define CHECK_MS 20         /* how often the map is looked for */
#define END_MS 100          /* how often the map's `end` is looked for */

static const char *map_path;
static pid_t parent;
static int rank_of_wd[MAX_RANKS + 2];   /* inotify gives wd 1, 2, ... */

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int launcher_gone(void)
{
    return getppid() != parent;
}

/* 1 when a line of MAP starts with `prefix` (its whole length). */
static int map_has(const char *prefix)
{
    char buf[256];
    int found = 0;
    FILE *f = fopen(map_path, "re");
    while (f && !found && fgets(buf, sizeof buf, f))
        found = !strncmp(buf, prefix, strlen(prefix));
    if (f)
        fclose(f);
    return found;
}

/* Watches MAP.R of each rank of MAP on this machine on `in`; returns
 * how many. */
static int watch_ranks(int in)
{
    struct utsname me;
    char buf[256], host[200], path[4200];
    int rank, device, n = 0;
    long long pid;
    FILE *f = fopen(map_path, "re");
    if (!f)
        return 0;
    if (uname(&me)) {
        fclose(f);
        return 0;
    }
    while (fgets(buf, sizeof buf, f)) {
        if (sscanf(buf, "rank %d device %d pid %lld host %199s", &rank, &device, &pid,
                   host) != 4 || strcmp(host, me.nodename))
            continue;
        snprintf(path, sizeof path, "%s.%d", map_path, rank);
        int wd = inotify_add_watch(in, path, IN_CLOSE_WRITE);
        if (wd <= 0 || wd > MAX_RANKS + 1)
            continue;
        rank_of_wd[wd] = rank;
        n++;
    }
    fclose(f);
    return n;
}

/* Appends `lost rank R` for each close event read from `in`, in order;
 * returns how many there were. */
static int report(int in)
{
    char buf[64 * (sizeof(struct inotify_event) + 1)]
        __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t len = read(in, buf, sizeof buf);
    int n = 0;
    FILE *f = len > 0 && !map_has("end\n") ? fopen(map_path, "ae") : NULL;
    for (ssize_t off = 0; off < len;) {
        const struct inotify_event *ev = (const void *)(buf + off);
        if ((ev->mask & IN_CLOSE_WRITE) && ev->wd > 0 && ev->wd <= MAX_RANKS + 1) {
            if (f)
                fprintf(f, "lost rank %d\n", rank_of_wd[ev->wd]);
            n++;
        }
        off += (ssize_t)sizeof *ev + ev->len;
    }
    if (f)
        fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: omptarget-mpi-witness MAP\n");
        return 2;
    }
    map_path = argv[1];
    parent = getppid();
    while (!map_has("ranks ")) {
        if (launcher_gone())
            return 0;
        pause_ms(CHECK_MS);
    }
    int in = inotify_init1(IN_CLOEXEC);
    if (in < 0 || watch_ranks(in) == 0)
        return 0;
    struct pollfd pfd = {.fd = in, .events = POLLIN};
    for (;;) {
        int ready = poll(&pfd, 1, END_MS);
        if (ready < 0 && errno != EINTR)
            return 0;
        if (ready > 0 && report(in))
            return 0;
        if (launcher_gone() || map_has("end\n"))
            return 0;
    }
}
