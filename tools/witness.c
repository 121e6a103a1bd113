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
 * It watches MAP's directory from its start, before any rank exists: a
 * rank may die before the job's map is written, and a close that happened
 * before a watch on the file itself would be lost (a device killed at its
 * first operation then had a rank killed after it named instead). It
 * waits for the map (MAP: rank 0 writes a line `rank R device D pid P
 * host H` per rank, then `ranks N`), then reads the close events of MAP.R
 * of each rank of this machine, in order, and at the first of them before
 * the host's end began (MAP has no `end` line yet) appends `lost rank R`
 * to MAP for each rank whose file was closed by then, in that order; then
 * it exits. It also exits when the host's end begins or the launcher that
 * started it is gone. Ranks of other machines are not seen.
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
static const char *map_name;            /* its last component */
static pid_t parent;
static unsigned char here[MAX_RANKS];   /* ranks of this machine */

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

/* Marks the ranks of MAP on this machine in here[]; returns how many. */
static int ranks_here(void)
{
    struct utsname me;
    char buf[256], host[200];
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
                   host) != 4 || strcmp(host, me.nodename) || rank < 0 || rank >= MAX_RANKS)
            continue;
        here[rank] = 1;
        n++;
    }
    fclose(f);
    return n;
}

/* The rank whose file `name` (of MAP's directory) is, MAP.R, if that rank
 * is of this machine; else -1. */
static int rank_of(const char *name)
{
    size_t len = strlen(map_name);
    if (strncmp(name, map_name, len) || name[len] != '.' || !name[len + 1])
        return -1;
    char *end;
    long r = strtol(name + len + 1, &end, 10);
    return *end || r < 0 || r >= MAX_RANKS || !here[r] ? -1 : (int)r;
}

/* Appends `lost rank R` for each close of a rank's file read from `in`,
 * in order; returns how many there were. */
static int report(int in)
{
    char buf[64 * (sizeof(struct inotify_event) + 256)]
        __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t len = read(in, buf, sizeof buf);
    int n = 0;
    FILE *f = NULL;
    for (ssize_t off = 0; off < len;) {
        const struct inotify_event *ev = (const void *)(buf + off);
        int rank = (ev->mask & IN_CLOSE_WRITE) && ev->len ? rank_of(ev->name) : -1;
        if (rank >= 0 && n++ == 0 && !map_has("end\n"))
            f = fopen(map_path, "ae");
        if (rank >= 0 && f)
            fprintf(f, "lost rank %d\n", rank);
        off += (ssize_t)sizeof *ev + ev->len;
    }
    if (f)
        fclose(f);
    return n;
}

/* A watch of the directory of MAP on a new inotify descriptor, or -1. */
static int watch_directory(void)
{
    char dir[4096] = ".";
    const char *slash = strrchr(map_path, '/');
    map_name = slash ? slash + 1 : map_path;
    if (slash == map_path) {
        strcpy(dir, "/");
    } else if (slash) {
        size_t len = (size_t)(slash - map_path);
        if (len >= sizeof dir)
            return -1;
        memcpy(dir, map_path, len);
        dir[len] = '\0';
    }
    int in = inotify_init1(IN_CLOEXEC);
    if (in >= 0 && inotify_add_watch(in, dir, IN_CLOSE_WRITE) < 0) {
        close(in);
        return -1;
    }
    return in;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: omptarget-mpi-witness MAP\n");
        return 2;
    }
    map_path = argv[1];
    parent = getppid();
    int in = watch_directory();
    if (in < 0)
        return 0;
    while (!map_has("ranks ")) {
        if (launcher_gone())
            return 0;
        pause_ms(CHECK_MS);
    }
    if (ranks_here() == 0)
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
