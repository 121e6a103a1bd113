/*
 * test_image_entries.c - the image's own table of offload entries: found in
 * an image that has one (the table's order, names, sizes and relocated
 * addresses), absent from one that has none, and a table that is not one
 * (a size that is no multiple of an entry, a table outside the loaded
 * memory) refused before the loader runs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_image.h"
#include "otm/device.h"

#ifndef FIXTURE_PATH
#error "FIXTURE_PATH must name the fixture without a table"
#endif
#ifndef FIXTURE2_PATH
#error "FIXTURE2_PATH must name the fixture with a table"
#endif

static unsigned char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* The section header of the entry table in an ELF64 buffer. */
static Elf64_Shdr *entries_section(unsigned char *b)
{
    Elf64_Ehdr *eh = (Elf64_Ehdr *)b;
    Elf64_Shdr *sh = (Elf64_Shdr *)(b + eh->e_shoff);
    const char *names = (const char *)b + sh[eh->e_shstrndx].sh_offset;
    for (int i = 0; i < eh->e_shnum; i++)
        if (strcmp(names + sh[i].sh_name, "omp_offloading_entries") == 0)
            return &sh[i];
    fail_msg("the fixture has no omp_offloading_entries section");
    return NULL;
}

static void test_table_found(void **state)
{
    (void)state;
    static const char *const names[] = {"fx_tick", "fx_add", "fx_global_sum", "fx_sum20",
                                        "fx_sum40", "fx_getpid", "fx_which", "fx_global"};
    size_t size;
    unsigned char *b = read_all(FIXTURE2_PATH, &size);
    char err[256];
    otd_image *img = NULL;
    assert_int_equal(otd_image_load(b, size, &img, err, sizeof err), OTM_OK);
    const otd_image_entry *t = NULL;
    uint64_t n = 0;
    assert_int_equal(otd_image_entries(img, &t, &n), OTM_OK);
    assert_int_equal(n, 8);
    for (uint64_t i = 0; i < n; i++) {
        assert_string_equal(t[i].name, names[i]);
        assert_int_equal(t[i].size, i == 7 ? 16 * sizeof(int) : 0);
        assert_ptr_equal(t[i].addr, otd_image_symbol(img, names[i]));
    }
    /* The relocated address is the loaded copy's own: calling it works. */
    int *global = t[7].addr;
    global[0] = 41;
    ((void (*)(void))t[0].addr)();
    assert_int_equal(global[0], 42);
    otd_image_unload(img);
    free(b);
}

static void test_no_table(void **state)
{
    (void)state;
    size_t size;
    unsigned char *b = read_all(FIXTURE_PATH, &size);
    char err[256];
    otd_image *img = NULL;
    assert_int_equal(otd_image_load(b, size, &img, err, sizeof err), OTM_OK);
    const otd_image_entry *t = (const otd_image_entry *)1;
    uint64_t n = 99;
    assert_int_equal(otd_image_entries(img, &t, &n), OTM_OK);
    assert_int_equal(n, 0);
    assert_null(t);
    assert_int_equal(otd_image_entries(NULL, &t, &n), OTM_ERR_INVALID);
    assert_int_equal(otd_image_entries(img, NULL, &n), OTM_ERR_INVALID);
    assert_int_equal(otd_image_entries(img, &t, NULL), OTM_ERR_INVALID);
    otd_image_unload(img);
    free(b);
}

static void refused(unsigned char *b, size_t size, const char *why)
{
    char err[256] = "";
    otd_image *img = (otd_image *)1;
    if (otd_image_load(b, size, &img, err, sizeof err) != OTM_ERR_INVALID)
        fail_msg("%s: loaded", why);
    assert_null(img);
    assert_non_null(strstr(err, "omp_offloading_entries"));
}

static void test_bad_tables_refused(void **state)
{
    (void)state;
    size_t size;
    unsigned char *b = read_all(FIXTURE2_PATH, &size);
    Elf64_Shdr *sh = entries_section(b);
    Elf64_Shdr keep = *sh;
    sh->sh_size += 1;                   /* not a whole number of entries */
    refused(b, size, "a table of 8 entries and 1 byte");
    *sh = keep;
    sh->sh_addr = 1ull << 40;           /* in no loaded segment */
    refused(b, size, "a table outside the loaded memory");
    *sh = keep;
    sh->sh_size = 1ull << 40;           /* runs past the segments */
    sh->sh_size -= sh->sh_size % 32;
    sh->sh_type = SHT_NOBITS;           /* no file bytes, so the check of
                                         * sections lets it through */
    refused(b, size, "a table larger than the loaded memory");
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_found),
        cmocka_unit_test(test_no_table),
        cmocka_unit_test(test_bad_tables_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
