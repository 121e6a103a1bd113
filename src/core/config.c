/*
 * config.c - the core's defaults and the ranges it accepts (otm/config.h).
 */
#include <limits.h>

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

otm_status otm_config_check(const otm_config *c)
{
    if (c->ncomms < 1 || c->ncomms > 64 || c->frag_size < 1 ||
        c->frag_size > INT_MAX || c->inline_max > (1u << 20) ||
        c->tag_space < 1 || c->window < 1 || c->window > OTM_WINDOW_MAX)
        return OTM_ERR_INVALID;
    return OTM_OK;
}
