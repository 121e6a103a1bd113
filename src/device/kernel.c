/*
 * kernel.c - calling a kernel of any arity through libffi.
 *
 * libomptarget's x86_64 ABI passes every kernel argument as a pointer-sized
 * value, so one call description fits every kernel: n arguments of type
 * pointer, no result. libffi builds the call at run time, so there is no
 * table of fixed-arity trampolines and no arity limit below OTM's own.
 */
#include "otm/device.h"

#include <ffi.h>
#include <stdlib.h>

/* The largest argument count accepted; a kernel's captures number in the
 * tens, so a larger count is a corrupt request, not a kernel. */
#define OTM_KERNEL_MAX_ARGS 4096u

/* Kernels with up to this many arguments describe their call on the stack;
 * only larger ones pay for an allocation. */
#define OTM_KERNEL_STACK_ARGS 32u

static otm_status call(void *fn, void **args, uint32_t nargs,
                       ffi_type **types, void **values)
{
    ffi_cif cif;
    ffi_arg ignored;
    uint32_t i;

    /* libffi wants the address of each argument, not the argument. */
    for (i = 0; i < nargs; i++) {
        types[i] = &ffi_type_pointer;
        values[i] = &args[i];
    }
    if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, nargs, &ffi_type_void, types) !=
        FFI_OK)
        return OTM_ERR_KERNEL;
    ffi_call(&cif, FFI_FN(fn), &ignored, values);
    return OTM_OK;
}

otm_status otd_kernel_call(void *fn, void **args, uint32_t nargs)
{
    ffi_type *stack_types[OTM_KERNEL_STACK_ARGS];
    void *stack_values[OTM_KERNEL_STACK_ARGS];
    ffi_type **types = stack_types;
    void **values = stack_values;
    otm_status st;

    if (fn == NULL || nargs > OTM_KERNEL_MAX_ARGS ||
        (args == NULL && nargs > 0))
        return OTM_ERR_INVALID;
    if (nargs > OTM_KERNEL_STACK_ARGS) {
        types = malloc(nargs * sizeof(*types));
        values = malloc(nargs * sizeof(*values));
    }
    if (types == NULL || values == NULL)
        st = OTM_ERR_NOMEM;
    else
        st = call(fn, args, nargs, types, values);
    if (types != stack_types) {
        free(types);
        free(values);
    }
    return st;
}
