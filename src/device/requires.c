/*
 * requires.c - the `requires` flags a program's executable registers, read
 * from its file without running it (otm/device.h), so that the launcher
 * can start a program that requires unified shared memory with ranks of
 * their own layouts before any of its code runs.
 *
 * Two forms, by compiler: clang 18 and later put the flags in an entry of
 * the host's offload table (section omp_offloading_entries: no name,
 * flags OMP_REGISTER_REQUIRES, the requirements in its last word); clang
 * 14 to 17 pass them to __tgt_register_requires from a function of their
 * own, `.omp_offloading.requires_reg`, whose first instructions load them
 * as an immediate into the first argument's register (mov $FLAGS, %edi).
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "device_internal.h"
#include "otm/device.h"

#define ENTRY_SIZE 32u              /* __tgt_offload_entry */
#define REGISTER_REQUIRES 0x10
#define REQUIRES_FN ".omp_offloading.requires_reg"
#define MOV_EDI_IMM32 0xbf          /* mov $imm32, %edi */

/* The entry of the host's table that carries the flags, if any. */
static int from_entries(Elf_Data *d, uint64_t *flags)
{
    const unsigned char *p = d->d_buf;
    for (size_t at = 0; p && at + ENTRY_SIZE <= d->d_size; at += ENTRY_SIZE) {
        int32_t f, data;
        memcpy(&f, p + at + 24, 4);
        memcpy(&data, p + at + 28, 4);
        if (f == REGISTER_REQUIRES) {
            *flags = (uint32_t)data;
            return 1;
        }
    }
    return 0;
}

/* The immediate the registration function loads into %edi, if its first
 * 16 bytes hold one. */
static int from_function(Elf *e, const GElf_Sym *sym, uint64_t *flags)
{
    Elf_Scn *scn = elf_getscn(e, sym->st_shndx);
    GElf_Shdr sh;
    Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
    if (!d || !gelf_getshdr(scn, &sh) || sym->st_value < sh.sh_addr)
        return 0;
    uint64_t off = sym->st_value - sh.sh_addr;
    const unsigned char *p = d->d_buf;
    for (uint64_t i = off; p && i + 5 <= d->d_size && i < off + 16; i++)
        if (p[i] == MOV_EDI_IMM32) {
            uint32_t v;
            memcpy(&v, p + i + 1, 4);
            *flags = v;
            return 1;
        }
    return 0;
}

static int from_symbols(Elf *e, Elf_Scn *symtab, uint64_t *flags)
{
    GElf_Shdr sh;
    Elf_Data *d = elf_getdata(symtab, NULL);
    if (!d || !gelf_getshdr(symtab, &sh) || !sh.sh_entsize)
        return 0;
    for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
        GElf_Sym sym;
        const char *name;
        if (gelf_getsym(d, (int)i, &sym) &&
            (name = elf_strptr(e, sh.sh_link, sym.st_name)) && !strcmp(name, REQUIRES_FN))
            return from_function(e, &sym, flags);
    }
    return 0;
}

otm_status otd_program_requires(const char *path, uint64_t *flags, char *err,
                                size_t errlen)
{
    size_t shstrndx;
    *flags = 0;
    if (elf_version(EV_CURRENT) == EV_NONE)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen, "libelf: %s", elf_errmsg(-1));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen, "%s: cannot be read", path);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx)) {
        if (e)
            elf_end(e);
        close(fd);
        return otd_device_fail(OTM_ERR_INVALID, err, errlen, "%s: not an ELF file", path);
    }
    int found = 0;
    for (Elf_Scn *scn = NULL; !found && (scn = elf_nextscn(e, scn)) != NULL;) {
        GElf_Shdr sh;
        const char *name;
        if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)))
            continue;
        if (!strcmp(name, "omp_offloading_entries") && sh.sh_type != SHT_NOBITS) {
            Elf_Data *d = elf_getdata(scn, NULL);
            found = d && from_entries(d, flags);
        } else if (sh.sh_type == SHT_SYMTAB) {
            found = from_symbols(e, scn, flags);
        }
    }
    elf_end(e);
    close(fd);
    return OTM_OK;
}
