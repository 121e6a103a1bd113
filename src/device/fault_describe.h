/*
 * fault_describe.h - a fault in words, async-signal-safe.
 *
 * The sentences of otd_fault_describe (declared in otm/fault.h, defined in
 * fault_describe.c), built from pieces a signal handler may use: the fault
 * handlers of fault.c write the line of a fault outside any target region
 * with them, from the handler itself; the host (src/plugin/host_ops.c) calls
 * otd_fault_describe for the faults its workers report, so a worker and the
 * host say the same words.
 *
 * Every function here is async-signal-safe and must stay so: it writes only
 * into the caller's buffer, reads only its arguments and static constant
 * strings, and uses no stdio, allocation, lock or errno.
 */
#ifndef OTM_DEVICE_FAULT_DESCRIBE_H
#define OTM_DEVICE_FAULT_DESCRIBE_H

#include <stddef.h>

#include "otm/fault.h"

/* A NUL-terminated string being built in a caller's buffer. */
typedef struct otd_text {
    char *buf;
    size_t len; /* capacity, > 0 */
    size_t pos; /* < len: buf[pos] is the terminating NUL */
} otd_text;

/* Appends s, truncated to what fits; buf stays NUL-terminated. */
void otd_text_put(otd_text *t, const char *s);

/* Appends otd_fault_describe's sentence for *f ("no fault" for a NULL f),
 * truncated to what fits. */
void otd_text_put_fault(otd_text *t, const otd_fault *f);

#endif
