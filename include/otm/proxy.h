/*
 * otm/proxy.h - the devices of other libomptarget plugins a worker rank
 * serves as units 1 and up (otm/node.h): its node's GPU plugins, or its
 * host plugin, opened from files and driven through their __tgt_rtl_* C
 * ABI, the same ABI this project's plugin serves (libomptarget 14, 15,
 * 16).
 *
 * A plugin is named by what follows "libomptarget.rtl." in its file name:
 * "cuda", "amdgpu", "x86_64" (also spelled "host"), or any other name of
 * a file in the directory given (a test's plugin). Each is opened with
 * dlopen(RTLD_NOW | RTLD_LOCAL) by its path in that directory (the .so of
 * the name, or its .nextgen.so under libomptarget 16); its devices become
 * units in order, plugin by plugin. A plugin that does not load, lacks an
 * entry point, or reports no device is skipped with a line in `notes`,
 * never an error.
 *
 * Every call is synchronous: a submit, a retrieve, a kernel has completed
 * when the function returns. A kernel runs through a guarded call
 * (otm/fault.h): a host plugin's region that faults on this rank is a
 * fault of a target region, as for the rank's own CPU. Errors are values
 * with a sentence in `err` naming the plugin and its device: a device
 * whose init_device failed is OTM_ERR_PLUGIN_INIT for every call, a
 * plugin call that failed OTM_ERR_PLUGIN_CALL (data_alloc: OTM_ERR_NOMEM,
 * a kernel: OTM_ERR_KERNEL), a unit not served OTM_ERR_NO_DEVICE.
 */
#ifndef OTM_PROXY_H
#define OTM_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "otm/fault.h"
#include "otm/status.h"

typedef struct otd_proxy otd_proxy;

/* One entry of an image loaded on a unit: its device address, and 0 for a
 * kernel or the bytes of a global (otm_entry's layout). */
typedef struct otd_proxy_entry {
    uint64_t addr;
    uint64_t size;
} otd_proxy_entry;

/* The most devices a rank proxies, all plugins together. */
#define OTD_PROXY_MAX_UNITS 64u

/* Opens the plugins of `names` (a comma-separated list; "auto": every
 * accelerator plugin of `dir` that loads and has a device, "cuda" and
 * "amdgpu"; "none" or "": none) from directory `dir`. *out holds no unit
 * when none was found. `notes` receives one line per plugin skipped or
 * opened (NUL-terminated, lines joined by '\n'). OTM_ERR_INVALID for a
 * name that is not a plain file name part (a letter, then [A-Za-z0-9_-]),
 * with why in err; OTM_ERR_NOMEM. */
otm_status otd_proxy_open(otd_proxy **out, const char *dir, const char *names, char *notes,
                          size_t noteslen, char *err, size_t errlen);

/* Closes the plugins (deinit_plugin where they have it). NULL is a no-op. */
void otd_proxy_close(otd_proxy *px);

/* How many devices it serves; they are units 1..n of the rank. */
uint16_t otd_proxy_units(const otd_proxy *px);

/* Unit u's plugin name ("cuda") and the plugin's own number for it; NULL
 * and -1 for a unit it does not serve. */
const char *otd_proxy_plugin(const otd_proxy *px, uint16_t u);
int32_t otd_proxy_local(const otd_proxy *px, uint16_t u);

/* 1 when unit u's plugin accepts the device image [start, start + size)
 * (its is_valid_binary), else 0. */
int otd_proxy_accepts(otd_proxy *px, uint16_t u, const void *start, size_t size);

/* Loads the image on unit u, with `entries` (the host's table of the
 * image's descriptor: the plugin looks its kernels and globals up by
 * name): *table receives one entry per host entry, in the host's
 * order (address: the device's; size: 0 for a kernel), owned by the proxy
 * until the unit's next load or the close. OTM_ERR_PLUGIN_CALL with why when
 * the plugin refuses the image. */
otm_status otd_proxy_load(otd_proxy *px, uint16_t u, const void *start, size_t size,
                          const void *entries_begin, const void *entries_end,
                          const otd_proxy_entry **table, uint64_t *count, char *err,
                          size_t errlen);

/* The unit's memory (libomptarget's data_alloc kinds), and copies between
 * it and this process's memory, or between two units of one plugin (its
 * data_exchange; units of two plugins are copied through this process's
 * memory). */
otm_status otd_proxy_alloc(otd_proxy *px, uint16_t u, uint64_t size, int32_t kind,
                           uint64_t *addr, char *err, size_t errlen);
otm_status otd_proxy_free(otd_proxy *px, uint16_t u, uint64_t addr, char *err, size_t errlen);
otm_status otd_proxy_put(otd_proxy *px, uint16_t u, uint64_t dst, const void *src, uint64_t len,
                         char *err, size_t errlen);
otm_status otd_proxy_get(otd_proxy *px, uint16_t u, void *dst, uint64_t src, uint64_t len,
                         char *err, size_t errlen);
otm_status otd_proxy_copy(otd_proxy *px, uint16_t su, uint64_t src, uint16_t du, uint64_t dst,
                          uint64_t len, char *err, size_t errlen);

/* Runs the kernel at device address `kernel` of unit u with `nargs`
 * arguments (the unit's addresses, offsets added), `teams` teams of at
 * most `threads` threads (0: the plugin's choice). OTM_ERR_KERNEL with why
 * when the plugin says it failed; OTM_ERR_KERNEL_FAULT with *fault filled
 * when the kernel faulted in this process (a host plugin's). */
otm_status otd_proxy_run(otd_proxy *px, uint16_t u, uint64_t kernel, void **args,
                         uint32_t nargs, uint64_t teams, uint64_t threads, otd_fault *fault,
                         char *err, size_t errlen);

#endif
