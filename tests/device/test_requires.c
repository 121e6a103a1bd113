/*
 * test_requires.c - the `requires` flags read from a program's file
 * (otd_program_requires, otm/device.h): from an entry of the offload
 * table (clang 18 on), from the registration function's immediate (clang
 * 14 to 17), none in a program without either, with the immediate past
 * the function's first 16 bytes, with a table without bytes or without
 * the entry; a file that cannot be read, one that is
 * not ELF; and libelf failing (failpoints.h): refused when libelf is
 * unusable or the file's section names unreadable, a section that cannot
 * be read skipped (its flags not found, never an error).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "failpoints.h"
#include "otm/device.h"

#define USM 8u  /* OMP_REQ_UNIFIED_SHARED_MEMORY */

static otm_status requires(const char *path, uint64_t *flags, char *err, size_t len)
{
    *flags = 99;
    err[0] = '\0';
    return otd_program_requires(path, flags, err, len);
}

static void expect_flags(const char *path, uint64_t want)
{
    char err[256];
    uint64_t flags;

    assert_int_equal(requires(path, &flags, err, sizeof err), OTM_OK);
    assert_int_equal(flags, want);
}

static void test_found(void **state)
{
    (void)state;
    expect_flags(FIXTURE_ENTRY_PATH, USM);
    expect_flags(FIXTURE_FUNCTION_PATH, USM);
    expect_flags(FIXTURE_FAR_PATH, 0);
    expect_flags(FIXTURE_NONE_PATH, 0);
    expect_flags(FIXTURE_PLAIN_PATH, 0);
}

static void test_not_a_program(void **state)
{
    (void)state;
    char err[256], path[] = "/tmp/otm_requires_XXXXXX";
    uint64_t flags;

    assert_int_equal(requires("/nonexistent/program", &flags, err, sizeof err),
                     OTM_ERR_INVALID);
    assert_int_equal(flags, 0);
    assert_non_null(strstr(err, "/nonexistent/program: cannot be read"));
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "#!/bin/sh\nexit 0\n", 17), 17);
    close(fd);
    assert_int_equal(requires(path, &flags, err, sizeof err), OTM_ERR_INVALID);
    assert_non_null(strstr(err, "not an ELF file"));
    unlink(path);
}

/* libelf unusable, the file not openable, not parsed, its section names
 * unreadable: refused, whichever program. */
static void test_libelf_refuses(void **state)
{
    FP_NEEDED();
    (void)state;
    static const struct {
        fp_fn fn;
        const char *reason;
    } cases[] = {{FP_ELF_VERSION, "libelf"},
                 {FP_OPEN, "cannot be read"},
                 {FP_ELF_BEGIN, "not an ELF file"},
                 {FP_ELF_GETSHDRSTRNDX, "not an ELF file"}};
    char err[256];
    uint64_t flags;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fp_fail(cases[i].fn, 1, EIO);
        assert_int_equal(requires(FIXTURE_ENTRY_PATH, &flags, err, sizeof err),
                         OTM_ERR_INVALID);
        assert_true(fp_fired(cases[i].fn));
        assert_int_equal(flags, 0);
        if (!strstr(err, cases[i].reason))
            fail_msg("%s: %s", fp_name(cases[i].fn), err);
    }
    fp_clear();
    expect_flags(FIXTURE_ENTRY_PATH, USM);
}

/* The n-th section header or data read failing, for n = 1, 2...: the
 * flags are found or not (the section that held them was skipped), never
 * an error; a read never reached leaves them found. */
static void sweep_reads(const char *path, fp_fn fn)
{
    unsigned missed = 0;

    for (unsigned long n = 1; n < 1000; n++) {
        char err[256];
        uint64_t flags;

        fp_fail(fn, n, EIO);
        otm_status st = requires(path, &flags, err, sizeof err);
        int fired = fp_fired(fn);
        fp_clear();
        assert_int_equal(st, OTM_OK);
        if (!fired) {
            assert_int_equal(flags, USM);
            assert_true(missed > 0);
            return;
        }
        assert_true(flags == USM || flags == 0);
        missed += flags == 0;
    }
    fail_msg("%s: more than 1000 calls", fp_name(fn));
}

static void test_unreadable_sections_skipped(void **state)
{
    FP_NEEDED();
    (void)state;
    sweep_reads(FIXTURE_ENTRY_PATH, FP_GELF_GETSHDR);
    sweep_reads(FIXTURE_ENTRY_PATH, FP_ELF_GETDATA);
    sweep_reads(FIXTURE_FUNCTION_PATH, FP_GELF_GETSHDR);
    sweep_reads(FIXTURE_FUNCTION_PATH, FP_ELF_GETDATA);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_found),
        cmocka_unit_test(test_not_a_program),
        cmocka_unit_test(test_libelf_refuses),
        cmocka_unit_test(test_unreadable_sections_skipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
