/*
 * log.c - lines to the node's log hook, prefixed with the rank.
 */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

void otm__log(otm_node *node, int level, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    if (!node->hooks.log)
        return;
    int n = snprintf(line, sizeof line, "omptarget-mpi[%d]: ", node->rank);
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    node->hooks.log(node->hooks.ctx, level, line);
}
