/*
 * otm/host_code.h - rank 0's program and libraries at rank 0's addresses
 * in a device rank, while every rank keeps its own address randomisation.
 *
 * A region can be handed host addresses of code and constant data: a
 * host function pointer (`declare target indirect`, or any pointer in
 * mapped data), an object's virtual table pointer, a pointer to a string
 * constant. Each rank runs the same program and libraries, but at
 * addresses of its own. At start-up rank 0 describes its loaded objects
 * (otd_host_code_describe: each one's identity and load address) and
 * every device rank places, for each object it has loaded too, at rank
 * 0's addresses (otd_host_code_place):
 *
 *  - the object's read-only segments (constants, virtual tables' targets'
 *    names, the ELF headers), mapped from its file, read-only;
 *  - its RELRO pages (virtual tables, the GOT), copied from this
 *    process's own relocated ones, read-only: a virtual table read there
 *    names this process's own functions, called directly;
 *  - its code, mapped readable but not executable: a call that lands
 *    there faults, and the fault handler of otm/fault.h resumes it at
 *    the same instruction of this process's own copy
 *    (otd_host_code_redirect): the function runs here, with this
 *    process's globals and libraries. One signal per call.
 *
 * Nothing is placed for the objects' writable data (their globals), nor
 * for rank 0's heap: a region that reaches them through a host pointer
 * it was never given faults with the report, as for any host memory.
 * Rank 0's main stack range is made unreachable here too (a guard), so
 * that a host stack address never lands in this process's own stack.
 *
 * Objects are matched by their GNU build-id and program headers (a hash
 * of each PT_LOAD and PT_GNU_RELRO), and, for objects without a build-id,
 * their file's base name. A range this process already uses for
 * something else is left alone and counted: a call there then faults with
 * the report. Errors are values with a sentence in `err`.
 *
 * The description (what rank 0 sends), little-endian:
 *   head, 32 bytes: magic "OTHC" (u32 0x4348544f), version 1 (u32), the
 *     count of objects (u32), 0 (u32), rank 0's stack range lo, hi (u64)
 *   each object: its load address (u64), the hash of its program headers
 *     (u64), the build-id's length (u8, at most 64), the base name's
 *     length (u8), 0 (u16), the build-id, the base name
 */
#ifndef OTM_HOST_CODE_H
#define OTM_HOST_CODE_H

#include <stddef.h>
#include <stdint.h>

#include "otm/pager.h"
#include "otm/status.h"

/* What otd_host_code_place did. */
typedef struct otd_host_code_counts {
    unsigned objects;   /* rank 0's objects described */
    unsigned matched;   /* ... that this process has loaded too */
    unsigned same;      /* ... at rank 0's very address: nothing to place */
    unsigned placed;    /* ranges placed at rank 0's addresses */
    unsigned taken;     /* ranges this process already used: left alone */
    int stack_guard;    /* 1 when rank 0's stack range is unreachable here */
} otd_host_code_counts;

/* The largest description otd_host_code_place accepts, and the most
 * objects in one. */
#define OTD_HOST_CODE_MAX_BYTES (1u << 20)
#define OTD_HOST_CODE_MAX_OBJECTS 1024u

/* This process's loaded objects and main stack range, described for a
 * device rank: *out is malloc'd (free it), *len its length.
 * OTM_ERR_NOMEM; OTM_ERR_BAD_SIZE when the process holds more objects
 * than OTD_HOST_CODE_MAX_OBJECTS (those past it are left out, the rest
 * is described). */
otm_status otd_host_code_describe(uint8_t **out, size_t *len, char *err, size_t errlen);

/* Places rank 0's objects (desc, from otd_host_code_describe on rank 0)
 * at rank 0's addresses in this process, and guards rank 0's stack range,
 * as the top of this file says; *counts says what was done (may be
 * NULL). Once per process: a second call is OTM_ERR_BUSY until
 * otd_host_code_clear. A description that is malformed (bad magic or
 * version, a count or length that overruns it, more than
 * OTD_HOST_CODE_MAX_OBJECTS) is OTM_ERR_BAD_MESSAGE with why, and
 * nothing is placed; OTM_ERR_NOMEM. */
otm_status otd_host_code_place(const uint8_t *desc, size_t len, otd_host_code_counts *counts,
                               char *err, size_t errlen);

/* The ranges otd_host_code_place holds at rank 0's addresses (placed
 * segments, the stack guard excluded), sorted and disjoint, page-aligned;
 * *n of them. Valid until otd_host_code_clear. For the pager, which must
 * leave them alone. */
const otd_range *otd_host_code_ranges(size_t *n);

/* Makes rank 0's stack range reachable again (unmaps the guard): unified
 * shared memory serves rank 0's stack pages there. */
void otd_host_code_unguard(void);

/* Unmaps everything placed and forgets it (tests; no region may run). */
void otd_host_code_clear(void);

/* For the SIGSEGV handler (async-signal-safe): when `pc`, the faulting
 * instruction's address, lies in the code of a placed object, the same
 * instruction in this process's own copy, else 0. */
uint64_t otd_host_code_redirect(uint64_t pc);

#endif
