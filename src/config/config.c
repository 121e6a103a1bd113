/*
 * config.c - the core's defaults and the ranges it accepts (otm/config.h).
 */
#include "otm/config.h"

otm_config otm_config_default(void)
{
    otm_config c = {
        .ncomms = 4,
        .frag_size = 64u << 20,
        .inline_max = 4096,
        .tag_space = 65535,
        .window = 4,
        .timeout_ns = 0,
    };
    return c;
}

/* The bounds a field's type already guarantees (inline_max >= 0,
 * tag_space <= INT_MAX) are not compared: compilers warn about comparisons
 * that are always true. */
otm_status otm_config_check(const otm_config *c)
{
    if (c->ncomms < OTM_NCOMMS_MIN || c->ncomms > OTM_NCOMMS_MAX ||
        c->frag_size < OTM_FRAG_SIZE_MIN || c->frag_size > OTM_FRAG_SIZE_MAX ||
        c->inline_max > OTM_INLINE_MAX_MAX ||
        c->tag_space < OTM_TAG_SPACE_MIN ||
        c->window < OTM_WINDOW_MIN || c->window > OTM_WINDOW_MAX)
        return OTM_ERR_INVALID;
    return OTM_OK;
}
