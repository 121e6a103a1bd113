/*
 * images.c - the host's records of the images loaded on its devices
 * (otp_hosted): the table load_binary hands out, with the worker's
 * addresses, until the library is unregistered or the job ends.
 *
 * A rank's CPU takes the image libomptarget passed; a proxied device the
 * descriptor's image for its machine (descs.c names it to the worker).
 */
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

/* The image of desc that device d takes: for a rank's CPU the one
 * libomptarget passed (the worker checks it in full); for a proxied device
 * that one when it is for the device's machine, else the descriptor's
 * first that is (libomptarget 14-16 give a plugin's devices the last image
 * it accepted, whatever each device takes). NULL when the program has none
 * for d. */
static const __tgt_device_image *image_for(const __tgt_bin_desc *desc, const otp_device *d,
                                           const __tgt_device_image *given)
{
    if (d->unit == 0 || (otp_image_machine(given) & d->machines))
        return given;
    for (int k = 0; k < desc->NumDeviceImages; k++)
        if (otp_image_machine(&desc->DeviceImages[k]) & d->machines)
            return &desc->DeviceImages[k];
    return NULL;
}

static void unload_on(otp_plugin *p, otp_device *d, uint64_t id);

/* The host's record of an image loaded on d, with the table libomptarget
 * uses: the host's entries with the worker's addresses (kernels are called
 * by these, globals read and written). All or nothing: when memory is
 * short, NULL and d lists nothing new, so that a later load_binary of the
 * image loads it again instead of handing out a table that is not there. */
static otp_hosted *hosted_new(otp_device *d, __tgt_bin_desc *desc,
                              const __tgt_device_image *image, uint64_t id,
                              const otm_entry *got, uint64_t n)
{
    if (d->nloaded == d->loaded_cap) {
        size_t cap = d->loaded_cap ? 2 * d->loaded_cap : 4;
        otp_hosted **grown = otp_plugin_realloc(d->loaded, cap * sizeof *grown);
        if (!grown)
            return NULL;
        d->loaded = grown;
        d->loaded_cap = cap;
    }
    otp_hosted *h = otp_plugin_calloc(1, sizeof *h);
    __tgt_offload_entry *t = h ? otp_plugin_calloc(n ? n : 1, sizeof *t) : NULL;
    if (!t)
        return otp_plugin_free(h), NULL;
    for (uint64_t i = 0; i < n; i++) {
        t[i] = image->EntriesBegin[i];
        t[i].addr = (void *)(uintptr_t)got[i].addr;
    }
    *h = (otp_hosted){.desc = desc, .image = image->ImageStart, .id = id,
                      .table = {.EntriesBegin = t, .EntriesEnd = t + n}};
    d->loaded[d->nloaded++] = h;
    return h;
}

/* LOAD of one image on one device: by reference first (the worker
 * registered the same object at start-up), with its bytes when the worker
 * does not hold it. */
static otm_status load_on(otp_plugin *p, otp_device *d, const __tgt_device_image *image,
                          uint64_t id, otm_entry *e, uint64_t n, uint64_t *got)
{
    char err[160];
    const void *elf;
    size_t size;
    otm_status st = otp_image_elf(image, &elf, &size, err, sizeof err);
    if (st)
        return st;
    otm_op op = {.kind = OTM_KIND_LOAD, .rank = d->rank, .unit = d->unit, .host = e, .size = n,
                 .result = got,
                 .image = {.id = id, .bytes = elf, .size = size,
                           .hash = otm_wire_hash(elf, size, OTM_WIRE_HASH_SEED),
                           .names_hash = otp_names_hash(image->EntriesBegin,
                                                        image->EntriesEnd),
                           .usm = d->unit == 0 && __atomic_load_n(&p->usm_on, __ATOMIC_ACQUIRE)}};
    st = otp_host_run_op(p, &op);
    if (st == OTM_ERR_NO_IMAGE) {
        op.image.send = 1;
        st = otp_host_run_op(p, &op);
    }
    return st;
}

__tgt_target_table *otp_images_load(otp_plugin *p, otp_device *d, int32_t id,
                                     __tgt_device_image *image)
{
    __tgt_bin_desc *desc = d && image ? otp_desc_of(p, image) : NULL;
    char dev[96];
    if (!desc)
        return otp_plugin_log(OTM_LOG_ERROR, "load_binary: unknown image for device %d",
                              (int)id), NULL;
    const __tgt_device_image *mine = image_for(desc, d, image);
    if (!mine)
        return otp_plugin_log(OTM_LOG_ERROR, "load_binary: the program has no image for %s: "
                              "build it for that target too (-fopenmp-targets=...)",
                              otp_devices_name(d, dev, sizeof dev)), NULL;
    if (d->unit && __atomic_load_n(&p->usm_on, __ATOMIC_ACQUIRE))
        return otp_plugin_log(OTM_LOG_ERROR, "load_binary: %s is another plugin's device: "
                              "unified shared memory is served to a rank's CPU device only",
                              otp_devices_name(d, dev, sizeof dev)), NULL;
    for (size_t i = 0; i < d->nloaded; i++)
        if (d->loaded[i]->image == image->ImageStart)
            return &d->loaded[i]->table;    /* loaded there already */
    uint64_t n = (uint64_t)(image->EntriesEnd - image->EntriesBegin), got = 0;
    pthread_mutex_lock(&p->images_lock);
    uint64_t load = ++p->next_load;
    pthread_mutex_unlock(&p->images_lock);
    otm_entry *e = otp_plugin_calloc(n ? n : 1, sizeof *e);
    otm_status st = e ? load_on(p, d, mine, load, e, n, &got) : OTM_ERR_NOMEM;
    otp_hosted *h = NULL;
    if (st == OTM_OK && got != n) {
        otp_plugin_log(OTM_LOG_ERROR, "load_binary: the device image has other entries "
                       "(device %d)", (int)id);
    } else if (st == OTM_OK && !(h = hosted_new(d, desc, image, load, e, n))) {
        st = OTM_ERR_NOMEM;
        unload_on(p, d, load);  /* loaded there, but the host cannot use it */
    }
    if (st)
        otp_plugin_log(OTM_LOG_ERROR, "load_binary on %s failed: %s",
                       otp_devices_line_name(d, id, dev, sizeof dev), otm_status_text(st));
    otp_plugin_free(e);
    return h ? &h->table : NULL;
}

/* UNLOAD of the LOAD `id` on d, unless d failed (it then answers nothing
 * but the exit). */
static void unload_on(otp_plugin *p, otp_device *d, uint64_t id)
{
    otm_op op = {.kind = OTM_KIND_UNLOAD, .rank = d->rank, .unit = d->unit, .arg = id};
    if (!d->failed && otp_host_run_op(p, &op))
        otp_plugin_log(OTM_LOG_WARN, "device %d: its image could not be unloaded", d->id);
}

void otp_images_unload(otp_plugin *p, otp_device *d, __tgt_bin_desc *desc)
{
    for (size_t i = d->nloaded; i-- > 0;) {
        otp_hosted *h = d->loaded[i];
        if (desc && h->desc != desc)
            continue;
        unload_on(p, d, h->id);
        otp_plugin_free(h->table.EntriesBegin);
        otp_plugin_free(h);
        d->loaded[i] = d->loaded[--d->nloaded];
    }
}

void otp_images_release(otp_device *d)
{
    for (size_t i = 0; i < d->nloaded; i++) {
        otp_plugin_free(d->loaded[i]->table.EntriesBegin);
        otp_plugin_free(d->loaded[i]);
    }
    otp_plugin_free(d->loaded);
}
