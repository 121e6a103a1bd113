/*
 * device_internal.h - what the files of the device layer share and nobody else
 * may use: the plugin sees the layer only through otm/device.h,
 * otm/fault.h and otm/output.h. Declarations are grouped by the file that
 * defines them.
 */
#ifndef OTM_DEVICE_INTERNAL_H
#define OTM_DEVICE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "otm/status.h"

/* ---- fail.c ------------------------------------------------------------- */

/* Formats the reason into err (when err is not NULL and errlen > 0,
 * truncated to fit) and returns st, so that every failure of image.c and
 * output.c is one `return otd_device_fail(...)`. Not async-signal-safe
 * (vsnprintf): the fault handlers use fault_describe.h. */
otm_status otd_device_fail(otm_status st, char *err, size_t errlen,
                           const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- fault.c ------------------------------------------------------------ */

/* An exit function called by the code of an image hooked with
 * otd_fault_hook_exit (exit_hooks.c): `by` is OTM_FAULT_BY_*, `status` its
 * argument. Taken as a fault (otm/fault.h): on a thread in a guarded call,
 * that call returns it; on another thread while guarded calls are active,
 * or once one has returned a fault, the thread is parked. In both cases it
 * does not return. It returns when no guarded call waits for it, with the
 * thread's signal mask as it was: the caller then runs libc's function. */
void otd_fault_on_exit(int32_t by, int status);

#endif
