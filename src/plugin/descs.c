/*
 * descs.c - the program's registered descriptors and their images, as
 * both sides read them: the host to name an image to a worker, a worker
 * to find its own copy of the image named; and how many registrations a
 * worker waits for before it serves.
 *
 * A program registers one descriptor per linked object that holds offload
 * code: the executable, each library linked at start-up (their
 * constructors run before the executable's), each library it dlopens.
 * The host names an image to a worker by size and hash (otm_wire_hash of
 * its ELF bytes), so a worker that registered the same object finds its
 * own copy whatever the addresses and the order of registrations; one that
 * did not (a dlopen only the host ran) gets the bytes.
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

uint32_t otp_image_machine(const __tgt_device_image *image)
{
    char err[160];
    const void *elf;
    size_t size;
    if (otp_image_elf(image, &elf, &size, err, sizeof err) || size < 20 ||
        memcmp(elf, "\x7f" "ELF", 4))
        return 0;
    const uint8_t *h = elf;
    switch (h[18] | h[19] << 8) {
    case 62: return OTP_MACHINE_X86_64;
    case 190: return OTP_MACHINE_CUDA;
    case 224: return OTP_MACHINE_AMDGPU;
    default: return 0;
    }
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
