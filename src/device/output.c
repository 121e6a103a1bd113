/*
 * output.c - capturing descriptors 1 and 2 in memfds.
 *
 * A memfd rather than a pipe: a writer never blocks on it, whatever the
 * worker is busy with, and its size (lseek) tells how much arrived without
 * reading anything. O_APPEND is set on the open file description that both
 * the memfd and descriptor 1 (or 2) share, so every write, also stdio's,
 * goes to the end whatever the file position; reads use pread, so the
 * position is nobody's but the size check's. What has been taken is
 * punched out, so memory tracks the untaken bytes only while offsets stay
 * stable.
 *
 * Index 0 is stdout (descriptor 1), index 1 stderr (descriptor 2).
 */
#include "otm/output.h"

#include "device_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NSTREAMS 2

/* Chunk in which stop copies untaken bytes to the saved descriptors. */
#define DRAIN_CHUNK 16384

struct otd_output {
    pthread_mutex_t lock;    /* guards taken[] and reads of the memfds */
    int mem[NSTREAMS];       /* the memfds now on descriptors 1 and 2 */
    int saved[NSTREAMS];     /* duplicates of the original 1 and 2 */
    int cloexec[NSTREAMS];   /* the original's FD_CLOEXEC, to put back */
    uint64_t taken[NSTREAMS]; /* bytes already taken (or drained) */
    uint64_t page;           /* page size: holes are punched in pages */
};

/* Descriptors 1 and 2 belong to the process, so two captures at once
 * would capture each other; this flag is the one piece of global state. */
static atomic_int capturing;

/* Running out of memory or of descriptors, versus anything else. */
static otm_status errno_status(int e)
{
    return e == ENOMEM || e == EMFILE || e == ENFILE || e == ENOSPC
               ? OTM_ERR_NOMEM
               : OTM_ERR_INVALID;
}

/* ------------------------------------------------------------------------ */
/* Starting and stopping                                                     */

/* Closes whatever open_stream opened; the record itself stays. */
static void close_streams(otd_output *o)
{
    int i;

    for (i = 0; i < NSTREAMS; i++) {
        if (o->mem[i] >= 0)
            close(o->mem[i]);
        if (o->saved[i] >= 0)
            close(o->saved[i]);
        o->mem[i] = o->saved[i] = -1;
    }
}

/* Both descriptors are checked before anything is opened: a new
 * descriptor would take the number of a closed 1 or 2 and hide it. */
static otm_status check_open(otd_output *o, char *err, size_t errlen)
{
    int i;

    for (i = 0; i < NSTREAMS; i++) {
        int flags = fcntl(i + 1, F_GETFD);

        if (flags < 0)
            return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                                   "cannot capture descriptor %d: it is not "
                                   "open (%s)", i + 1, strerror(errno));
        o->cloexec[i] = flags & FD_CLOEXEC;
    }
    return OTM_OK;
}

/* A memfd numbered >= 3, so that it never sits on a closed 0 (stdin) that
 * the program may reopen; -1 with errno set on failure. */
static int make_memfd(const char *name)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    int high;

    if (fd < 0 || fd >= 3)
        return fd;
    high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (high < 0) {
        int e = errno;

        close(fd);
        errno = e;
        return -1;
    }
    close(fd);
    return high;
}

/* Saves descriptor i + 1 and creates its memfd, without switching yet. */
static otm_status open_stream(otd_output *o, int i, char *err, size_t errlen)
{
    static const char *const names[NSTREAMS] = {"otm-stdout", "otm-stderr"};
    int fd = i + 1;
    int flags;

    o->saved[i] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (o->saved[i] < 0)
        return otd_device_fail(errno_status(errno), err, errlen,
                               "cannot save descriptor %d: %s", fd,
                               strerror(errno));
    o->mem[i] = make_memfd(names[i]);
    if (o->mem[i] < 0)
        return otd_device_fail(errno_status(errno), err, errlen,
                               "cannot create a memfd to capture descriptor "
                               "%d: %s", fd, strerror(errno));
    flags = fcntl(o->mem[i], F_GETFL);
    if (flags < 0 || fcntl(o->mem[i], F_SETFL, flags | O_APPEND) < 0)
        return otd_device_fail(errno_status(errno), err, errlen,
                               "cannot make the memfd of descriptor %d "
                               "append-only: %s", fd, strerror(errno));
    return OTM_OK;
}

/* Puts the memfds on 1 and 2; on failure, 1 and 2 are as they were. */
static otm_status redirect(otd_output *o, char *err, size_t errlen)
{
    int e;

    if (dup2(o->mem[0], 1) < 0)
        return otd_device_fail(errno_status(errno), err, errlen,
                               "cannot put the capture on descriptor 1: %s",
                               strerror(errno));
    if (dup2(o->mem[1], 2) >= 0)
        return OTM_OK;
    e = errno;
    /* Descriptor 1 was already switched: put the original back. */
    dup3(o->saved[0], 1, o->cloexec[0] ? O_CLOEXEC : 0);
    return otd_device_fail(errno_status(e), err, errlen,
                           "cannot put the capture on descriptor 2: %s",
                           strerror(e));
}

static otm_status setup(otd_output *o, char *err, size_t errlen)
{
    otm_status st = OTM_OK;
    long page = sysconf(_SC_PAGESIZE);
    int i;

    o->page = page > 0 ? (uint64_t)page : 4096;
    st = check_open(o, err, errlen);
    for (i = 0; i < NSTREAMS && st == OTM_OK; i++)
        st = open_stream(o, i, err, errlen);
    if (st == OTM_OK && pthread_mutex_init(&o->lock, NULL) != 0)
        st = otd_device_fail(OTM_ERR_NOMEM, err, errlen,
                             "cannot initialise the capture's mutex");
    if (st)
        return st;
    /* What stdio holds now was written before the capture: it goes to the
     * original descriptors. */
    fflush(stdout);
    fflush(stderr);
    st = redirect(o, err, errlen);
    if (st)
        pthread_mutex_destroy(&o->lock);
    return st;
}

otm_status otd_output_start(otd_output **out, char *err, size_t errlen)
{
    otd_output *o;
    otm_status st;
    int idle = 0;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (out == NULL)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "nowhere to put the output capture "
                               "(out is NULL)");
    *out = NULL;
    if (!atomic_compare_exchange_strong(&capturing, &idle, 1))
        return otd_device_fail(OTM_ERR_BUSY, err, errlen,
                               "stdout and stderr are already being captured "
                               "(a second otd_output_start without "
                               "otd_output_stop)");
    o = calloc(1, sizeof(*o));
    if (o == NULL) {
        atomic_store(&capturing, 0);
        return otd_device_fail(OTM_ERR_NOMEM, err, errlen,
                               "out of memory for the output capture's record");
    }
    o->mem[0] = o->mem[1] = o->saved[0] = o->saved[1] = -1;
    st = setup(o, err, errlen);
    if (st) {
        close_streams(o);
        free(o);
        atomic_store(&capturing, 0);
        return st;
    }
    *out = o;
    return OTM_OK;
}

int otd_output_fd(const otd_output *o, int stream)
{
    if (o == NULL || stream < 1 || stream > NSTREAMS)
        return -1;
    return o->saved[stream - 1];
}

/* ------------------------------------------------------------------------ */
/* Counting and taking                                                       */

/* Bytes of stream i not yet taken; called with the lock held, so that no
 * take can move taken[i] past the size just read. The size comes from
 * lseek to the end rather than fstat: a worker asks it twice per region,
 * and lseek costs a third of fstat (DESIGN.md §6). Moving the shared file
 * position is harmless: every write appends (O_APPEND) and every read
 * says its offset (pread), so nothing else uses the position. */
static uint64_t untaken(const otd_output *o, int i)
{
    off_t size = lseek(o->mem[i], 0, SEEK_END);

    if (size < 0 || (uint64_t)size < o->taken[i])
        return 0;
    return (uint64_t)size - o->taken[i];
}

void otd_output_pending(otd_output *o, uint64_t *out_bytes,
                        uint64_t *err_bytes)
{
    uint64_t n[NSTREAMS] = {0, 0};
    int i;

    if (o != NULL) {
        fflush(stdout);
        fflush(stderr);
        pthread_mutex_lock(&o->lock);
        for (i = 0; i < NSTREAMS; i++)
            n[i] = untaken(o, i);
        pthread_mutex_unlock(&o->lock);
    }
    if (out_bytes != NULL)
        *out_bytes = n[0];
    if (err_bytes != NULL)
        *err_bytes = n[1];
}

/* Reads size bytes at off, all of them: 0, or -1 when the memfd has fewer
 * (it was truncated) or cannot be read. */
static int read_at(int fd, uint8_t *dst, uint64_t size, uint64_t off)
{
    while (size > 0) {
        ssize_t n = pread(fd, dst, size, (off_t)off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        dst += n;
        off += (uint64_t)n;
        size -= (uint64_t)n;
    }
    return 0;
}

/* Marks n more bytes of stream i taken and frees their memory. The hole
 * starts at the page holding the first of them: a punch frees only the
 * pages it covers whole, so a page split between two takes is freed by
 * the second (zeroing its already-taken head again does no harm). */
static void release(otd_output *o, int i, uint64_t n)
{
    uint64_t from = o->taken[i] - o->taken[i] % o->page;
    uint64_t to = o->taken[i] + n;

    if (n > 0)
        (void)fallocate(o->mem[i], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                        (off_t)from, (off_t)(to - from));
    o->taken[i] = to;
}

static otm_status take_locked(otd_output *o, uint8_t *dst, uint64_t out_bytes,
                              uint64_t err_bytes)
{
    if (out_bytes > untaken(o, 0) || err_bytes > untaken(o, 1))
        return OTM_ERR_INVALID;
    /* Both reads before either release, so a failure takes nothing. */
    if (read_at(o->mem[0], dst, out_bytes, o->taken[0]) != 0 ||
        read_at(o->mem[1], dst + out_bytes, err_bytes, o->taken[1]) != 0)
        return OTM_ERR_INVALID;
    release(o, 0, out_bytes);
    release(o, 1, err_bytes);
    return OTM_OK;
}

otm_status otd_output_take(otd_output *o, uint8_t *dst, uint64_t out_bytes,
                           uint64_t err_bytes)
{
    otm_status st;

    if (o == NULL || (dst == NULL && (out_bytes > 0 || err_bytes > 0)))
        return OTM_ERR_INVALID;
    if (out_bytes == 0 && err_bytes == 0)
        return OTM_OK;
    pthread_mutex_lock(&o->lock);
    st = take_locked(o, dst, out_bytes, err_bytes);
    pthread_mutex_unlock(&o->lock);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Stopping                                                                  */

static int write_all(int fd, const uint8_t *p, size_t size)
{
    while (size > 0) {
        ssize_t n = write(fd, p, size);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        size -= (size_t)n;
    }
    return 0;
}

/* Copies stream i's untaken bytes to its saved descriptor. On a read or
 * write error the rest is marked taken: it cannot be delivered. */
static void drain(otd_output *o, int i)
{
    uint8_t buf[DRAIN_CHUNK];
    uint64_t left = untaken(o, i);

    while (left > 0) {
        uint64_t n = left < sizeof(buf) ? left : sizeof(buf);

        if (read_at(o->mem[i], buf, n, o->taken[i]) != 0 ||
            write_all(o->saved[i], buf, (size_t)n) != 0)
            n = left;
        o->taken[i] += n;
        left -= n;
    }
}

void otd_output_stop(otd_output *o)
{
    int i;

    if (o == NULL)
        return;
    fflush(stdout);
    fflush(stderr);
    pthread_mutex_lock(&o->lock);
    for (i = 0; i < NSTREAMS; i++)
        drain(o, i);
    for (i = 0; i < NSTREAMS; i++)
        dup3(o->saved[i], i + 1, o->cloexec[i] ? O_CLOEXEC : 0);
    /* What reached the memfds during the first drain, before the switch,
     * follows in order. */
    for (i = 0; i < NSTREAMS; i++)
        drain(o, i);
    pthread_mutex_unlock(&o->lock);
    close_streams(o);
    pthread_mutex_destroy(&o->lock);
    free(o);
    atomic_store(&capturing, 0);
}
