/*
 * sim/device.c - the simulated device of every worker (sim/device.h): the
 * kernels, the pattern images and their entries, and the output regions
 * print, behind the otm_device_ops the core calls.
 */
#include "device.h"

#include "otm/wire.h"

#include <string.h>

static otm_status k_inc(void **args, uint32_t nargs)
{
    if (nargs < 2)
        return OTM_ERR_KERNEL;
    uint8_t *p = args[0];
    for (uintptr_t i = 0; i < (uintptr_t)args[1]; i++)
        p[i]++;
    return OTM_OK;
}

/* Distinct, stable "addresses" for the kernels: what the host sends back. */
uint64_t sim_kernel_addr(sim_kernel k)
{
    return 0x5000u + 0x10u * (uint64_t)k;
}

const char *sim_entry_name(int k)
{
    static const char *const names[] = {"inc", "fail", "nop", "fault", "print",
                                        "sleep", "usm", "global"};
    _Static_assert(sizeof names / sizeof *names == SIM_K_COUNT + 1,
                   "a name for every kernel and the global");
    return k >= 0 && k <= SIM_K_COUNT ? names[k] : NULL;
}

uint64_t sim_names_hash(void)
{
    uint64_t h = OTM_WIRE_HASH_SEED;
    for (int k = 0; k <= SIM_K_COUNT; k++)
        h = otm_wire_hash(sim_entry_name(k), strlen(sim_entry_name(k)) + 1, h);
    return h;
}

static otm_status dev_run(void *ctx, uint64_t kernel, void **args,
                          uint32_t nargs, uint64_t teams, uint64_t threads,
                          otm_region_fault *fault)
{
    sim_device *dev = ctx;
    (void)teams, (void)threads;
    if (kernel == sim_kernel_addr(SIM_K_INC))
        return k_inc(args, nargs);
    if (kernel == sim_kernel_addr(SIM_K_NOP) || kernel == sim_kernel_addr(SIM_K_SLEEP))
        return OTM_OK;      /* SLEEP: its time passed before (sim/world.c) */
    if (kernel == sim_kernel_addr(SIM_K_USM))
        return dev->usm_status;     /* its bytes went both ways before */
    if (kernel == sim_kernel_addr(SIM_K_FAULT)) {
        *fault = (otm_region_fault){.signo = 11, .code = 1, .addr = 0,
                                    .flags = OTM_EXEC_FAULTED};
        return OTM_ERR_KERNEL_FAULT;
    }
    if (kernel == sim_kernel_addr(SIM_K_PRINT) && nargs >= 1) {
        dev->out_pending += (uint64_t)(uintptr_t)args[0];
        dev->out_next += (uint64_t)(uintptr_t)args[0];
        dev->err_pending += 2;
        return OTM_OK;
    }
    return OTM_ERR_KERNEL;
}

static void dev_pending(void *ctx, uint64_t *out, uint64_t *err)
{
    sim_device *dev = ctx;
    *out = dev->out_pending;
    *err = dev->err_pending;
}

static otm_status dev_take(void *ctx, uint8_t *dst, uint64_t out, uint64_t err)
{
    sim_device *dev = ctx;
    if (out > dev->out_pending || err > dev->err_pending || err % 2)
        return OTM_ERR_INVALID;
    for (uint64_t i = 0; i < out; i++)
        dst[i] = sim_image_byte(dev->out_taken + i);
    for (uint64_t i = 0; i < err; i += 2)
        memcpy(dst + out + i, "e\n", 2);
    dev->out_taken += out;
    dev->out_pending -= out;
    dev->err_pending -= err;
    return OTM_OK;
}

static int is_pattern(const uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i] != sim_image_byte(i))
            return 0;
    return 1;
}

uint64_t sim_image_hash(uint64_t n)
{
    uint64_t h = OTM_WIRE_HASH_SEED;
    for (uint64_t i = 0; i < n; i++) {
        uint8_t b = sim_image_byte(i);
        h = otm_wire_hash(&b, 1, h);
    }
    return h;
}

static otm_status dev_load(void *ctx, const otm_image_ref *ref, const otm_entry **e,
                           uint64_t *count)
{
    sim_device *dev = ctx;
    if (ref->names_hash != sim_names_hash())
        return OTM_ERR_NO_KERNEL;
    if (!ref->bytes && (ref->size > SIM_IMAGE_LOCAL_MAX || ref->hash != sim_image_hash(ref->size)))
        return OTM_ERR_NO_IMAGE;
    if (ref->bytes && !is_pattern(ref->bytes, ref->size))
        return OTM_ERR_INVALID;
    dev->images++;
    for (int k = 0; k < SIM_K_COUNT; k++)
        dev->entries[k] = (otm_entry){sim_kernel_addr((sim_kernel)k), 0};
    dev->entries[SIM_K_COUNT] =
        (otm_entry){(uint64_t)(uintptr_t)dev->global, SIM_GLOBAL_SIZE};
    *e = dev->entries;
    *count = SIM_K_COUNT + 1;
    return OTM_OK;
}

static void dev_unload(void *ctx, uint64_t id)
{
    (void)id;
    ((sim_device *)ctx)->images--;
}

otm_device_ops sim_device_ops(sim_device *dev)
{
    otm_device_ops ops = {
        .load_image = dev_load, .unload_image = dev_unload,
        .run_kernel = dev_run, .output_pending = dev_pending,
        .output_take = dev_take, .ctx = dev,
    };
    return ops;
}
