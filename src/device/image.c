/*
 * image.c - device images: checked with libelf, loaded from a memfd.
 *
 * The checks catch an image that is truncated, built for another machine or
 * corrupted on the way, before the dynamic loader sees it: the loader trusts
 * its input and would crash or misbehave instead of failing. They do not make
 * a hostile image safe to load; its constructors run like any library's.
 *
 * Every offset and size read from the image is checked against the buffer
 * with in_bounds() before anything dereferences it, and the raw header is
 * checked by hand before libelf is handed the buffer, so no count from the
 * image can make either of us read past its end.
 */
#include "otm/device.h"
#include "device_internal.h"
#include "needs.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <libelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct otd_image {
    void *handle; /* from dlopen */
    int fd;       /* the memfd holding the bytes, open while handle is */
    char name[32]; /* "/proc/self/fd/N": the name the loader knows it by */
    uint64_t entries_vaddr; /* the offload entries table, as linked */
    uint64_t nentries;
};

#define ENTRIES_SECTION "omp_offloading_entries"
_Static_assert(sizeof(otd_image_entry) == 32, "libomptarget's __tgt_offload_entry");

/* True when [off, off + len) lies inside a buffer of `size` bytes; written
 * so that no sum can wrap around. */
static int in_bounds(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= size - off;
}

/* ------------------------------------------------------------------------ */
/* Checking                                                                  */

static otm_status check_ident(const unsigned char *p, size_t size, char *err,
                              size_t errlen)
{
    if (size < sizeof(Elf64_Ehdr))
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image of %zu bytes is smaller than an "
                               "ELF64 header (%zu bytes)", size,
                               sizeof(Elf64_Ehdr));
    if (memcmp(p, ELFMAG, SELFMAG) != 0)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image does not start with "
                               "the ELF magic");
    if (p[EI_CLASS] != ELFCLASS64)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image is not ELF64 (class byte %u)",
                               p[EI_CLASS]);
    if (p[EI_DATA] != ELFDATA2LSB)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image is not little-endian "
                               "(data byte %u)", p[EI_DATA]);
    if (p[EI_VERSION] != EV_CURRENT)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image has ELF version %u, not %u",
                               p[EI_VERSION], EV_CURRENT);
    return OTM_OK;
}

static otm_status check_kind(const Elf64_Ehdr *eh, char *err, size_t errlen)
{
    if (eh->e_type != ET_DYN)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image has ELF type %u, not a shared "
                               "object (ET_DYN, %u)", eh->e_type, ET_DYN);
    if (eh->e_machine != EM_X86_64)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image is for machine %u, "
                               "not x86_64 (%u)", eh->e_machine, EM_X86_64);
    if (eh->e_version != EV_CURRENT)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image has ELF version %u, not %u",
                               eh->e_version, EV_CURRENT);
    return OTM_OK;
}

/* Counts that do not fit the header's 16-bit fields are kept in section 0
 * (sh_size for sections, sh_info for segments); fetch them from there after
 * checking that section 0 is inside the buffer. */
static otm_status table_counts(const unsigned char *p, size_t size,
                               const Elf64_Ehdr *eh, uint64_t *shnum,
                               uint64_t *phnum, char *err, size_t errlen)
{
    Elf64_Shdr s0;

    *shnum = eh->e_shnum;
    *phnum = eh->e_phnum;
    if (eh->e_shoff == 0 && *phnum == PN_XNUM)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image keeps its segment count in a "
                               "section header table it does not have");
    if (eh->e_shoff == 0)
        return OTM_OK;
    if (eh->e_shentsize != sizeof(Elf64_Shdr))
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image has section headers of %u bytes, "
                               "not %zu", eh->e_shentsize, sizeof(Elf64_Shdr));
    if (!in_bounds(eh->e_shoff, sizeof(s0), size))
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image's section header table (offset "
                               "%llu) starts past its end (%zu bytes)",
                               (unsigned long long)eh->e_shoff, size);
    memcpy(&s0, p + eh->e_shoff, sizeof(s0));
    if (*shnum == 0)
        *shnum = s0.sh_size;
    if (*phnum == PN_XNUM)
        *phnum = s0.sh_info;
    return OTM_OK;
}

/* True when a table of count entries of entsize bytes at off lies inside
 * the buffer. The count comes from the image (up to 2^64 - 1 for sections),
 * so it is bounded before the product is formed. */
static int table_in_bounds(uint64_t off, uint64_t count, size_t entsize,
                           size_t size)
{
    return count <= size / entsize && in_bounds(off, count * entsize, size);
}

/* Both header tables lie inside the buffer. */
static otm_status check_tables(const Elf64_Ehdr *eh, size_t size,
                               uint64_t shnum, uint64_t phnum, char *err,
                               size_t errlen)
{
    if (phnum == 0)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image has no program headers, so it "
                               "cannot be loaded");
    /* libelf numbers program headers with an int. */
    if (phnum > INT_MAX)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image claims %llu program headers",
                               (unsigned long long)phnum);
    if (eh->e_phentsize != sizeof(Elf64_Phdr))
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image has program headers of %u bytes, "
                               "not %zu", eh->e_phentsize, sizeof(Elf64_Phdr));
    if (!table_in_bounds(eh->e_phoff, phnum, sizeof(Elf64_Phdr), size))
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image's %llu program headers at offset "
                               "%llu run past its end (%zu bytes)",
                               (unsigned long long)phnum,
                               (unsigned long long)eh->e_phoff, size);
    if (!table_in_bounds(eh->e_shoff, shnum, sizeof(Elf64_Shdr), size))
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image's %llu section headers at offset "
                               "%llu run past its end (%zu bytes)",
                               (unsigned long long)shnum,
                               (unsigned long long)eh->e_shoff, size);
    return OTM_OK;
}

/* Every segment's file bytes lie inside the buffer, and there is something
 * to map. */
static otm_status check_segments(Elf *elf, uint64_t phnum, size_t size,
                                 char *err, size_t errlen)
{
    uint64_t i, loads = 0;
    GElf_Phdr ph;

    for (i = 0; i < phnum; i++) {
        if (gelf_getphdr(elf, (int)i, &ph) == NULL)
            return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                                   "device image's program header %llu is "
                                   "unreadable: %s", (unsigned long long)i,
                                   elf_errmsg(-1));
        if (!in_bounds(ph.p_offset, ph.p_filesz, size))
            return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                                   "device image's segment %llu (%llu bytes at "
                                   "offset %llu) runs past its end (%zu bytes)",
                                   (unsigned long long)i,
                                   (unsigned long long)ph.p_filesz,
                                   (unsigned long long)ph.p_offset, size);
        loads += ph.p_type == PT_LOAD;
    }
    if (loads == 0)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image has no loadable segment");
    return OTM_OK;
}

/* Every section with file bytes lies inside the buffer (section 0 and
 * NOBITS sections such as .bss have none). */
static otm_status check_sections(Elf *elf, uint64_t shnum, size_t size,
                                 char *err, size_t errlen)
{
    uint64_t i;
    GElf_Shdr sh;

    for (i = 1; i < shnum; i++) {
        Elf_Scn *scn = elf_getscn(elf, (size_t)i);

        if (scn == NULL || gelf_getshdr(scn, &sh) == NULL)
            return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                                   "device image's section header %llu is "
                                   "unreadable: %s", (unsigned long long)i,
                                   elf_errmsg(-1));
        if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL)
            continue;
        if (!in_bounds(sh.sh_offset, sh.sh_size, size))
            return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                                   "device image's section %llu (%llu bytes at "
                                   "offset %llu) runs past its end (%zu bytes)",
                                   (unsigned long long)i,
                                   (unsigned long long)sh.sh_size,
                                   (unsigned long long)sh.sh_offset, size);
    }
    return OTM_OK;
}

/* The per-entry checks, through libelf once the tables are known to be in
 * the buffer. */
static otm_status check_entries(const void *start, size_t size, uint64_t shnum,
                                uint64_t phnum, char *err, size_t errlen)
{
    Elf *elf;
    otm_status st;

    if (elf_version(EV_CURRENT) == EV_NONE)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "libelf does not support ELF version %u",
                               EV_CURRENT);
    /* elf_memory takes a char * but, opened for reading, only reads it. */
    elf = elf_memory((char *)start, size);
    if (elf == NULL)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "libelf rejects the device image: %s",
                               elf_errmsg(-1));
    st = check_segments(elf, phnum, size, err, errlen);
    if (st == OTM_OK)
        st = check_sections(elf, shnum, size, err, errlen);
    elf_end(elf);
    return st;
}

otm_status otd_image_check(const void *start, size_t size, char *err,
                           size_t errlen)
{
    const unsigned char *p = start;
    Elf64_Ehdr eh;
    uint64_t shnum, phnum;
    otm_status st;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (start == NULL)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "device image is NULL");
    st = check_ident(p, size, err, errlen);
    if (st)
        return st;
    /* A copy, because the buffer need not be aligned for Elf64_Ehdr. */
    memcpy(&eh, p, sizeof(eh));
    st = check_kind(&eh, err, errlen);
    if (st == OTM_OK)
        st = table_counts(p, size, &eh, &shnum, &phnum, err, errlen);
    if (st == OTM_OK)
        st = check_tables(&eh, size, shnum, phnum, err, errlen);
    if (st == OTM_OK)
        st = check_entries(start, size, shnum, phnum, err, errlen);
    return st;
}

/* ------------------------------------------------------------------------ */
/* The image's own table of offload entries                                   */

/* True when [vaddr, vaddr + size) lies in one PT_LOAD segment's memory. */
static int mapped(Elf *elf, uint64_t vaddr, uint64_t size)
{
    size_t n = 0;
    GElf_Phdr ph;

    if (elf_getphdrnum(elf, &n) != 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (gelf_getphdr(elf, (int)i, &ph) == NULL || ph.p_type != PT_LOAD)
            continue;
        if (vaddr >= ph.p_vaddr && size <= ph.p_memsz &&
            vaddr - ph.p_vaddr <= ph.p_memsz - size)
            return 1;
    }
    return 0;
}

/* Finds the section ENTRIES_SECTION: where the table will lie once loaded
 * and how many entries it holds. No such section: no entries. */
static otm_status find_entries(Elf *elf, otd_image *img, char *err, size_t errlen)
{
    size_t shstrndx;
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;

    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return OTM_OK;      /* no section names, so no table */
    while ((scn = elf_nextscn(elf, scn)) != NULL) {
        const char *name;

        if (gelf_getshdr(scn, &sh) == NULL)
            continue;
        name = elf_strptr(elf, shstrndx, sh.sh_name);
        if (name == NULL || strcmp(name, ENTRIES_SECTION) != 0)
            continue;
        if (sh.sh_size % sizeof(otd_image_entry) != 0 ||
            !mapped(elf, sh.sh_addr, sh.sh_size))
            return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                                   "device image's %s section (%llu bytes at "
                                   "%#llx) is not a table of entries in its "
                                   "loaded memory", ENTRIES_SECTION,
                                   (unsigned long long)sh.sh_size,
                                   (unsigned long long)sh.sh_addr);
        img->entries_vaddr = sh.sh_addr;
        img->nentries = sh.sh_size / sizeof(otd_image_entry);
        return OTM_OK;
    }
    return OTM_OK;
}

static otm_status locate_entries(const void *start, size_t size, otd_image *img,
                                 char *err, size_t errlen)
{
    Elf *elf;
    otm_status st;

    if (elf_version(EV_CURRENT) == EV_NONE)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "libelf is unusable");
    elf = elf_memory((char *)start, size);
    if (elf == NULL)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "libelf rejects the device image: %s",
                               elf_errmsg(-1));
    st = find_entries(elf, img, err, errlen);
    elf_end(elf);
    return st;
}

otm_status otd_image_entries(otd_image *img, const otd_image_entry **table,
                             uint64_t *count)
{
    struct link_map *lm = NULL;

    if (img == NULL || table == NULL || count == NULL)
        return OTM_ERR_INVALID;
    *table = NULL;
    *count = img->nentries;
    if (img->nentries == 0)
        return OTM_OK;
    if (dlinfo(img->handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL)
        return OTM_ERR_NO_KERNEL;
    /* The loader relocated the table's addresses and name pointers. */
    *table = (const otd_image_entry *)(uintptr_t)(lm->l_addr + img->entries_vaddr);
    return OTM_OK;
}

/* ------------------------------------------------------------------------ */
/* The offload-binary wrapper of clang 16                                    */

#define OB_HEADER_SIZE 32   /* magic, version, size, entry offset, entry size */
#define OB_ENTRY_SIZE 40    /* kinds, flags, strings, image offset and size */

static uint64_t read_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

otm_status otd_image_unwrap(const void *start, size_t size, const void **image,
                            size_t *image_size, char *err, size_t errlen)
{
    static const unsigned char magic[4] = {0x10, 0xFF, 0x10, 0xAD};
    const unsigned char *p = start;
    uint32_t version;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (image == NULL || image_size == NULL)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "no place for the image");
    *image = start;
    *image_size = size;
    if (start == NULL || size < sizeof magic || memcmp(p, magic, sizeof magic) != 0)
        return OTM_OK;
    if (size < OB_HEADER_SIZE)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "offload binary of %zu bytes: shorter than its "
                               "header", size);
    memcpy(&version, p + 4, sizeof version);
    if (version != 1)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "offload binary version %u "
                               "(only version 1 is known)", version);
    uint64_t total = read_u64(p + 8), eoff = read_u64(p + 16), esize = read_u64(p + 24);
    if (total < OB_HEADER_SIZE || total > size)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "offload binary claims %llu bytes in a buffer "
                               "of %zu", (unsigned long long)total, size);
    if (esize < OB_ENTRY_SIZE || !in_bounds(eoff, esize, (size_t)total))
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "offload binary entry out of bounds");
    uint64_t ioff = read_u64(p + eoff + 24), isize = read_u64(p + eoff + 32);
    if (isize == 0 || !in_bounds(ioff, isize, (size_t)total))
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "offload binary image out of bounds");
    *image = p + ioff;
    *image_size = (size_t)isize;
    return OTM_OK;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */

/* Exhausted memory (a memfd lives in memory) versus anything else the
 * system refuses. */
static otm_status errno_status(int e)
{
    return e == ENOMEM || e == ENOSPC || e == EFBIG ? OTM_ERR_NOMEM
                                                    : OTM_ERR_NO_KERNEL;
}

static int write_all(int fd, const unsigned char *p, size_t size)
{
    while (size > 0) {
        ssize_t n = write(fd, p, size);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        p += n;
        size -= (size_t)n;
    }
    return 0;
}

/* Copies the image into a fresh memfd and names it. */
static otm_status fill_memfd(otd_image *img, const void *start, size_t size,
                             char *err, size_t errlen)
{
    int e;

    img->fd = memfd_create("otm-image", MFD_CLOEXEC);
    if (img->fd < 0)
        return otd_device_fail(errno_status(errno), err, errlen,
                               "cannot create a memfd for the device image: %s",
                               strerror(errno));
    e = write_all(img->fd, start, size);
    if (e != 0)
        return otd_device_fail(errno_status(e), err, errlen,
                               "cannot copy the device image (%zu bytes) into "
                               "a memfd: %s", size, strerror(e));
    snprintf(img->name, sizeof(img->name), "/proc/self/fd/%d", img->fd);
    return OTM_OK;
}

/* True when a loaded library answers to `name`. The loader matches
 * libraries by name before it looks at the file, so a library still
 * resident under our name would be returned instead of our image. */
static int name_in_use(const char *name)
{
    void *h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);

    if (h == NULL)
        return 0;
    dlclose(h);
    return 1;
}

/* At most this many needs are dropped from one image (needs.h). */
#define MAX_DROPPED_NEEDS 8

static otm_status open_image(otd_image *img, const void *start, size_t size,
                             char *err, size_t errlen)
{
    const char *why = NULL;
    char lib[256], dropped[256] = "";

    if (name_in_use(img->name))
        return otd_device_fail(OTM_ERR_NO_KERNEL, err, errlen,
                               "cannot load the device image: another library "
                               "is already loaded as %s", img->name);
    for (int tries = 0; tries <= MAX_DROPPED_NEEDS; tries++) {
        img->handle = dlopen(img->name, RTLD_NOW | RTLD_LOCAL);
        if (img->handle != NULL)
            return OTM_OK;
        why = dlerror();
        /* A need this rank cannot open: dropped from the copy, loaded again
         * (clang 19 names a shared library in its own device image). */
        if (!otd_needs_missing(why, lib, sizeof lib) ||
            otd_needs_drop(start, size, img->fd, lib) != 1)
            break;
        if (dropped[0] == '\0')
            snprintf(dropped, sizeof dropped, "%s", lib);
    }
    return otd_device_fail(OTM_ERR_NO_KERNEL, err, errlen,
                           "the loader refuses the device image: %s%s%s%s",
                           why != NULL ? why : "no reason given",
                           dropped[0] ? " (after dropping its need of " : "",
                           dropped,
                           dropped[0] ? ", which this rank cannot open)" : "");
}

otm_status otd_image_load(const void *start, size_t size, otd_image **out,
                          char *err, size_t errlen)
{
    otd_image *img;
    otm_status st;

    if (out == NULL)
        return otd_device_fail(OTM_ERR_INVALID, err, errlen,
                               "nowhere to put the loaded device image (out is "
                               "NULL)");
    *out = NULL;
    st = otd_image_check(start, size, err, errlen);
    if (st)
        return st;
    img = calloc(1, sizeof(*img));
    if (img == NULL)
        return otd_device_fail(OTM_ERR_NOMEM, err, errlen,
                               "out of memory for the device image's record");
    img->fd = -1;           /* no memfd yet: nothing to close on failure */
    st = locate_entries(start, size, img, err, errlen);
    if (st == OTM_OK)
        st = fill_memfd(img, start, size, err, errlen);
    if (st == OTM_OK)
        st = open_image(img, start, size, err, errlen);
    if (st) {
        if (img->handle != NULL)
            dlclose(img->handle);
        if (img->fd >= 0)
            close(img->fd);
        free(img);
        return st;
    }
    *out = img;
    return OTM_OK;
}

/* True when addr lies in the image itself. dlsym also searches the
 * libraries the image links (libomp, libc), and a kernel name that resolves
 * to, say, libc's exit must not be called as a kernel. */
static int defined_here(const otd_image *img, void *addr)
{
    struct link_map *own = NULL;
    struct link_map *owner = NULL;
    Dl_info info;

    if (dlinfo(img->handle, RTLD_DI_LINKMAP, &own) != 0)
        return 0;
    if (dladdr1(addr, &info, (void **)&owner, RTLD_DL_LINKMAP) == 0)
        return 0;
    return owner == own;
}

void *otd_image_symbol(otd_image *img, const char *name)
{
    void *addr;

    if (img == NULL || name == NULL)
        return NULL;
    addr = dlsym(img->handle, name);
    if (addr == NULL || !defined_here(img, addr))
        return NULL;
    return addr;
}

void *otd_image_handle(otd_image *img)
{
    return img != NULL ? img->handle : NULL;
}

void otd_image_unload(otd_image *img)
{
    if (img == NULL)
        return;
    dlclose(img->handle);
    /* A library the loader keeps (marked NODELETE, e.g. C++ code with
     * STB_GNU_UNIQUE symbols) keeps its name too. Closing the memfd would
     * hand the fd number, and so the name, to the next image, which the
     * loader would then resolve to this library. Holding the fd keeps the
     * name ours; it is one descriptor per such image. */
    if (!name_in_use(img->name))
        close(img->fd);
    free(img);
}
