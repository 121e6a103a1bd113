/*
 * test_image_faults.c - loading a device image when the system refuses:
 * no file descriptor left for the memfd (RLIMIT_NOFILE), the image not
 * fitting in it (RLIMIT_FSIZE); and the header variants with no section
 * header table. Each refusal comes back as a status with a sentence, leaves
 * nothing behind, and the next load with the limit lifted works.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "otm/device.h"

static unsigned char *image;
static size_t image_size;

static void read_fixture(void)
{
    FILE *f = fopen(FIXTURE_PATH, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long end = ftell(f);
    assert_true(end > 0);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    image_size = (size_t)end;
    image = malloc(image_size);
    assert_non_null(image);
    assert_int_equal(fread(image, 1, image_size, f), image_size);
    fclose(f);
}

static int count_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) != -1;
    return n;
}

/* The load works, and its image has the fixture's kernels. */
static void load_works(void)
{
    char err[256];
    otd_image *img = NULL;
    assert_int_equal(otd_image_load(image, image_size, &img, err, sizeof err), OTM_OK);
    assert_non_null(otd_image_symbol(img, "fx_tick"));
    otd_image_unload(img);
}

static void expect_refused(otm_status want, const char *reason)
{
    char err[256];
    otd_image *img = (otd_image *)&img;     /* must be reset to NULL */
    memset(err, 'x', sizeof err);
    otm_status st = otd_image_load(image, image_size, &img, err, sizeof err);
    if (st != want || !strstr(err, reason))
        print_error("load gave %d: %s\n", (int)st, err);
    assert_int_equal(st, want);
    assert_null(img);
    assert_non_null(strstr(err, reason));
}

/* No descriptor left: memfd_create fails (EMFILE), a refusal that is not
 * for lack of memory. */
static void test_no_descriptor(void **state)
{
    (void)state;
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    int fds = count_fds();
    int lowest = 0;
    while (fcntl(lowest, F_GETFD) != -1)
        lowest++;
    struct rlimit low = {(rlim_t)lowest, old.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    expect_refused(OTM_ERR_NO_KERNEL, "cannot create a memfd");
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(count_fds(), fds);
    load_works();
    assert_int_equal(count_fds(), fds);
}

/* The memfd cannot grow to the image's size: the copy fails part-way
 * (EFBIG), reported as lack of memory; the memfd is closed. */
static void test_image_too_big_for_memfd(void **state)
{
    (void)state;
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    int fds = count_fds();
    struct rlimit low = {(rlim_t)(image_size / 2), old.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
    expect_refused(OTM_ERR_NOMEM, "cannot copy the device image");
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, was);
    assert_int_equal(count_fds(), fds);
    load_works();
}

static Elf64_Ehdr header(const unsigned char *p)
{
    Elf64_Ehdr eh;
    memcpy(&eh, p, sizeof eh);
    return eh;
}

/* Without a section header table, an extended segment count (PN_XNUM) has
 * nowhere to live: refused. */
static void test_xnum_without_sections(void **state)
{
    (void)state;
    unsigned char *p = malloc(image_size);
    assert_non_null(p);
    memcpy(p, image, image_size);
    Elf64_Ehdr eh = header(p);
    eh.e_shoff = 0;
    eh.e_shnum = 0;
    eh.e_shstrndx = 0;
    eh.e_phnum = PN_XNUM;
    memcpy(p, &eh, sizeof eh);
    char err[256];
    assert_int_equal(otd_image_check(p, image_size, err, sizeof err), OTM_ERR_INVALID);
    assert_non_null(strstr(err, "segment count"));
    free(p);
}

/* Sections are optional for loading: an image whose section header table
 * is dropped passes the checks of the headers and is loaded. */
static void test_no_section_table(void **state)
{
    (void)state;
    unsigned char *p = malloc(image_size);
    assert_non_null(p);
    memcpy(p, image, image_size);
    Elf64_Ehdr eh = header(p);
    eh.e_shoff = 0;
    eh.e_shnum = 0;
    eh.e_shstrndx = 0;
    memcpy(p, &eh, sizeof eh);
    char err[256];
    assert_int_equal(otd_image_check(p, image_size, err, sizeof err), OTM_OK);
    otd_image *img = NULL;
    assert_int_equal(otd_image_load(p, image_size, &img, err, sizeof err), OTM_OK);
    assert_non_null(otd_image_symbol(img, "fx_tick"));
    otd_image_unload(img);
    free(p);
}

int main(void)
{
    read_fixture();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_descriptor),
        cmocka_unit_test(test_image_too_big_for_memfd),
        cmocka_unit_test(test_xnum_without_sections),
        cmocka_unit_test(test_no_section_table),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(image);
    return rc;
}
