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

/* Proxied units (otm/node.h): a worker may serve up to SIM_MAX_UNITS
 * devices. Unit 0 is the worker's own memory, as above. A proxied unit
 * stands for an accelerator: its memory is an arena of the device's,
 * whose addresses are SIM_UNIT_BASE(u) + offset, non-canonical on x86_64,
 * so that code of the worker that took one for its own memory faults at
 * once; the core reaches it only through the mem_* hooks. Each unit's
 * images list the kernels at addresses of its own (sim_unit_kernel_addr)
 * and a global in its arena; SIM_K_INC adds one to the arena's bytes. */
#define SIM_MAX_UNITS 4
#define SIM_UNIT_BASE(u) (0xa000000000000000ull + ((uint64_t)(u) << 40))
#define SIM_UNIT_ARENA_MAX (64ull << 20)

typedef struct sim_unit {
    uint8_t *arena;         /* malloc'd, grows; freed by sim_device_fini */
    uint64_t used, cap;     /* bump allocation */
    uint64_t allocs;        /* live allocations (mem_alloc minus mem_free) */
    int64_t images;
    otm_entry entries[SIM_K_COUNT + 1];
} sim_unit;

/* One worker's device. Zeroed: no image loaded, no output, one unit. */
typedef struct sim_device {
    uint8_t global[SIM_GLOBAL_SIZE];
    otm_entry entries[SIM_K_COUNT + 1];
    int64_t images;         /* loaded and not unloaded */
    uint64_t out_pending, err_pending;  /* SIM_K_PRINT's output not taken */
    uint64_t out_next;      /* index of the next stdout byte printed */
    uint64_t out_taken;     /* index of the next stdout byte taken */
    otm_status usm_status;  /* what the SIM_K_USM region taken next returns */
    uint16_t units;         /* 0 or 1: unit 0 alone; up to SIM_MAX_UNITS */
    sim_unit unit[SIM_MAX_UNITS];   /* [0] unused */
} sim_device;

/* The address of kernel k on unit u of a device (unit 0: sim_kernel_addr). */
uint64_t sim_unit_kernel_addr(uint16_t u, sim_kernel k);

/* The ops the core calls on `dev` (their ctx); `dev` outlives the node. */
otm_device_ops sim_device_ops(sim_device *dev);

/* The arena bytes [addr, addr + len) of a proxied unit, or NULL when they
 * are not all in it: for the tests to read what landed. */
uint8_t *sim_unit_bytes(sim_device *dev, uint16_t u, uint64_t addr, uint64_t len);

/* Frees the proxied units' arenas. */
void sim_device_fini(sim_device *dev);

#endif
