/*
 * sim/device.h - the simulated device of each worker of a world
 * (sim/world.h): what its otm_device_ops load, run and print.
 *
 * The device is plain data and functions, with no clock and no MPI: the
 * world gives each worker one, zeroed, and hands sim_device_ops to its
 * node. The tests build the images they LOAD and the kernels they EXECUTE
 * from the names below, and check what regions printed against
 * sim_image_byte.
 */
#ifndef SIM_DEVICE_H
#define SIM_DEVICE_H

#include <stdint.h>

#include "otm/node.h"

#define SIM_GLOBAL_SIZE 64

/* Its images are "pattern images":
 * byte i of an image of n bytes is sim_image_byte(i). A LOAD by reference
 * finds one (the worker's own copy) when n <= SIM_IMAGE_LOCAL_MAX and the
 * hash matches; one whose bytes travel is accepted when they are the
 * pattern, refused (OTM_ERR_INVALID) otherwise. Every image holds the
 * kernels below and one global of SIM_GLOBAL_SIZE bytes (a per-rank
 * array). */
#define SIM_IMAGE_LOCAL_MAX 64
typedef enum sim_kernel {
    SIM_K_INC = 0,      /* args: buffer, length (literal): each byte += 1 */
    SIM_K_FAIL,         /* returns OTM_ERR_KERNEL */
    SIM_K_NOP,          /* does nothing */
    SIM_K_FAULT,        /* dies as a NULL dereference would: SIGSEGV at 0 */
    SIM_K_PRINT,        /* args: length (literal): writes that many bytes
                         * sim_image_byte(i) to stdout, then "e\n" to stderr */
    SIM_K_SLEEP,        /* args: ns (literal): runs that long in virtual
                         * time; the worker's handler waits before it takes
                         * it, its gate goes on meanwhile (a long region) */
    SIM_K_USM,          /* args: addr, len (literals): adds 1 to each of
                         * rank 0's bytes [addr, addr + len) through the page
                         * protocol; its handler does not take it before the
                         * world's pager wrote them back (sim/pages.h), and
                         * it returns the pager's usm_status */
    SIM_K_COUNT
} sim_kernel;
uint64_t sim_kernel_addr(sim_kernel k);
static inline uint8_t sim_image_byte(uint64_t i) { return (uint8_t)(i * 7u + 3u); }
/* otm_wire_hash of the pattern image of n bytes. */
uint64_t sim_image_hash(uint64_t n);
/* The name of entry k of every image (the kernels, then "global" at
 * SIM_K_COUNT), and the hash over those names that a LOAD carries,
 * computed as the plugin's host computes it from an image (each name with
 * its NUL, otm_wire_hash). A LOAD with another hash is refused with
 * OTM_ERR_NO_KERNEL, as the plugin's worker refuses an image whose entries
 * are not the host's. */
const char *sim_entry_name(int k);
uint64_t sim_names_hash(void);

/* One worker's device. Zeroed: no image loaded, no output. */
typedef struct sim_device {
    uint8_t global[SIM_GLOBAL_SIZE];
    otm_entry entries[SIM_K_COUNT + 1];
    int64_t images;         /* loaded and not unloaded */
    uint64_t out_pending, err_pending;  /* SIM_K_PRINT's output not taken */
    uint64_t out_next;      /* index of the next stdout byte printed */
    uint64_t out_taken;     /* index of the next stdout byte taken */
    otm_status usm_status;  /* what the SIM_K_USM region taken next returns */
} sim_device;

/* The ops the core calls on `dev` (their ctx); `dev` outlives the node. */
otm_device_ops sim_device_ops(sim_device *dev);

#endif
