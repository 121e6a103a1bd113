/*
 * exit_hooks.c - the exit functions of loaded images, rewritten in their
 * GOT (otd_fault_hook_exit, otm/fault.h).
 *
 * A kernel calling exit() would end the worker. The slots of the image
 * that the dynamic loader bound to exit, _exit, _Exit or quick_exit are
 * rewritten to point at the hooks below, which hand the call to fault.c
 * (otd_fault_on_exit, device_internal.h) as a fault. Only the image's own slots
 * change: the libraries it links, and this plugin, keep libc's functions.
 * No mutable state: the patching reads the image's dynamic section and
 * program headers each time.
 */
#include "otm/fault.h"

#include "device_internal.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The image's call of an exit function: a fault like any other when a
 * guarded call is waiting for it (otd_fault_on_exit does not return then),
 * libc's function when none is. Our own calls of exit() go through our own
 * GOT, which is not patched. */
static _Noreturn void image_exit(int32_t by, int status)
{
    otd_fault_on_exit(by, status);
    switch (by) {
    case OTM_FAULT_BY__EXIT: _exit(status);
    case OTM_FAULT_BY__EXIT_C99: _Exit(status);
    case OTM_FAULT_BY_QUICK_EXIT: quick_exit(status);
    default: exit(status);
    }
}

static _Noreturn void hook_exit(int status)
{
    image_exit(OTM_FAULT_BY_EXIT, status);
}

static _Noreturn void hook__exit(int status)
{
    image_exit(OTM_FAULT_BY__EXIT, status);
}

static _Noreturn void hook__Exit(int status)
{
    image_exit(OTM_FAULT_BY__EXIT_C99, status);
}

static _Noreturn void hook_quick_exit(int status)
{
    image_exit(OTM_FAULT_BY_QUICK_EXIT, status);
}

/* The replacement for an imported symbol name, or NULL. */
static void *replacement(const char *name)
{
    if (strcmp(name, "exit") == 0)
        return (void *)hook_exit;
    if (strcmp(name, "_exit") == 0)
        return (void *)hook__exit;
    if (strcmp(name, "_Exit") == 0)
        return (void *)hook__Exit;
    if (strcmp(name, "quick_exit") == 0)
        return (void *)hook_quick_exit;
    return NULL;
}

/* What the dynamic section and program headers of an image say. */
typedef struct image_map {
    uintptr_t base;       /* l_addr */
    const Elf64_Sym *symtab;
    const char *strtab;
    uint64_t strsz;
    const Elf64_Rela *rela[2]; /* DT_RELA, DT_JMPREL */
    uint64_t relasz[2];
    uintptr_t relro[2];   /* the range ld.so made read-only, page-aligned */
    const ElfW(Phdr) *phdr; /* for the protection of a segment */
    size_t phnum;
} image_map;

/* ld.so relocates the pointers of a writable dynamic section in place, not
 * those of a read-only one: a value below the base is still relative. */
static uintptr_t dyn_ptr(uintptr_t base, uint64_t v)
{
    return v < base ? base + v : v;
}

static otm_status read_dynamic(const ElfW(Dyn) *d, image_map *m)
{
    uint64_t relaent = sizeof(Elf64_Rela), pltrel = DT_RELA;

    for (; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB:
            m->symtab = (const void *)dyn_ptr(m->base, d->d_un.d_ptr);
            break;
        case DT_STRTAB:
            m->strtab = (const void *)dyn_ptr(m->base, d->d_un.d_ptr);
            break;
        case DT_STRSZ: m->strsz = d->d_un.d_val; break;
        case DT_RELA:
            m->rela[0] = (const void *)dyn_ptr(m->base, d->d_un.d_ptr);
            break;
        case DT_RELASZ: m->relasz[0] = d->d_un.d_val; break;
        case DT_RELAENT: relaent = d->d_un.d_val; break;
        case DT_JMPREL:
            m->rela[1] = (const void *)dyn_ptr(m->base, d->d_un.d_ptr);
            break;
        case DT_PLTRELSZ: m->relasz[1] = d->d_un.d_val; break;
        case DT_PLTREL: pltrel = d->d_un.d_val; break;
        default: break;
        }
    }
    if (relaent != sizeof(Elf64_Rela) || pltrel != DT_RELA)
        return OTM_ERR_INVALID;
    if ((m->rela[0] != NULL || m->rela[1] != NULL) &&
        (m->symtab == NULL || m->strtab == NULL))
        return OTM_ERR_INVALID;
    return OTM_OK;
}

typedef struct phdr_search {
    const void *dynamic; /* the image's l_ld */
    image_map *m;
    int found;
} phdr_search;

/* dl_iterate_phdr callback: the object whose PT_DYNAMIC is ours. */
static int find_phdr(struct dl_phdr_info *info, size_t size, void *arg)
{
    phdr_search *s = arg;
    size_t i;

    for (i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC &&
            info->dlpi_addr + info->dlpi_phdr[i].p_vaddr ==
                (uintptr_t)s->dynamic)
            break;
    if (i == info->dlpi_phnum)
        return 0;
    s->m->phdr = info->dlpi_phdr;
    s->m->phnum = info->dlpi_phnum;
    s->found = 1;
    return 1;
}

/* The page range ld.so protected: it rounds both ends of PT_GNU_RELRO down,
 * so a partial last page stays writable (and must stay so). */
static void find_relro(image_map *m)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start;
    size_t i;

    for (i = 0; i < m->phnum; i++) {
        if (m->phdr[i].p_type != PT_GNU_RELRO)
            continue;
        start = m->base + m->phdr[i].p_vaddr;
        m->relro[0] = start & ~(page - 1);
        m->relro[1] = (start + m->phdr[i].p_memsz) & ~(page - 1);
    }
}

/* The protection the slot's page has now: read-only in RELRO, else that of
 * its PT_LOAD segment; -1 when no segment holds it. */
static int slot_prot(const image_map *m, uintptr_t slot)
{
    uintptr_t start;
    size_t i;
    int prot = -1;

    if (slot >= m->relro[0] && slot < m->relro[1])
        return PROT_READ;
    for (i = 0; i < m->phnum; i++) {
        start = m->base + m->phdr[i].p_vaddr;
        if (m->phdr[i].p_type != PT_LOAD || slot < start ||
            slot - start >= m->phdr[i].p_memsz)
            continue;
        prot = (m->phdr[i].p_flags & PF_R ? PROT_READ : 0) |
               (m->phdr[i].p_flags & PF_W ? PROT_WRITE : 0) |
               (m->phdr[i].p_flags & PF_X ? PROT_EXEC : 0);
    }
    return prot;
}

static otm_status patch(const image_map *m, uintptr_t slot, void *fn)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    void *at = (void *)(slot & ~(page - 1));
    int prot = slot_prot(m, slot);

    if (prot < 0 || slot % sizeof(void *) != 0)
        return OTM_ERR_INVALID; /* a relocation outside the image */
    if (!(prot & PROT_WRITE) &&
        mprotect(at, page, prot | PROT_READ | PROT_WRITE) != 0)
        return OTM_ERR_KERNEL;
    /* One aligned store: a thread calling through the slot meanwhile gets
     * either function. */
    __atomic_store_n((void **)slot, fn, __ATOMIC_SEQ_CST);
    if (!(prot & PROT_WRITE) && mprotect(at, page, prot) != 0)
        return OTM_ERR_KERNEL;
    return OTM_OK;
}

/* The relocations of one table that bind an exit function to a slot. */
static otm_status patch_table(const image_map *m, const Elf64_Rela *r,
                              uint64_t size)
{
    uint64_t i, n = size / sizeof(*r);
    uint32_t type;
    const Elf64_Sym *sym;
    void *fn;
    otm_status st;

    for (i = 0; r != NULL && i < n; i++) {
        type = ELF64_R_TYPE(r[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT &&
            !(type == R_X86_64_64 && r[i].r_addend == 0))
            continue;
        if (ELF64_R_SYM(r[i].r_info) == 0)
            continue;
        sym = &m->symtab[ELF64_R_SYM(r[i].r_info)];
        if (m->strsz != 0 && sym->st_name >= m->strsz)
            continue;
        fn = replacement(m->strtab + sym->st_name);
        if (fn == NULL)
            continue;
        st = patch(m, m->base + r[i].r_offset, fn);
        if (st != OTM_OK)
            return st;
    }
    return OTM_OK;
}

otm_status otd_fault_hook_exit(void *dl_handle)
{
    struct link_map *lm = NULL;
    image_map m;
    phdr_search s;
    otm_status st;

    if (dl_handle == NULL)
        return OTM_ERR_INVALID;
    if (dlinfo(dl_handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL)
        return OTM_ERR_KERNEL;
    memset(&m, 0, sizeof(m));
    m.base = lm->l_addr;
    if (lm->l_ld == NULL)
        return OTM_ERR_INVALID;
    st = read_dynamic(lm->l_ld, &m);
    if (st != OTM_OK)
        return st;
    s.dynamic = lm->l_ld;
    s.m = &m;
    s.found = 0;
    dl_iterate_phdr(find_phdr, &s);
    if (!s.found)
        return OTM_ERR_INVALID;
    find_relro(&m);
    st = patch_table(&m, m.rela[0], m.relasz[0]);
    if (st == OTM_OK)
        st = patch_table(&m, m.rela[1], m.relasz[1]);
    return st;
}
