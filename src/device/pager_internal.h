/*
 * pager_internal.h - the pager's state (otm/pager.h), shared by its two
 * files: pager.c (opening, placed pages, faults, changes) and
 * pager_reserve.c (the host's ranges reserved here).
 *
 * Every field is guarded by `lock` but fd, wake_fd and the allocator.
 */
#ifndef OTD_PAGER_INTERNAL_H
#define OTD_PAGER_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "otm/pager.h"

/* A placed page: its address and twin; a refused one has no twin. An
 * empty slot has page 0 (page 0 is never reserved: mmap refuses it). */
typedef struct slot {
    uint64_t page;
    uint8_t *twin;
} slot;

/* A reserved piece, and whether the host keeps it read-only: placed
 * pages are then read-only here too, and a region's store faults there as
 * it would on the host. */
typedef struct piece {
    uint64_t start, end;
    int read_only;
} piece;

struct otd_pager {
    int fd;
    int wake_fd;                /* an eventfd: otd_pager_wake */
    pthread_mutex_t lock;
    piece *res;                 /* reserved, sorted, disjoint */
    size_t nres, res_cap;
    slot *slots;                /* open addressing, cap a power of 2 */
    void *(*alloc)(size_t);     /* the twins' */
    void (*release)(void *);
    size_t used, cap;
    uint64_t total;
};

/* Under the lock: the first reserved piece that ends after `at` (nres if
 * none), and whether `page` lies in a reserved piece. */
size_t otd__pager_first_after(const otd_pager *pg, uint64_t at);
int otd__pager_reserved(const otd_pager *pg, uint64_t page);

#endif
