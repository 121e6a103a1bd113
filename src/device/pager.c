/*
 * pager.c - the device end of unified shared memory (otm/pager.h): pages
 * placed on demand in the host's ranges (reserved by pager_reserve.c),
 * with a twin each, changes found against the twins.
 *
 * One mutex guards the reservations and the table of placed pages: the
 * pager's thread places pages while a handler thread may flush at the end
 * of another region.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "device_internal.h"
#include "pager_internal.h"

/* ---- opening ------------------------------------------------------------ */

static int uffd_new(void)
{
    int flags = O_CLOEXEC | O_NONBLOCK;
    int fd = (int)syscall(SYS_userfaultfd, flags);
    /* Unprivileged, with vm.unprivileged_userfaultfd 0: only faults of
     * user code, which is what a region's touch is. */
    if (fd < 0 && errno == EPERM)
        fd = (int)syscall(SYS_userfaultfd, flags | UFFD_USER_MODE_ONLY);
    if (fd < 0 && (errno == EPERM || errno == ENOSYS)) {
        int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
        if (dev >= 0) {
            fd = ioctl(dev, USERFAULTFD_IOC_NEW, flags);
            close(dev);
        }
    }
    return fd;
}

otm_status otd_pager_open(otd_pager **out, char *err, size_t errlen)
{
    if (!out)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen, "no pager to open");
    *out = NULL;
    int fd = uffd_new();
    if (fd < 0)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "userfaultfd is not available to this process (%s)",
                               strerror(errno));
    struct uffdio_api api = {.api = UFFD_API};
    if (ioctl(fd, UFFDIO_API, &api) < 0 ||
        !(api.ioctls & (1ull << _UFFDIO_REGISTER))) {
        int e = errno;
        close(fd);
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "userfaultfd refused its handshake (%s)", strerror(e));
    }
    int wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd < 0) {
        int e = errno;
        close(fd);
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "no eventfd for the pager (%s)", strerror(e));
    }
    otd_pager *pg = calloc(1, sizeof *pg);
    if (!pg) {
        close(fd);
        close(wake_fd);
        return otd_device_fail(OTM_ERR_NOMEM, err, errlen, "out of memory");
    }
    pg->fd = fd, pg->wake_fd = wake_fd;
    pg->alloc = malloc, pg->release = free;
    pthread_mutex_init(&pg->lock, NULL);
    *out = pg;
    return OTM_OK;
}

void otd_pager_use_alloc(otd_pager *pg, void *(*alloc)(size_t), void (*release)(void *))
{
    pg->alloc = alloc, pg->release = release;
}

void otd_pager_close(otd_pager *pg)
{
    if (!pg)
        return;
    for (size_t i = 0; i < pg->cap; i++)
        pg->release(pg->slots[i].twin);
    for (size_t i = 0; i < pg->nres; i++)
        munmap((void *)(uintptr_t)pg->res[i].start, pg->res[i].end - pg->res[i].start);
    close(pg->fd);
    close(pg->wake_fd);
    pthread_mutex_destroy(&pg->lock);
    free(pg->slots);
    free(pg->res);
    free(pg);
}

/* ---- the table of placed pages ------------------------------------------ */

static size_t hash(uint64_t page, size_t cap)
{
    return (size_t)((page >> 12) * 0x9e3779b97f4a7c15ull) & (cap - 1);
}

static slot *find(otd_pager *pg, uint64_t page)
{
    if (!pg->cap)
        return NULL;
    for (size_t i = hash(page, pg->cap);; i = (i + 1) & (pg->cap - 1)) {
        if (pg->slots[i].page == page)
            return &pg->slots[i];
        if (pg->slots[i].page == 0)
            return NULL;
    }
}

static otm_status grow(otd_pager *pg)
{
    size_t cap = pg->cap ? 2 * pg->cap : 256;
    slot *s = calloc(cap, sizeof *s);
    if (!s)
        return OTM_ERR_NOMEM;
    for (size_t i = 0; i < pg->cap; i++) {
        if (!pg->slots[i].page)
            continue;
        size_t j = hash(pg->slots[i].page, cap);
        while (s[j].page)
            j = (j + 1) & (cap - 1);
        s[j] = pg->slots[i];
    }
    free(pg->slots);
    pg->slots = s, pg->cap = cap;
    return OTM_OK;
}

static otm_status insert(otd_pager *pg, uint64_t page, uint8_t *twin)
{
    if (2 * (pg->used + 1) > pg->cap && grow(pg))
        return OTM_ERR_NOMEM;
    size_t i = hash(page, pg->cap);
    while (pg->slots[i].page)
        i = (i + 1) & (pg->cap - 1);
    pg->slots[i] = (slot){page, twin};
    pg->used++;
    return OTM_OK;
}

static void wake(otd_pager *pg, uint64_t page)
{
    struct uffdio_range r = {.start = page, .len = otd_pager_page_size()};
    ioctl(pg->fd, UFFDIO_WAKE, &r);
}

/* ---- faults --------------------------------------------------------------- */

void otd_pager_wake(otd_pager *pg)
{
    uint64_t one = 1;
    ssize_t r = write(pg->wake_fd, &one, sizeof one);
    (void)r;    /* full (2^64 - 2 wakes pending): it is awake anyway */
}

/* Whether otd_pager_wake was called since the last look; clears it. */
static int woken(otd_pager *pg, short revents)
{
    uint64_t n;
    return (revents & POLLIN) && read(pg->wake_fd, &n, sizeof n) == (ssize_t)sizeof n;
}

int otd_pager_next_fault(otd_pager *pg, int timeout_ms, uint64_t *page)
{
    struct pollfd pfd[2] = {{.fd = pg->fd, .events = POLLIN},
                            {.fd = pg->wake_fd, .events = POLLIN}};
    struct uffd_msg msg;
    int r = poll(pfd, 2, timeout_ms);
    if (r < 0 && errno != EINTR)
        return -OTM_ERR_INVALID;
    if (r <= 0)
        return 0;
    if (woken(pg, pfd[1].revents))
        return 2;
    if (!(pfd[0].revents & (POLLIN | POLLERR | POLLHUP)))
        return 0;
    ssize_t n = read(pg->fd, &msg, sizeof msg);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n != (ssize_t)sizeof msg)
        return -OTM_ERR_INVALID;
    if (msg.event != UFFD_EVENT_PAGEFAULT)
        return 0;
    uint64_t at = msg.arg.pagefault.address & ~(otd_pager_page_size() - 1);
    pthread_mutex_lock(&pg->lock);
    int known = find(pg, at) != NULL;
    pthread_mutex_unlock(&pg->lock);
    if (known) {
        wake(pg, at);
        return 0;
    }
    *page = at;
    return 1;
}

uint64_t otd_pager_absent_run(otd_pager *pg, uint64_t page, uint64_t max)
{
    uint64_t size = otd_pager_page_size(), n = 0;
    pthread_mutex_lock(&pg->lock);
    size_t i = otd__pager_first_after(pg, page);
    if (!(page & (size - 1)) && i < pg->nres && pg->res[i].start <= page) {
        uint64_t end = pg->res[i].end;
        while (n < max && page + n * size < end && !find(pg, page + n * size))
            n++;
    }
    pthread_mutex_unlock(&pg->lock);
    return n;
}

/* Copies `bytes` into the missing page; a page present already (placed by
 * the kernel for a reason of its own) keeps its bytes, which the twin then
 * takes. */
static otm_status copy_in(otd_pager *pg, uint64_t page, const void *bytes, uint8_t *twin)
{
    uint64_t size = otd_pager_page_size();
    struct uffdio_copy c = {.dst = page, .src = (uint64_t)(uintptr_t)bytes, .len = size};
    int r;
    while ((r = ioctl(pg->fd, UFFDIO_COPY, &c)) < 0 && errno == EAGAIN)
        c.copy = 0;
    if (r < 0 && errno != EEXIST)
        return OTM_ERR_INVALID;
    memcpy(twin, r < 0 ? (const void *)(uintptr_t)page : bytes, size);
    if (r < 0)
        wake(pg, page);
    return OTM_OK;
}

/* Under the lock: the page is refused (no twin) and made unreachable. */
static otm_status refuse_locked(otd_pager *pg, uint64_t page)
{
    slot *sl = find(pg, page);
    if (!sl && insert(pg, page, NULL))
        return OTM_ERR_NOMEM;
    sl = find(pg, page);
    if (!sl->twin)
        mprotect((void *)(uintptr_t)page, otd_pager_page_size(), PROT_NONE);
    return OTM_OK;
}

static int acceptable(const otd_pager *pg, uint64_t page)
{
    return !(page & (otd_pager_page_size() - 1)) && otd__pager_reserved(pg, page);
}

otm_status otd_pager_place(otd_pager *pg, uint64_t page, const void *bytes)
{
    uint64_t size = otd_pager_page_size();
    otm_status st = OTM_OK;
    pthread_mutex_lock(&pg->lock);
    int ok = acceptable(pg, page);
    if (!ok) {
        st = OTM_ERR_INVALID;
    } else if (!find(pg, page)) {
        uint8_t *twin = pg->alloc(size);
        st = twin ? insert(pg, page, twin) : OTM_ERR_NOMEM;
        if (st == OTM_OK && (st = copy_in(pg, page, bytes, twin)) != OTM_OK) {
            find(pg, page)->twin = NULL;
            refuse_locked(pg, page);
        }
        if (st == OTM_OK)
            pg->total++;
        else
            pg->release(twin);
    }
    pthread_mutex_unlock(&pg->lock);
    /* Placed, refused, or placed before: whoever waits goes on. */
    if (ok && st != OTM_ERR_NOMEM)
        wake(pg, page);
    return st;
}

/* Under the lock: whether the n pages from `page` are all reserved and
 * none placed (1), and then room in the table for them and a twin for
 * each (OTM_ERR_NOMEM, the twins given back, when memory is short). */
static otm_status run_ready(otd_pager *pg, uint64_t page, uint64_t n, uint8_t **twins,
                            int *whole)
{
    uint64_t size = otd_pager_page_size();
    *whole = 0;
    for (uint64_t i = 0; i < n; i++)
        if (!acceptable(pg, page + i * size) || find(pg, page + i * size))
            return OTM_OK;
    while (2 * (pg->used + n) > pg->cap)
        if (grow(pg))
            return OTM_ERR_NOMEM;
    for (uint64_t i = 0; i < n; i++)
        if (!(twins[i] = pg->alloc(size))) {
            while (i > 0)
                pg->release(twins[--i]);
            return OTM_ERR_NOMEM;
        }
    *whole = 1;
    return OTM_OK;
}

/* Under the lock: the n pages copied in at once, nobody woken. */
static int copy_run(otd_pager *pg, uint64_t page, uint64_t n, const void *bytes)
{
    struct uffdio_copy c = {.dst = page, .src = (uint64_t)(uintptr_t)bytes,
                            .len = n * otd_pager_page_size(),
                            .mode = UFFDIO_COPY_MODE_DONTWAKE};
    return ioctl(pg->fd, UFFDIO_COPY, &c) == 0;
}

otm_status otd_pager_place_run(otd_pager *pg, uint64_t page, uint64_t n, const void *bytes)
{
    uint64_t size = otd_pager_page_size();
    uint8_t *twins[OTD_PAGER_RUN_MAX];
    if (n == 0 || n > OTD_PAGER_RUN_MAX)
        return OTM_ERR_INVALID;
    int whole;
    pthread_mutex_lock(&pg->lock);
    otm_status st = run_ready(pg, page, n, twins, &whole);
    if (whole && !copy_run(pg, page, n, bytes)) {
        for (uint64_t i = 0; i < n; i++)
            pg->release(twins[i]);
        whole = 0;
    }
    for (uint64_t i = 0; whole && i < n; i++) {
        memcpy(twins[i], (const uint8_t *)bytes + i * size, size);
        insert(pg, page + i * size, twins[i]);     /* room made by run_ready */
        pg->total++;
    }
    pthread_mutex_unlock(&pg->lock);
    if (whole) {
        struct uffdio_range r = {.start = page, .len = n * size};
        ioctl(pg->fd, UFFDIO_WAKE, &r);
    }
    if (whole || st)
        return st;
    /* One by one (a page placed already, or outside the reservations, a
     * copy cut short): the first page last, since placing it lets its
     * region go on and end. */
    for (uint64_t i = 1; st == OTM_OK && i <= n; i++)
        st = otd_pager_place(pg, page + (i % n) * size, (const uint8_t *)bytes + (i % n) * size);
    return st;
}

otm_status otd_pager_refuse(otd_pager *pg, uint64_t page)
{
    pthread_mutex_lock(&pg->lock);
    otm_status st = acceptable(pg, page) ? refuse_locked(pg, page) : OTM_ERR_INVALID;
    pthread_mutex_unlock(&pg->lock);
    if (st == OTM_OK)
        wake(pg, page);
    return st;
}

/* ---- changes and the drop ------------------------------------------------ */

/* Emits the runs of bytes of `page` that differ from `twin`, taking each
 * into the twin first, so that what is emitted is what the twin holds. */
static int diff_page(uint64_t page, uint8_t *twin, otd_pager_emit emit, void *ctx)
{
    const uint8_t *now = (const uint8_t *)(uintptr_t)page;
    uint64_t size = otd_pager_page_size();
    for (uint64_t i = 0; i < size;) {
        /* Unchanged 64-byte blocks are skipped by memcmp (vectorised), as
         * most of a page a region touched is. */
        if (i % 64 == 0 && i + 64 <= size && !memcmp(now + i, twin + i, 64)) {
            i += 64;
            continue;
        }
        if (now[i] == twin[i]) {
            i++;
            continue;
        }
        uint64_t start = i;
        while (i < size && now[i] != twin[i])
            i++;
        memcpy(twin + start, now + start, i - start);
        int r = emit(ctx, page + start, twin + start, i - start);
        if (r)
            return r;
    }
    return 0;
}

static int by_page(const void *a, const void *b)
{
    uint64_t x = ((const slot *)a)->page, y = ((const slot *)b)->page;
    return x < y ? -1 : x > y;
}

/* Drops every page: placed ones become missing again (MADV_DONTNEED on
 * runs of neighbours), refused ones reachable. The table is emptied. */
static void drop_all(otd_pager *pg)
{
    uint64_t size = otd_pager_page_size();
    size_t n = 0;
    for (size_t i = 0; i < pg->cap; i++)
        if (pg->slots[i].page)
            pg->slots[n++] = pg->slots[i];
    qsort(pg->slots, n, sizeof *pg->slots, by_page);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && pg->slots[j].page == pg->slots[j - 1].page + size &&
               !pg->slots[j].twin == !pg->slots[i].twin)
            j++;
        void *at = (void *)(uintptr_t)pg->slots[i].page;
        uint64_t len = (j - i) * size;
        if (pg->slots[i].twin)
            madvise(at, len, MADV_DONTNEED);
        else
            mprotect(at, len, PROT_READ | PROT_WRITE);
        for (size_t k = i; k < j; k++)
            pg->release(pg->slots[k].twin);
        i = j;
    }
    memset(pg->slots, 0, pg->cap * sizeof *pg->slots);
    pg->used = 0;
}

int otd_pager_flush(otd_pager *pg, int drop, otd_pager_emit emit, void *ctx)
{
    int r = 0;
    pthread_mutex_lock(&pg->lock);
    for (size_t i = 0; i < pg->cap && !r; i++)
        if (pg->slots[i].page && pg->slots[i].twin)
            r = diff_page(pg->slots[i].page, pg->slots[i].twin, emit, ctx);
    if (drop && !r)
        drop_all(pg);
    pthread_mutex_unlock(&pg->lock);
    return r;
}

void otd_pager_counts(const otd_pager *pg, uint64_t *placed, uint64_t *total)
{
    otd_pager *m = (otd_pager *)pg;
    pthread_mutex_lock(&m->lock);
    *placed = m->used;
    *total = m->total;
    pthread_mutex_unlock(&m->lock);
}
