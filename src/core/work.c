/*
 * work.c - what an event has a worker's device do: run a region's kernel,
 * load or unload an image (through the device hooks, otm/node.h), and
 * keep what the reply carries back.
 *
 * dest.c has checked every parameter before it calls here; the node is
 * touched only through the table of images, the allocator, the device
 * hooks and, after a region's fault, its `failed` flag.
 */
#include <string.h>

#include "internal.h"

/* The region's result (otm/wire.h) into scratch: the output it left and,
 * when it faulted, how. Output that finds no memory stays with the device
 * for the next region's reply: it is late, not lost. */
static void keep_result(otm_node *node, otm_event *ev, const otm_region_fault *f,
                        int faulted)
{
    const otm_device_ops *d = &node->hooks.device;
    otm_exec_result r = {0};
    if (d->output_pending && d->output_take)
        d->output_pending(d->ctx, &r.out_len, &r.err_len);
    if (faulted) {
        r.signo = f->signo, r.code = f->code, r.addr = f->addr;
        r.exit_status = f->exit_status, r.flags = f->flags;
    }
    if (!faulted && r.out_len + r.err_len == 0)
        return;
    uint64_t len = OTM_WIRE_EXEC_HEAD + r.out_len + r.err_len;
    ev->scratch = len <= SIZE_MAX / 2 ? otm__alloc(node, (size_t)len) : NULL;
    if (ev->scratch && r.out_len + r.err_len &&
        d->output_take(d->ctx, ev->scratch + OTM_WIRE_EXEC_HEAD, r.out_len, r.err_len))
        r.out_len = r.err_len = 0, len = OTM_WIRE_EXEC_HEAD;
    if (!ev->scratch && faulted) {
        r.out_len = r.err_len = 0, len = OTM_WIRE_EXEC_HEAD;
        ev->scratch = otm__alloc(node, len);
    }
    if (!ev->scratch)
        return;
    otm_wire_put_exec(ev->scratch, &r);
    ev->value = len;
}

otm_status otm__work_kernel(otm_node *node, otm_event *ev, const uint8_t *p)
{
    uint32_t nargs = (uint32_t)ev->p.execute.nargs;
    void **args = NULL;
    otm_region_fault fault = {0};
    if (!node->hooks.device.run_kernel)
        return OTM_ERR_NO_KERNEL;
    if (nargs) {
        args = otm__alloc(node, nargs * sizeof *args);
        if (!args)
            return OTM_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < nargs; i++) {
        uint64_t v, o;
        memcpy(&v, p + 8 * i, 8);
        memcpy(&o, p + 8 * (nargs + i), 8);
        args[i] = (void *)(uintptr_t)(v + o);
    }
    otm_status st = node->hooks.device.run_kernel(
        node->hooks.device.ctx, ev->unit, ev->p.execute.kernel, args, nargs,
        ev->p.execute.teams, ev->p.execute.threads, &fault);
    otm__free(node, args);
    /* A process whose region faulted may hold broken state (a lock taken,
     * memory overwritten): from now on it serves only the EXIT. */
    if (st == OTM_ERR_KERNEL_FAULT)
        __atomic_store_n(&node->failed, 1, __ATOMIC_RELEASE);
    keep_result(node, ev, &fault, st == OTM_ERR_KERNEL_FAULT);
    return st;
}

otm_status otm__work_load(otm_node *node, otm_event *ev, otm_image_ref ref)
{
    const otm_device_ops *d = &node->hooks.device;
    otm_unit *u = otm__unit(node, ev->unit);
    const otm_entry *e = NULL;
    uint64_t count = 0;
    ref.bytes = ref.send ? ev->scratch : NULL;
    if (!d->load_image)
        return OTM_ERR_NO_KERNEL;
    if (otm__table_image(u, ref.id))
        return OTM_ERR_INVALID;     /* the host reused a live load's id */
    otm_status st = d->load_image(d->ctx, ev->unit, &ref, &e, &count);
    otm__free(node, ev->scratch);
    ev->scratch = NULL;
    if (st)
        return st;
    if (count > (UINT32_MAX / 16))
        st = OTM_ERR_BAD_SIZE;
    if (st == OTM_OK)
        st = otm__table_add_image(node, u, ref.id, e, count);
    if (st == OTM_OK && count && !(ev->scratch = otm__alloc(node, count * 16))) {
        otm__table_drop_image(node, u, ref.id);
        st = OTM_ERR_NOMEM;
    }
    if (st) {
        if (d->unload_image)
            d->unload_image(d->ctx, ev->unit, ref.id);
        return st;
    }
    if (count)
        memcpy(ev->scratch, e, count * 16);
    ev->value = count;
    return OTM_OK;
}

otm_status otm__work_unload(otm_node *node, otm_event *ev)
{
    if (otm__table_drop_image(node, otm__unit(node, ev->unit), ev->p.unload.id))
        return OTM_ERR_NO_IMAGE;
    if (node->hooks.device.unload_image)
        node->hooks.device.unload_image(node->hooks.device.ctx, ev->unit, ev->p.unload.id);
    return OTM_OK;
}
