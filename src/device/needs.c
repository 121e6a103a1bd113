/*
 * needs.c - dropping a need from a loaded copy of a device image (needs.h).
 *
 * The image passed otd_image_check: it is a little-endian ELF64 file whose
 * header and segments lie inside its bytes. Every address read from its
 * dynamic segment is checked against the bytes before it is followed.
 */
#include "needs.h"

#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char cannot_open[] = ": cannot open shared object file";

int otd_needs_missing(const char *why, char *lib, size_t len)
{
    const char *end = why ? strstr(why, cannot_open) : NULL;
    size_t n = end ? (size_t)(end - why) : 0;

    if (n == 0 || n >= len || memchr(why, '/', n) != NULL)
        return 0;
    memcpy(lib, why, n);
    lib[n] = '\0';
    return 1;
}

/* The program header of the dynamic segment, and the file offset of the
 * address `vaddr` through the loadable segment that maps it. The program
 * headers lie inside the image (otd_image_check). */
static const Elf64_Phdr *dynamic_segment(const unsigned char *p)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(p + eh->e_phoff);

    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC)
            return &ph[i];
    return NULL;
}

static int file_offset(const unsigned char *p, uint64_t vaddr, uint64_t *off)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(p + eh->e_phoff);

    for (unsigned i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && vaddr >= ph[i].p_vaddr &&
            vaddr - ph[i].p_vaddr < ph[i].p_filesz) {
            *off = vaddr - ph[i].p_vaddr + ph[i].p_offset;
            return 1;
        }
    }
    return 0;
}

/* The string at `index` of the table at file offset `strtab`, or NULL when
 * it does not end inside the image. */
static const char *string_at(const unsigned char *p, size_t size,
                             uint64_t strtab, uint64_t index)
{
    if (strtab >= size || index >= size - strtab)
        return NULL;
    const char *s = (const char *)p + strtab + index;
    return memchr(s, '\0', size - strtab - index) ? s : NULL;
}

/* Removes the needs naming `lib` from dyn[0..n), in place; the count. */
static size_t remove_needs(const unsigned char *p, size_t size, Elf64_Dyn *dyn,
                           size_t n, const char *lib, int *bad)
{
    uint64_t strtab = UINT64_MAX;
    size_t kept = 0, removed = 0;

    for (size_t i = 0; i < n && dyn[i].d_tag != DT_NULL; i++)
        if (dyn[i].d_tag == DT_STRTAB && !file_offset(p, dyn[i].d_un.d_ptr, &strtab))
            *bad = 1;
    if (strtab == UINT64_MAX)
        *bad = 1;
    int ended = 0;      /* past the DT_NULL that ends the array */
    for (size_t i = 0; i < n && !*bad; i++) {
        const char *name = NULL;

        ended |= dyn[i].d_tag == DT_NULL;
        if (!ended && dyn[i].d_tag == DT_NEEDED &&
            (name = string_at(p, size, strtab, dyn[i].d_un.d_val)) == NULL)
            *bad = 1;
        if (name != NULL && strcmp(name, lib) == 0)
            removed++;
        else
            dyn[kept++] = dyn[i];
    }
    /* The entries that moved up leave room at the end: the array still
     * ends with DT_NULL, which the last kept entry is or precedes. */
    for (size_t i = kept; i < n; i++)
        dyn[i] = (Elf64_Dyn){.d_tag = DT_NULL};
    return *bad ? 0 : removed;
}

int otd_needs_drop(const void *image, size_t size, int fd, const char *lib)
{
    const unsigned char *p = image;
    const Elf64_Phdr *ph = dynamic_segment(p);
    int bad = 0;

    if (ph == NULL)
        return 0;
    size_t n = (size_t)(ph->p_filesz / sizeof(Elf64_Dyn));
    Elf64_Dyn *dyn = n ? calloc(n, sizeof *dyn) : NULL;
    if (dyn == NULL)
        return n ? -1 : 0;
    size_t bytes = n * sizeof *dyn;
    int rc = -1;
    if (pread(fd, dyn, bytes, (off_t)ph->p_offset) == (ssize_t)bytes) {
        size_t removed = remove_needs(p, size, dyn, n, lib, &bad);
        if (bad)
            rc = -1;
        else if (removed == 0)
            rc = 0;
        else
            rc = pwrite(fd, dyn, bytes, (off_t)ph->p_offset) == (ssize_t)bytes ? 1 : -1;
    }
    free(dyn);
    return rc;
}
