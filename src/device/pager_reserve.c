/*
 * pager_reserve.c - the host's ranges reserved in this process for the
 * pager (otm/pager.h): anonymous mappings at rank 0's addresses,
 * registered with userfaultfd, kept as a sorted list of pieces with the
 * protection the host gives each; and the page size the pager works in.
 */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "device_internal.h"
#include "pager_internal.h"

uint64_t otd_pager_page_size(void)
{
    return (uint64_t)sysconf(_SC_PAGESIZE);
}

/* What holds [s, e) in this process, from its own map, into `what`. */
static void holder(uint64_t s, uint64_t e, char *what, size_t len)
{
    char line[512];
    snprintf(what, len, "something");
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        int at = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &a, &b, &at) < 2 || b <= s || a >= e)
            continue;
        char *name = at ? line + at : line + strlen(line);
        name[strcspn(name, "\n")] = '\0';
        snprintf(what, len, "0x%lx-0x%lx (%s)", a, b, *name ? name : "anonymous");
        break;
    }
    fclose(f);
}

static int prot_of(int read_only)
{
    return read_only ? PROT_READ : PROT_READ | PROT_WRITE;
}

static otm_status reserve_piece(otd_pager *pg, uint64_t s, uint64_t e, int read_only,
                                char *err, size_t errlen)
{
    void *want = (void *)(uintptr_t)s;
    void *p = mmap(want, e - s, prot_of(read_only),
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED && p != want)
        munmap(p, e - s);   /* a kernel older than MAP_FIXED_NOREPLACE */
    if (p != want) {
        char what[600];
        int e0 = errno;
        holder(s, e, what, sizeof what);
        if (p == MAP_FAILED && e0 != EEXIST)
            snprintf(what, sizeof what, "the system (%s)", strerror(e0));
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "the host's range 0x%llx-0x%llx is taken in this process "
                               "by %s", (unsigned long long)s, (unsigned long long)e, what);
    }
    struct uffdio_register reg = {.range = {.start = s, .len = e - s},
                                  .mode = UFFDIO_REGISTER_MODE_MISSING};
    if (ioctl(pg->fd, UFFDIO_REGISTER, &reg) < 0) {
        int e0 = errno;
        munmap(p, e - s);
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "userfaultfd refused the range 0x%llx-0x%llx (%s)",
                               (unsigned long long)s, (unsigned long long)e, strerror(e0));
    }
    return OTM_OK;
}

/* Records [s, e) as reserved, keeping the list sorted. */
static otm_status note_reserved(otd_pager *pg, uint64_t s, uint64_t e, int read_only)
{
    if (pg->nres == pg->res_cap) {
        size_t cap = pg->res_cap ? 2 * pg->res_cap : 64;
        piece *grown = realloc(pg->res, cap * sizeof *grown);
        if (!grown)
            return OTM_ERR_NOMEM;
        pg->res = grown, pg->res_cap = cap;
    }
    size_t i = pg->nres;
    while (i > 0 && pg->res[i - 1].start > s) {
        pg->res[i] = pg->res[i - 1];
        i--;
    }
    pg->res[i] = (piece){s, e, read_only};
    pg->nres++;
    return OTM_OK;
}

/* The part [s, e) of reserved piece i made read-only or writable, as the
 * host now keeps it: the piece is split at s and e first. */
static otm_status reprotect(otd_pager *pg, size_t i, uint64_t s, uint64_t e, int read_only,
                            char *err, size_t errlen)
{
    piece whole = pg->res[i];
    if (mprotect((void *)(uintptr_t)s, e - s, prot_of(read_only)) < 0)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen, "the host's range "
                               "0x%llx-0x%llx cannot be made %s here (%s)",
                               (unsigned long long)s, (unsigned long long)e,
                               read_only ? "read-only" : "writable", strerror(errno));
    pg->res[i].start = s, pg->res[i].end = e, pg->res[i].read_only = read_only;
    otm_status st = OTM_OK;
    if (whole.start < s)
        st = note_reserved(pg, whole.start, s, whole.read_only);
    if (!st && e < whole.end)
        st = note_reserved(pg, e, whole.end, whole.read_only);
    return st ? otd_device_fail(st, err, errlen, "out of memory") : OTM_OK;
}

/* The first reserved range that ends after `at` (pg->nres if none): the
 * list is sorted and disjoint, so a binary search. */
size_t otd__pager_first_after(const otd_pager *pg, uint64_t at)
{
    size_t lo = 0, hi = pg->nres;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pg->res[mid].end <= at)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Reserves the gaps of [s, e) between the ranges already reserved, and
 * gives the parts reserved before the protection the host has now. */
static otm_status reserve_range(otd_pager *pg, uint64_t s, uint64_t e, int read_only,
                                char *err, size_t errlen)
{
    uint64_t at = s;
    while (at < e) {
        size_t i = otd__pager_first_after(pg, at);
        if (i < pg->nres && pg->res[i].start <= at) {
            uint64_t end = pg->res[i].end < e ? pg->res[i].end : e;
            if (pg->res[i].read_only != read_only) {
                otm_status st = reprotect(pg, i, at, end, read_only, err, errlen);
                if (st)
                    return st;
            }
            at = end;
            continue;
        }
        uint64_t gap_end = i < pg->nres && pg->res[i].start < e ? pg->res[i].start : e;
        otm_status st = reserve_piece(pg, at, gap_end, read_only, err, errlen);
        if (st == OTM_OK && note_reserved(pg, at, gap_end, read_only)) {
            munmap((void *)(uintptr_t)at, gap_end - at);
            st = otd_device_fail(OTM_ERR_NOMEM, err, errlen, "out of memory");
        }
        if (st)
            return st;
        at = gap_end;
    }
    return OTM_OK;
}

otm_status otd_pager_reserve(otd_pager *pg, const otd_range *r, size_t n, char *err,
                             size_t errlen)
{
    uint64_t mask = otd_pager_page_size() - 1;
    if (!pg || (n && !r))
        return otd_device_fail(OTM_ERR_INVALID, err, errlen, "no ranges to reserve");
    otm_status st = OTM_OK;
    pthread_mutex_lock(&pg->lock);
    for (size_t i = 0; i < n && !st; i++) {
        uint64_t start = r[i].start & ~(uint64_t)OTD_RANGE_READ_ONLY;
        if (start >= r[i].end || (start & mask) || (r[i].end & mask))
            st = otd_device_fail(OTM_ERR_INVALID, err, errlen,
                                 "the range 0x%llx-0x%llx is not whole pages",
                                 (unsigned long long)start,
                                 (unsigned long long)r[i].end);
        else
            st = reserve_range(pg, start, r[i].end, (r[i].start & OTD_RANGE_READ_ONLY) != 0,
                               err, errlen);
    }
    pthread_mutex_unlock(&pg->lock);
    return st;
}

int otd__pager_reserved(const otd_pager *pg, uint64_t page)
{
    size_t i = otd__pager_first_after(pg, page);
    return i < pg->nres && pg->res[i].start <= page;
}

int otd_pager_reaches(otd_pager *pg, uint64_t addr, int write)
{
    pthread_mutex_lock(&pg->lock);
    size_t i = otd__pager_first_after(pg, addr);
    int ok = i < pg->nres && pg->res[i].start <= addr && !(write && pg->res[i].read_only);
    pthread_mutex_unlock(&pg->lock);
    return ok;
}
