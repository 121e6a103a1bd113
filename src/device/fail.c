/*
 * fail.c - the device layer's failures as a status and a sentence
 * (device_internal.h).
 */
#include "device_internal.h"

#include <stdarg.h>
#include <stdio.h>

otm_status otd_device_fail(otm_status st, char *err, size_t errlen,
                           const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}
