/*
 * otm/frag.h - how a buffer is cut into MPI messages.
 *
 * MPI counts are int, so no message may exceed INT_MAX bytes; large buffers
 * travel as fragments. The sender chooses the fragment size and puts it in
 * the event header, so both sides compute the same plan without reading
 * their own environment. A plan is pure arithmetic: no allocation.
 *
 * A buffer of `total` bytes with fragment size F (clamped to [1, INT_MAX])
 * has ceil(total / F) fragments; fragment i covers [i*F, min((i+1)*F, total)).
 * A buffer of 0 bytes has 0 fragments.
 */
#ifndef OTM_FRAG_H
#define OTM_FRAG_H

#include <stdint.h>

#include "otm/status.h"

typedef struct otm_frag_plan {
    uint64_t total;     /* bytes to move */
    uint64_t frag;      /* fragment size, 1 <= frag <= INT_MAX */
    uint64_t count;     /* number of fragments */
} otm_frag_plan;

/* Plans `total` bytes in fragments of `frag` bytes. A `frag` of 0 or above
 * INT_MAX is clamped into range (0 -> INT_MAX, large -> INT_MAX), so every
 * plan is valid. */
otm_frag_plan otm_frag_make(uint64_t total, uint64_t frag);

/* Validates a plan received from a peer: OTM_ERR_BAD_SIZE when `frag` is 0
 * or above INT_MAX. */
otm_status otm_frag_check(uint64_t total, uint64_t frag);

/* Offset and length of fragment `i` (< count) of plan `p`; the length is
 * always in [1, INT_MAX]. */
uint64_t otm_frag_offset(const otm_frag_plan *p, uint64_t i);
int otm_frag_length(const otm_frag_plan *p, uint64_t i);

#endif
