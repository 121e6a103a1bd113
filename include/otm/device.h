/*
 * otm/device.h - what a worker rank does as an OpenMP device: check and load
 * device images, find their entries, call kernels.
 *
 * A device image is the x86_64 ELF shared object that clang embeds in the
 * program for the x86_64-pc-linux-gnu offload target. It is checked with
 * libelf before anything else touches it, then loaded from memory with
 * memfd_create + dlopen("/proc/self/fd/N"): no file is ever written, so
 * nothing is left behind even if the process dies. The memfd stays open
 * while the image is loaded.
 *
 * Kernels are the image's outlined target functions; libomptarget's x86_64
 * ABI passes every argument as a pointer-sized value, so a kernel of n
 * arguments is called as fn(args[0], ..., args[n-1]) through libffi (any n,
 * no fixed-arity trampolines).
 *
 * Errors are values with a sentence in `err` (always NUL-terminated when
 * errlen > 0); nothing here aborts on bad input.
 */
#ifndef OTM_DEVICE_H
#define OTM_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "otm/status.h"

typedef struct otd_image otd_image;

/* OTM_OK when [start, start + size) is a well-formed ELF64 little-endian
 * shared object (ET_DYN) for x86_64 (EM_X86_64) whose section and program
 * headers lie inside the buffer; OTM_ERR_INVALID (with the reason) for
 * anything else, including NULL/empty input. Never reads outside the
 * buffer. */
otm_status otd_image_check(const void *start, size_t size, char *err,
                           size_t errlen);

/* The device image inside [start, start + size). clang 16 and later
 * register the image wrapped in an LLVM offload binary (magic 10 FF 10 AD,
 * version 1: a 32-byte header, then one entry giving the image's offset
 * and size; llvm/Object/OffloadBinary.h of LLVM 16), which libomptarget 16
 * unwraps before it calls the plugin; a worker reads the program's own
 * descriptor and must do the same. A buffer without that magic is the
 * image itself (clang 14): *image = start, *image_size = size. A wrapper
 * whose header, entry or image lies outside the buffer, or of another
 * version, is OTM_ERR_INVALID with the reason; never reads outside. */
otm_status otd_image_unwrap(const void *start, size_t size, const void **image,
                            size_t *image_size, char *err, size_t errlen);

/* Checks, then loads the image privately (RTLD_NOW | RTLD_LOCAL). Its table
 * of entries, when it has one, must lie in its loaded memory
 * (OTM_ERR_INVALID otherwise). On success
 * *out owns the handle and the memfd; every load is an independent copy with
 * its own globals, also of the same bytes. OTM_ERR_INVALID for a bad image or
 * a NULL out, OTM_ERR_NOMEM (also when the memfd cannot hold the image), or
 * OTM_ERR_NO_KERNEL when the loader or the system refuses it (the dlerror or
 * errno text is in err). */
otm_status otd_image_load(const void *start, size_t size, otd_image **out,
                          char *err, size_t errlen);

/* The address of symbol `name` defined in the image itself, or NULL. A name
 * that only the libraries the image links define (libomp, libc) is NULL: it
 * is not one of the image's kernels or globals. */
void *otd_image_symbol(otd_image *img, const char *name);

/* One entry of an image's own table of offload entries (the section
 * omp_offloading_entries, laid out as libomptarget's __tgt_offload_entry):
 * a kernel (size 0) or a global, with local symbols, and the global
 * constructors and destructors of C++ declare-target code (flags 2, 4),
 * which no symbol lookup finds. */
typedef struct otd_image_entry {
    void *addr;
    const char *name;
    uint64_t size;
    int32_t flags;
    int32_t reserved;
} otd_image_entry;

/* The loaded image's own entry table, in the image's order (which is the
 * order of the host's table for the same code), with the addresses and
 * name pointers the loader relocated. *table is NULL with *count 0 for an
 * image without a table. OTM_ERR_INVALID for NULL arguments. */
otm_status otd_image_entries(otd_image *img, const otd_image_entry **table,
                             uint64_t *count);

/* The loaded image's dlopen handle (for otd_fault_hook_exit), or NULL. */
void *otd_image_handle(otd_image *img);

/* Unloads the image and closes its memfd. NULL is a no-op. When the loader
 * keeps the library mapped (an image marked NODELETE), the memfd stays open
 * so that its /proc/self/fd name is never reused for another image. */
void otd_image_unload(otd_image *img);

/* Calls fn(args[0], ..., args[nargs-1]) with every argument passed as a
 * void *. OTM_ERR_INVALID when fn is NULL, nargs > 4096, or args is NULL with
 * nargs > 0; OTM_ERR_KERNEL if libffi cannot prepare the call, OTM_ERR_NOMEM.
 * The kernel's own failures are not seen here: it returns nothing. */
otm_status otd_kernel_call(void *fn, void **args, uint32_t nargs);

/* The `requires` flags (OMP_REQ_*) the program at `path` registers, read
 * from its file without running it: *flags is 0 when it registers none or
 * they are not found (a stripped clang 14-17 program keeps no symbol of
 * its registration). OTM_ERR_INVALID (with why) for a file that cannot
 * be read or is not ELF. */
otm_status otd_program_requires(const char *path, uint64_t *flags, char *err,
                                size_t errlen);

#endif
