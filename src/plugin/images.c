/*
 * images.c - the program's device images: the descriptors it registered,
 * how the host names an image to a worker, and how many registrations a
 * worker waits for before it serves.
 *
 * A program registers one descriptor per linked object that holds offload
 * code: the executable, each library linked at start-up (their
 * constructors run before the executable's), each library it dlopens.
 * The host names an image to a worker by size and hash (otm_wire_hash of
 * its ELF bytes), so a worker that registered the same object finds its
 * own copy whatever the addresses and the order of registrations; one that
 * did not (a dlopen only the host ran) gets the bytes.
 *
 * The host keeps a record of each image loaded on a device (otp_hosted):
 * the table load_binary hands out, with the worker's addresses, until the
 * library is unregistered or the job ends.
 */
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "otm/wire.h"
#include "plugin.h"

int otp_desc_add(otp_plugin *p, __tgt_bin_desc *desc)
{
    int n = -1;
    pthread_mutex_lock(&p->images_lock);
    for (size_t i = 0; i < p->ndescs; i++)
        if (p->descs[i] == desc)
            n = (int)p->ndescs;
    if (n < 0 && p->ndescs == p->descs_cap) {
        size_t cap = p->descs_cap ? 2 * p->descs_cap : 8;
        __tgt_bin_desc **grown = otp_plugin_realloc(p->descs, cap * sizeof *grown);
        if (grown) {
            p->descs = grown;
            p->descs_cap = cap;
        }
    }
    if (n < 0 && p->ndescs < p->descs_cap) {
        p->descs[p->ndescs++] = desc;
        n = (int)p->ndescs;
    }
    pthread_mutex_unlock(&p->images_lock);
    return n;
}

int otp_desc_remove(otp_plugin *p, __tgt_bin_desc *desc)
{
    int n = -1;
    pthread_mutex_lock(&p->images_lock);
    for (size_t i = 0; i < p->ndescs && n < 0; i++) {
        if (p->descs[i] != desc)
            continue;
        memmove(&p->descs[i], &p->descs[i + 1], (p->ndescs - i - 1) * sizeof *p->descs);
        n = (int)--p->ndescs;
    }
    if (p->ndescs == 0) {       /* the program is ending */
        otp_plugin_free(p->descs);
        p->descs = NULL;
        p->descs_cap = 0;
    }
    pthread_mutex_unlock(&p->images_lock);
    return n;
}

/* libomptarget 14 passes the descriptor's own image record; 16 passes a
 * copy whose bytes are the ELF inside the descriptor's offload binary, so
 * an image is known by where its bytes lie. */
static int holds(const __tgt_device_image *own, const __tgt_device_image *image)
{
    const char *begin = own->ImageStart, *end = own->ImageEnd;
    const char *at = image->ImageStart, *last = image->ImageEnd;
    return own == image || (at >= begin && last <= end && at < last);
}

__tgt_bin_desc *otp_desc_of(otp_plugin *p, const __tgt_device_image *image)
{
    __tgt_bin_desc *found = NULL;
    pthread_mutex_lock(&p->images_lock);
    for (size_t i = 0; i < p->ndescs && !found; i++)
        for (int k = 0; k < p->descs[i]->NumDeviceImages && !found; k++)
            if (holds(&p->descs[i]->DeviceImages[k], image))
                found = p->descs[i];
    pthread_mutex_unlock(&p->images_lock);
    return found;
}

otm_status otp_image_elf(const __tgt_device_image *image, const void **elf,
                         size_t *size, char *err, size_t errlen)
{
    if (!image->ImageStart || image->ImageEnd <= image->ImageStart)
        return OTM_ERR_INVALID;
    size_t n = (size_t)((const char *)image->ImageEnd - (const char *)image->ImageStart);
    return otd_image_unwrap(image->ImageStart, n, elf, size, err, errlen);
}

uint64_t otp_names_hash(const __tgt_offload_entry *begin, const __tgt_offload_entry *end)
{
    uint64_t h = OTM_WIRE_HASH_SEED;
    for (const __tgt_offload_entry *e = begin; e < end; e++)
        if (e->name)
            h = otm_wire_hash(e->name, strlen(e->name) + 1, h);
    return h;
}

const __tgt_device_image *otp_image_own(otp_plugin *p, const otm_image_ref *ref,
                                        const void **elf)
{
    const __tgt_device_image *found = NULL;
    char err[160];
    pthread_mutex_lock(&p->images_lock);
    for (size_t i = 0; i < p->ndescs && !found; i++) {
        for (int k = 0; k < p->descs[i]->NumDeviceImages && !found; k++) {
            const __tgt_device_image *im = &p->descs[i]->DeviceImages[k];
            const void *bytes;
            size_t n;
            if (otp_image_elf(im, &bytes, &n, err, sizeof err) || n != ref->size)
                continue;
            if (otm_wire_hash(bytes, n, OTM_WIRE_HASH_SEED) == ref->hash &&
                otp_names_hash(im->EntriesBegin, im->EntriesEnd) == ref->names_hash) {
                found = im;
                *elf = bytes;
            }
        }
    }
    pthread_mutex_unlock(&p->images_lock);
    return found;
}

/* ---- the host's records of the images loaded on its devices ---------------- */

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
    otm_op op = {.kind = OTM_KIND_LOAD, .rank = d->rank, .host = e, .size = n,
                 .result = got,
                 .image = {.id = id, .bytes = elf, .size = size,
                           .hash = otm_wire_hash(elf, size, OTM_WIRE_HASH_SEED),
                           .names_hash = otp_names_hash(image->EntriesBegin,
                                                        image->EntriesEnd),
                           .usm = __atomic_load_n(&p->usm_on, __ATOMIC_ACQUIRE)}};
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
    if (!desc)
        return otp_plugin_log(OTM_LOG_ERROR, "load_binary: unknown image for device %d",
                              (int)id), NULL;
    for (size_t i = 0; i < d->nloaded; i++)
        if (d->loaded[i]->image == image->ImageStart)
            return &d->loaded[i]->table;    /* loaded there already */
    uint64_t n = (uint64_t)(image->EntriesEnd - image->EntriesBegin), got = 0;
    pthread_mutex_lock(&p->images_lock);
    uint64_t load = ++p->next_load;
    pthread_mutex_unlock(&p->images_lock);
    otm_entry *e = otp_plugin_calloc(n ? n : 1, sizeof *e);
    otm_status st = e ? load_on(p, d, image, load, e, n, &got) : OTM_ERR_NOMEM;
    otp_hosted *h = NULL;
    if (st == OTM_OK && got != n) {
        otp_plugin_log(OTM_LOG_ERROR, "load_binary: the device image has other entries "
                       "(device %d)", (int)id);
    } else if (st == OTM_OK && !(h = hosted_new(d, desc, image, load, e, n))) {
        st = OTM_ERR_NOMEM;
        unload_on(p, d, load);  /* loaded there, but the host cannot use it */
    }
    if (st)
        otp_plugin_log(OTM_LOG_ERROR, "load_binary on device %d failed: %s", id,
                       otm_status_text(st));
    otp_plugin_free(e);
    return h ? &h->table : NULL;
}

/* UNLOAD of the LOAD `id` on d, unless d failed (it then answers nothing
 * but the exit). */
static void unload_on(otp_plugin *p, otp_device *d, uint64_t id)
{
    otm_op op = {.kind = OTM_KIND_UNLOAD, .rank = d->rank, .arg = id};
    if (!d->failed && otp_host_run_op(p, &op))
        otp_plugin_log(OTM_LOG_WARN, "device %d: its image could not be unloaded",
                       d->rank - 1);
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

/* ---- registrations a worker waits for -------------------------------------- */

/* glibc relocates the pointers of a loaded object's dynamic section in
 * place; where it does not (the vDSO), they are offsets from the base. */
static uintptr_t dyn_ptr(const struct dl_phdr_info *info, uintptr_t v)
{
    return v < info->dlpi_addr ? v + info->dlpi_addr : v;
}

typedef struct dyn_tables {
    const ElfW(Sym) *symtab;
    const char *strtab;
    const ElfW(Rela) *rela[2];
    size_t relasz[2];
} dyn_tables;

static int read_dynamic(const struct dl_phdr_info *info, dyn_tables *t)
{
    const ElfW(Dyn) *dyn = NULL;
    memset(t, 0, sizeof *t);
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t v = dyn->d_un.d_ptr;
        switch (dyn->d_tag) {
        case DT_SYMTAB: t->symtab = (const ElfW(Sym) *)dyn_ptr(info, v); break;
        case DT_STRTAB: t->strtab = (const char *)dyn_ptr(info, v); break;
        case DT_RELA: t->rela[0] = (const ElfW(Rela) *)dyn_ptr(info, v); break;
        case DT_RELASZ: t->relasz[0] = dyn->d_un.d_val; break;
        case DT_JMPREL: t->rela[1] = (const ElfW(Rela) *)dyn_ptr(info, v); break;
        case DT_PLTRELSZ: t->relasz[1] = dyn->d_un.d_val; break;
        default: break;
        }
    }
    return t->symtab && t->strtab;
}

/* 1 when the object has a relocation against an undefined `name`: it
 * calls that function of another object. */
static int imports(const struct dl_phdr_info *info, const char *name)
{
    dyn_tables t;
    if (!read_dynamic(info, &t))
        return 0;
    for (int k = 0; k < 2; k++) {
        size_t n = t.rela[k] ? t.relasz[k] / sizeof(ElfW(Rela)) : 0;
        for (size_t i = 0; i < n; i++) {
            const ElfW(Sym) *s = &t.symtab[ELF64_R_SYM(t.rela[k][i].r_info)];
            if (ELF64_R_SYM(t.rela[k][i].r_info) && s->st_shndx == SHN_UNDEF &&
                strcmp(t.strtab + s->st_name, name) == 0)
                return 1;
        }
    }
    return 0;
}

static int count_registrars(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(int *)data += imports(info, "__tgt_register_lib");
    return 0;
}

int otp_startup_registrations(void)
{
    int n = 0;
    dl_iterate_phdr(count_registrars, &n);
    return n;
}
