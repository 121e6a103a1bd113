/*
 * otm/tags.h - allocation of MPI tags for events on one communicator.
 *
 * Each event talks on its own (communicator, tag). A tag handed out here is
 * "live" until released; it is never handed out again while live. Tags below
 * `first` are control tags and are never handed out; nor is anything above
 * `last` (the caller clamps `last` to MPI_TAG_UB). Allocation is round-robin
 * from a cursor, so a released tag is reused as late as possible (a stale
 * message of an old event is then less likely to meet a new event). A tag
 * can also be retired for good (quarantined) when its event ended without a
 * clean answer from the peer, since late messages may still arrive on it.
 *
 * The allocator owns no locks; the caller serialises access. No function
 * allocates memory except otm_tags_init.
 */
#ifndef OTM_TAGS_H
#define OTM_TAGS_H

#include <stddef.h>
#include <stdint.h>

#include "otm/status.h"

typedef struct otm_tags {
    int first;          /* lowest tag handed out */
    int last;           /* highest tag handed out (inclusive) */
    int cursor;         /* next tag to try */
    int live;           /* tags currently live */
    int retired;        /* tags quarantined for good */
    uint64_t *bits;     /* two planes of one bit per tag in [first, last],
                         * one block: 1 = not free (live or retired), then
                         * 1 = retired */
} otm_tags;

/* Prepares `t` for tags in [first, last]. Requires 0 <= first <= last and
 * at most INT_MAX tags (so not 0..INT_MAX: the int counters must hold them).
 * Returns OTM_ERR_INVALID for a bad range, OTM_ERR_NOMEM if the bitmap
 * cannot be allocated (`alloc` is the instance's allocator; may be NULL for
 * calloc-like behaviour through malloc). */
otm_status otm_tags_init(otm_tags *t, int first, int last,
                         void *(*alloc)(void *ctx, size_t size), void *ctx);

/* Frees the bitmap with `release` (free() when NULL). */
void otm_tags_fini(otm_tags *t, void (*release)(void *ctx, void *p), void *ctx);

/* Hands out a free tag in *tag. OTM_ERR_TAGS_EXHAUSTED when every tag in the
 * range is live or retired; *tag is then untouched. */
otm_status otm_tags_alloc(otm_tags *t, int *tag);

/* Makes a live tag free again. OTM_ERR_INVALID (and no change) when `tag` is
 * outside the range or not live. */
otm_status otm_tags_release(otm_tags *t, int tag);

/* Retires a live tag for good: it stays unavailable. OTM_ERR_INVALID (and no
 * change) when `tag` is outside the range or not live. */
otm_status otm_tags_retire(otm_tags *t, int tag);

/* 1 when `tag` is live (allocated, not released, not retired), else 0. */
int otm_tags_is_live(const otm_tags *t, int tag);

#endif
