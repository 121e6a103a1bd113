/*
 * test_needs.c - a device image that names, among its needs, a library this
 * process cannot open (src/device/needs.h): loaded without that need when
 * it takes nothing from it, refused with both reasons when it does, and
 * otd_needs_missing and otd_needs_drop on their own, malformed images
 * included, and the drop when its allocation, its read or its write of the
 * copy fails (failpoints.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "failpoints.h"
#include "needs.h"
#include "otm/device.h"

#define STUB "libotm_fixture_stub.so"

typedef struct blob {
    unsigned char *bytes;
    size_t size;
} blob;

static blob read_file(const char *path)
{
    blob b = {NULL, 0};
    FILE *f = fopen(path, "rb");

    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    b.size = (size_t)ftell(f);
    assert_true(b.size > 0);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    b.bytes = malloc(b.size);
    assert_non_null(b.bytes);
    assert_int_equal(fread(b.bytes, 1, b.size, f), b.size);
    fclose(f);
    return b;
}

/* A memfd holding a copy of b, as image.c loads it. */
static int memfd_of(const blob *b)
{
    int fd = memfd_create("test-needs", MFD_CLOEXEC);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, b->bytes, b->size), (ssize_t)b->size);
    return fd;
}

/* The number of DT_NEEDED entries naming lib in the copy held by fd. */
static int needs_in(const blob *b, int fd, const char *lib)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b->bytes;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(b->bytes + eh->e_phoff);
    const Elf64_Phdr *dynp = NULL;
    uint64_t strtab = 0;
    int n = 0;

    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC)
            dynp = &ph[i];
    assert_non_null(dynp);
    size_t count = dynp->p_filesz / sizeof(Elf64_Dyn);
    Elf64_Dyn *dyn = calloc(count, sizeof *dyn);
    assert_non_null(dyn);
    assert_int_equal(pread(fd, dyn, count * sizeof *dyn, (off_t)dynp->p_offset),
                     (ssize_t)(count * sizeof *dyn));
    for (size_t i = 0; i < count && dyn[i].d_tag != DT_NULL; i++)
        if (dyn[i].d_tag == DT_STRTAB)
            for (unsigned k = 0; k < eh->e_phnum; k++)
                if (ph[k].p_type == PT_LOAD && dyn[i].d_un.d_ptr >= ph[k].p_vaddr &&
                    dyn[i].d_un.d_ptr < ph[k].p_vaddr + ph[k].p_filesz)
                    strtab = dyn[i].d_un.d_ptr - ph[k].p_vaddr + ph[k].p_offset;
    assert_true(strtab != 0);
    for (size_t i = 0; i < count && dyn[i].d_tag != DT_NULL; i++)
        n += dyn[i].d_tag == DT_NEEDED &&
             strcmp((const char *)b->bytes + strtab + dyn[i].d_un.d_val, lib) == 0;
    free(dyn);
    return n;
}

/* ------------------------------------------------------------------------ */

static void test_missing_parses_the_loaders_message(void **state)
{
    char lib[64];

    (void)state;
    assert_true(otd_needs_missing(STUB ": cannot open shared object file: "
                                  "No such file or directory", lib, sizeof lib));
    assert_string_equal(lib, STUB);
    /* Another reason, no name, a path, no room: not a missing need. */
    assert_false(otd_needs_missing("undefined symbol: fx_stub", lib, sizeof lib));
    assert_false(otd_needs_missing(": cannot open shared object file", lib, sizeof lib));
    assert_false(otd_needs_missing("/x/libz.so: cannot open shared object file", lib,
                                   sizeof lib));
    assert_false(otd_needs_missing(STUB ": cannot open shared object file", lib, 8));
    assert_false(otd_needs_missing(NULL, lib, sizeof lib));
}

static void test_image_without_a_used_need_loads(void **state)
{
    blob b = read_file(FIXTURE_NEEDS_PATH);
    char err[512] = "";
    otd_image *img = NULL;

    (void)state;
    assert_int_equal(otd_image_load(b.bytes, b.size, &img, err, sizeof err), OTM_OK);
    int (*f)(void) = (int (*)(void))otd_image_symbol(img, "fx_needs");
    assert_non_null(f);
    assert_int_equal(f(), 42);
    otd_image_unload(img);
    free(b.bytes);
}

static void test_image_using_the_need_is_refused_with_both_reasons(void **state)
{
    blob b = read_file(FIXTURE_NEEDS_USED_PATH);
    char err[512] = "";
    otd_image *img = NULL;

    (void)state;
    assert_int_equal(otd_image_load(b.bytes, b.size, &img, err, sizeof err),
                     OTM_ERR_NO_KERNEL);
    assert_null(img);
    assert_non_null(strstr(err, "undefined symbol: fx_stub"));
    assert_non_null(strstr(err, "after dropping its need of " STUB
                                ", which this rank cannot open"));
    free(b.bytes);
}

static void test_drop_removes_only_that_need(void **state)
{
    blob b = read_file(FIXTURE_NEEDS_PATH);
    int fd = memfd_of(&b);

    (void)state;
    assert_int_equal(needs_in(&b, fd, STUB), 1);
    assert_int_equal(needs_in(&b, fd, "libc.so.6"), 1);
    assert_int_equal(otd_needs_drop(b.bytes, b.size, fd, STUB), 1);
    assert_int_equal(needs_in(&b, fd, STUB), 0);
    assert_int_equal(needs_in(&b, fd, "libc.so.6"), 1);
    /* Nothing left to drop; a name the image does not need. */
    assert_int_equal(otd_needs_drop(b.bytes, b.size, fd, STUB), 0);
    assert_int_equal(otd_needs_drop(b.bytes, b.size, fd, "libnothere.so"), 0);
    close(fd);
    free(b.bytes);
}

/* A string table outside every loadable segment, or a need whose name
 * lies past the image's end: malformed, not a silent success. */
static void test_drop_refuses_a_malformed_dynamic_segment(void **state)
{
    blob b = read_file(FIXTURE_NEEDS_PATH);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b.bytes;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(b.bytes + eh->e_phoff);
    Elf64_Dyn *dyn = NULL;

    (void)state;
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC)
            dyn = (Elf64_Dyn *)(b.bytes + ph[i].p_offset);
    assert_non_null(dyn);
    for (Elf64_Dyn *d = dyn; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_NEEDED) {
            Elf64_Xword saved = d->d_un.d_val;
            d->d_un.d_val = (Elf64_Xword)b.size;   /* past the end */
            int fd = memfd_of(&b);
            assert_int_equal(otd_needs_drop(b.bytes, b.size, fd, STUB), -1);
            close(fd);
            d->d_un.d_val = saved;
        }
        if (d->d_tag == DT_STRTAB) {
            Elf64_Addr saved = d->d_un.d_ptr;
            d->d_un.d_ptr = UINT64_MAX - 16;        /* in no segment */
            int fd = memfd_of(&b);
            assert_int_equal(otd_needs_drop(b.bytes, b.size, fd, STUB), -1);
            close(fd);
            d->d_un.d_ptr = saved;
        }
    }
    /* A file that cannot be read. */
    assert_int_equal(otd_needs_drop(b.bytes, b.size, -1, STUB), -1);
    free(b.bytes);
}

/* The dynamic segment's program header in b's bytes. */
static Elf64_Phdr *dynamic_header(blob *b)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b->bytes;
    Elf64_Phdr *ph = (Elf64_Phdr *)(b->bytes + eh->e_phoff);

    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC)
            return &ph[i];
    fail_msg("no PT_DYNAMIC");
    return NULL;
}

/* An image without a dynamic segment, or with an empty one, names no need:
 * nothing to drop, and the copy is not touched. */
static void test_drop_without_a_dynamic_segment(void **state)
{
    blob b = read_file(FIXTURE_NEEDS_PATH);
    Elf64_Phdr *dyn = dynamic_header(&b);
    int fd = memfd_of(&b);

    (void)state;
    dyn->p_type = PT_NULL;
    fp_fail_from(FP_PWRITE, 1, EIO);
    assert_int_equal(otd_needs_drop(b.bytes, b.size, fd, STUB), 0);
    dyn->p_type = PT_DYNAMIC;
    Elf64_Xword filesz = dyn->p_filesz;
    dyn->p_filesz = 0;
    assert_int_equal(otd_needs_drop(b.bytes, b.size, fd, STUB), 0);
    assert_int_equal(fp_calls(FP_PWRITE), 0);
    fp_clear();
    dyn->p_filesz = filesz;
    assert_int_equal(needs_in(&b, fd, STUB), 1);
    close(fd);
    free(b.bytes);
}

/* No memory for the dynamic section's copy, a read of it that fails or
 * comes back short, its write that fails: -1, and the need is still
 * there; then the drop works. */
static void test_drop_when_the_system_refuses(void **state)
{
    FP_NEEDED();
    blob b = read_file(FIXTURE_NEEDS_PATH);
    int fd = memfd_of(&b);
    static const struct {
        fp_fn fn;
        int e;
    } fails[] = {{FP_CALLOC, ENOMEM}, {FP_PREAD, EIO}, {FP_PREAD, 0}, {FP_PWRITE, ENOSPC},
                 {FP_PWRITE, 0}};

    (void)state;
    for (size_t i = 0; i < sizeof fails / sizeof fails[0]; i++) {
        fp_fail(fails[i].fn, 1, fails[i].e);
        assert_int_equal(otd_needs_drop(b.bytes, b.size, fd, STUB), -1);
        assert_true(fp_fired(fails[i].fn));
        fp_clear();
        assert_int_equal(needs_in(&b, fd, STUB), 1);
    }
    assert_int_equal(otd_needs_drop(b.bytes, b.size, fd, STUB), 1);
    assert_int_equal(needs_in(&b, fd, STUB), 0);
    close(fd);
    free(b.bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drop_without_a_dynamic_segment),
        cmocka_unit_test(test_drop_when_the_system_refuses),
        cmocka_unit_test(test_missing_parses_the_loaders_message),
        cmocka_unit_test(test_image_without_a_used_need_loads),
        cmocka_unit_test(test_image_using_the_need_is_refused_with_both_reasons),
        cmocka_unit_test(test_drop_removes_only_that_need),
        cmocka_unit_test(test_drop_refuses_a_malformed_dynamic_segment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
