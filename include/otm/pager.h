/*
 * otm/pager.h - unified shared memory across processes: the host's pages
 * served to a device rank on demand, at the host's own addresses.
 *
 * The device end (otd_pager) reserves the host's address ranges in the
 * worker process, registered with Linux's userfaultfd for missing pages: a
 * region that touches one blocks in the kernel while the pager's thread
 * asks rank 0 for that page (the page protocol, otm/page.h) and places it
 * (UFFDIO_COPY), keeping a copy of what it placed (a twin). When a region
 * ends, what differs from the twins is written back; when no region runs
 * any more, the pages are dropped, so the next region reads the host's
 * memory again. The host end (otd_host_*) reads, writes and lists rank 0's
 * own memory without ever faulting on an address a peer sent.
 *
 * The pager does no MPI and starts no thread: the caller's thread waits
 * for faults (otd_pager_next_fault) and answers each. Errors are values
 * with a sentence in `err` (NUL-terminated when errlen > 0).
 */
#ifndef OTM_PAGER_H
#define OTM_PAGER_H

#include <stddef.h>
#include <stdint.h>

#include "otm/status.h"

/* A range of addresses [start, end), page-aligned. In the host's ranges
 * (otd_host_ranges, otd_pager_reserve) the low bit of start,
 * OTD_RANGE_READ_ONLY, says that the host keeps the range read-only. */
typedef struct otd_range {
    uint64_t start, end;
} otd_range;

#define OTD_RANGE_READ_ONLY 1u

typedef struct otd_pager otd_pager;

/* Opens the pager: a userfaultfd (the system call, then the user-mode-only
 * variant, then /dev/userfaultfd). OTM_ERR_INVALID with why when this
 * system refuses every way (a kernel without it, an unprivileged process
 * where vm.unprivileged_userfaultfd is 0 and the device node is closed to
 * it, a seccomp filter); OTM_ERR_NOMEM. */
otm_status otd_pager_open(otd_pager **out, char *err, size_t errlen);

/* The allocator of the twins (a page's copy each), malloc and free until
 * set: the plugin's, whose test hook can fail any allocation. */
void otd_pager_use_alloc(otd_pager *pg, void *(*alloc)(size_t), void (*release)(void *));

/* Closes the pager: every range it reserved is unmapped. NULL is a no-op. */
void otd_pager_close(otd_pager *pg);

/* The page size the pager places, in bytes. */
uint64_t otd_pager_page_size(void);

/* Reserves the parts of the n ranges not reserved yet: mapped anonymous
 * at their own addresses (never over a mapping of this process) and
 * registered for missing-page faults. A range marked OTD_RANGE_READ_ONLY
 * is reserved read-only (its pages are placed so: a store faults), and
 * parts reserved before take each range's protection as given now. A part that this process already
 * uses for something else is OTM_ERR_INVALID, with err naming the range
 * and what holds it here; the ranges before it stay reserved. A range not
 * page-aligned or empty is OTM_ERR_INVALID. */
otm_status otd_pager_reserve(otd_pager *pg, const otd_range *r, size_t n, char *err,
                             size_t errlen);

/* Waits up to timeout_ms (-1: for ever) for a thread to touch a reserved
 * page that is not placed: 1 with its page address in *page, 2 when
 * otd_pager_wake was called since the last return of 2, 0 when none
 * came, OTM_ERR_INVALID (negated) when the descriptor failed. A page
 * already placed, asked again by a late thread, is woken here and not
 * returned. */
int otd_pager_next_fault(otd_pager *pg, int timeout_ms, uint64_t *page);

/* Makes the waiting (or next) otd_pager_next_fault return 2. Safe in a
 * signal handler: one write(2) to an eventfd. */
void otd_pager_wake(otd_pager *pg);

/* Whether addr lies in a reserved range (a writable one, with `write`):
 * whether a touch there reaches the host, once its page is placed. */
int otd_pager_reaches(otd_pager *pg, uint64_t addr, int write);

/* How many pages from `page` on, at most `max`, are reserved and not
 * placed: the run the caller may ask rank 0 for at once, since a region
 * that touches a page mostly touches the next ones too (0 when `page`
 * itself is placed or not reserved). */
uint64_t otd_pager_absent_run(otd_pager *pg, uint64_t page, uint64_t max);

/* Places the host's bytes of `page` (one page) and wakes the threads
 * waiting on it; keeps a twin. OTM_ERR_INVALID for a page outside the
 * reservations, OTM_ERR_NOMEM (nothing placed: the caller refuses it). */
otm_status otd_pager_place(otd_pager *pg, uint64_t page, const void *bytes);

/* Places the n pages from `page` on (bytes holds them in order, n at
 * most OTD_PAGER_RUN_MAX): all reserved and none placed, in one copy and
 * one wake-up; else one by one as otd_pager_place, `page` itself last,
 * stopping at the first error, which is returned. OTM_ERR_NOMEM when
 * memory is short for the run's twins: nothing placed, as for one page. */
#define OTD_PAGER_RUN_MAX 512u
otm_status otd_pager_place_run(otd_pager *pg, uint64_t page, uint64_t n, const void *bytes);

/* The host has no such page: its waiting threads are woken and fault
 * (SIGSEGV) as they would on any unmapped address, until the drop. */
otm_status otd_pager_refuse(otd_pager *pg, uint64_t page);

/* What the regions changed in the placed pages since they were placed or
 * last flushed: emit(ctx, addr, bytes, len) once per run of changed bytes,
 * in address order within a page, never an unchanged byte (two devices
 * that write different bytes of one page must not undo each other); the
 * twins then hold what was emitted. A non-zero return of emit stops the
 * flush and is returned. With `drop`, every page is then dropped (the
 * next touch asks for it again), refused ones included. Only call `drop`
 * when no region runs. */
typedef int (*otd_pager_emit)(void *ctx, uint64_t addr, const void *bytes, uint64_t len);
int otd_pager_flush(otd_pager *pg, int drop, otd_pager_emit emit, void *ctx);

/* Pages placed now, and placed since the pager opened. */
void otd_pager_counts(const otd_pager *pg, uint64_t *placed, uint64_t *total);

/* ---- the host's end -------------------------------------------------------
 * Rank 0's own memory, read and written for a peer's request through
 * process_vm_readv/writev on itself: an address that is not mapped (or
 * not writable, for a write) is OTM_ERR_BAD_POINTER, never a fault. */
otm_status otd_host_read(uint64_t addr, void *dst, uint64_t len);
otm_status otd_host_write(uint64_t addr, const void *src, uint64_t len);

/* This process's address ranges a region may reach, from /proc/self/maps:
 * every readable or writable mapping but the kernel's ([vvar], [vdso],
 * [vsyscall]), those not writable marked OTD_RANGE_READ_ONLY, neighbours
 * of the same writability joined, in address order, up to cap of them
 * (*n says how many there are; more than cap: OTM_ERR_BAD_SIZE with the
 * first cap written). OTM_ERR_INVALID when the file cannot be read. */
otm_status otd_host_ranges(otd_range *out, size_t cap, size_t *n);

#endif
