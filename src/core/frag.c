/*
 * frag.c - the fragment plan of a buffer: pure arithmetic on uint64_t.
 *
 * No product below can overflow: an offset i * frag is only formed for
 * i < count, and then it is below total, itself a uint64_t.
 */
#include "otm/frag.h"

#include <limits.h>

/* Both sides must agree on the clamping, so it lives in one place. */
static uint64_t clamp_frag(uint64_t frag)
{
    if (frag == 0 || frag > INT_MAX)
        return INT_MAX;
    return frag;
}

otm_frag_plan otm_frag_make(uint64_t total, uint64_t frag)
{
    otm_frag_plan p;

    p.total = total;
    p.frag = clamp_frag(frag);
    /* ceil(total / frag) written so that total near UINT64_MAX cannot
     * overflow, as total + frag - 1 could. */
    p.count = total / p.frag + (total % p.frag != 0);
    return p;
}

otm_status otm_frag_check(uint64_t total, uint64_t frag)
{
    /* Any total can be planned; only the fragment size can be wrong. */
    (void)total;
    if (frag == 0 || frag > INT_MAX)
        return OTM_ERR_BAD_SIZE;
    return OTM_OK;
}

uint64_t otm_frag_offset(const otm_frag_plan *p, uint64_t i)
{
    /* An index past the end maps to the end of the buffer rather than to a
     * product that might wrap around. */
    if (i >= p->count)
        return p->total;
    return i * p->frag;
}

int otm_frag_length(const otm_frag_plan *p, uint64_t i)
{
    uint64_t rest;

    /* Past the end there is nothing left to move. */
    if (i >= p->count)
        return 0;
    rest = p->total - i * p->frag;
    return (int)(rest < p->frag ? rest : p->frag);
}
