/*
 * sim/device.c - the simulated device of every worker (sim/device.h): the
 * kernels, the pattern images and their entries, and the output regions
 * print, behind the otm_device_ops the core calls; and the proxied units,
 * whose memory is an arena the worker cannot address.
 */
#include "device.h"

#include "otm/wire.h"

#include <stdlib.h>
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

uint64_t sim_unit_kernel_addr(uint16_t u, sim_kernel k)
{
    return sim_kernel_addr(k) + 0x1000u * (uint64_t)u;
}

/* ---- proxied units: an arena of the device's --------------------------------- */

static sim_unit *unit_of(sim_device *dev, uint16_t u)
{
    return u >= 1 && u < dev->units && u < SIM_MAX_UNITS ? &dev->unit[u] : NULL;
}

uint8_t *sim_unit_bytes(sim_device *dev, uint16_t u, uint64_t addr, uint64_t len)
{
    sim_unit *un = unit_of(dev, u);
    uint64_t base = SIM_UNIT_BASE(u);
    if (!un || addr < base || addr - base > un->used || len > un->used - (addr - base))
        return NULL;
    return un->arena + (addr - base);
}

static otm_status mem_alloc(void *ctx, uint16_t u, uint64_t size, uint64_t kind,
                            uint64_t *addr)
{
    sim_unit *un = unit_of(ctx, u);
    uint64_t need = (size ? size : 1) + 15;
    (void)kind;
    if (!un || need > SIM_UNIT_ARENA_MAX - un->used)
        return un ? OTM_ERR_NOMEM : OTM_ERR_NO_DEVICE;
    if (un->used + need > un->cap) {
        uint64_t cap = un->cap ? un->cap : 4096;
        while (cap < un->used + need)
            cap *= 2;
        uint8_t *grown = realloc(un->arena, (size_t)cap);
        if (!grown)
            return OTM_ERR_NOMEM;
        un->arena = grown, un->cap = cap;
    }
    *addr = SIM_UNIT_BASE(u) + un->used;
    un->used += need & ~15ull;
    un->allocs++;
    return OTM_OK;
}

static otm_status mem_free(void *ctx, uint16_t u, uint64_t addr)
{
    sim_unit *un = unit_of(ctx, u);
    if (!un || !sim_unit_bytes(ctx, u, addr, 0) || !un->allocs)
        return OTM_ERR_BAD_POINTER;
    un->allocs--;
    return OTM_OK;
}

static otm_status mem_put(void *ctx, uint16_t u, uint64_t dst, const void *src, uint64_t len)
{
    uint8_t *at = sim_unit_bytes(ctx, u, dst, len);
    if (!at)
        return OTM_ERR_BAD_POINTER;
    memcpy(at, src, len);
    return OTM_OK;
}

static otm_status mem_get(void *ctx, uint16_t u, void *dst, uint64_t src, uint64_t len)
{
    uint8_t *at = sim_unit_bytes(ctx, u, src, len);
    if (!at)
        return OTM_ERR_BAD_POINTER;
    memcpy(dst, at, len);
    return OTM_OK;
}

static otm_status mem_copy(void *ctx, uint16_t su, uint64_t src, uint16_t du, uint64_t dst,
                           uint64_t len)
{
    uint8_t *from = sim_unit_bytes(ctx, su, src, len), *to = sim_unit_bytes(ctx, du, dst, len);
    if (!from || !to)
        return OTM_ERR_BAD_POINTER;
    memmove(to, from, len);
    return OTM_OK;
}

/* A kernel on a proxied unit: its arguments are the unit's addresses. */
static otm_status unit_run(sim_device *dev, uint16_t u, uint64_t kernel, void **args,
                           uint32_t nargs)
{
    if (kernel == sim_unit_kernel_addr(u, SIM_K_NOP) ||
        kernel == sim_unit_kernel_addr(u, SIM_K_SLEEP))
        return OTM_OK;
    if (kernel != sim_unit_kernel_addr(u, SIM_K_INC) || nargs < 2)
        return OTM_ERR_KERNEL;     /* FAIL, FAULT, PRINT, USM: a failed launch */
    uint64_t n = (uint64_t)(uintptr_t)args[1];
    uint8_t *p = sim_unit_bytes(dev, u, (uint64_t)(uintptr_t)args[0], n);
    if (!p)
        return OTM_ERR_KERNEL;
    for (uint64_t i = 0; i < n; i++)
        p[i]++;
    return OTM_OK;
}

static otm_status dev_run(void *ctx, uint16_t unit, uint64_t kernel, void **args,
                          uint32_t nargs, uint64_t teams, uint64_t threads,
                          otm_region_fault *fault)
{
    sim_device *dev = ctx;
    (void)teams, (void)threads;
    if (unit)
        return unit_run(dev, unit, kernel, args, nargs);
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

static otm_status dev_load(void *ctx, uint16_t unit, const otm_image_ref *ref,
                           const otm_entry **e, uint64_t *count)
{
    sim_device *dev = ctx;
    if (ref->names_hash != sim_names_hash())
        return OTM_ERR_NO_KERNEL;
    if (!ref->bytes && (ref->size > SIM_IMAGE_LOCAL_MAX || ref->hash != sim_image_hash(ref->size)))
        return OTM_ERR_NO_IMAGE;
    if (ref->bytes && !is_pattern(ref->bytes, ref->size))
        return OTM_ERR_INVALID;
    if (unit) {
        /* A proxied unit's image: its kernels and a global in its arena
         * (the first load allocates it). */
        sim_unit *un = unit_of(dev, unit);
        if (!un)
            return OTM_ERR_NO_DEVICE;
        uint64_t global = un->entries[SIM_K_COUNT].addr;
        if (!global && mem_alloc(dev, unit, SIM_GLOBAL_SIZE, 0, &global))
            return OTM_ERR_NOMEM;
        un->images++;
        for (int k = 0; k < SIM_K_COUNT; k++)
            un->entries[k] = (otm_entry){sim_unit_kernel_addr(unit, (sim_kernel)k), 0};
        un->entries[SIM_K_COUNT] = (otm_entry){global, SIM_GLOBAL_SIZE};
        *e = un->entries;
        *count = SIM_K_COUNT + 1;
        return OTM_OK;
    }
    dev->images++;
    for (int k = 0; k < SIM_K_COUNT; k++)
        dev->entries[k] = (otm_entry){sim_kernel_addr((sim_kernel)k), 0};
    dev->entries[SIM_K_COUNT] =
        (otm_entry){(uint64_t)(uintptr_t)dev->global, SIM_GLOBAL_SIZE};
    *e = dev->entries;
    *count = SIM_K_COUNT + 1;
    return OTM_OK;
}

static void dev_unload(void *ctx, uint16_t unit, uint64_t id)
{
    sim_device *dev = ctx;
    (void)id;
    if (unit_of(dev, unit))
        dev->unit[unit].images--;
    else
        dev->images--;
}

otm_device_ops sim_device_ops(sim_device *dev)
{
    otm_device_ops ops = {
        .units = dev->units,
        .load_image = dev_load, .unload_image = dev_unload,
        .run_kernel = dev_run, .output_pending = dev_pending,
        .output_take = dev_take, .ctx = dev,
    };
    if (dev->units > 1) {
        ops.mem_alloc = mem_alloc, ops.mem_free = mem_free;
        ops.mem_put = mem_put, ops.mem_get = mem_get, ops.mem_copy = mem_copy;
    }
    return ops;
}

void sim_device_fini(sim_device *dev)
{
    for (int u = 1; u < SIM_MAX_UNITS; u++) {
        free(dev->unit[u].arena);
        dev->unit[u] = (sim_unit){0};
    }
}
