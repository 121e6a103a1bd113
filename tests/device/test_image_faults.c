/*
 * test_image_faults.c - loading a device image when the system refuses:
 * no file descriptor left for the memfd (RLIMIT_NOFILE), the image not
 * fitting in it (RLIMIT_FSIZE), each call of the load failing in turn
 * (failpoints.h: the record's allocation, libelf, the memfd, its writes);
 * the memfd's name still held by a library loaded from it; and the header
 * variants with no section header table. Each refusal comes back as a
 * status with a sentence, leaves nothing behind, and the next load with
 * the limit lifted works. Also the loaded image's table, symbols and
 * kernel calls when the loader's or libffi's answers fail.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "failpoints.h"
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

/* ------------------------------------------------------------------------ */
/* Each call of the load failing in turn                                     */

static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long end = ftell(f);
    assert_true(end > 0);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    unsigned char *p = malloc((size_t)end);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)end, f), (size_t)end);
    fclose(f);
    *size = (size_t)end;
    return p;
}

/* What a failure of fn with errno e may give: the statuses and the words
 * of the sentence. A load may also succeed when the failed call only looked
 * for the image's table of entries (section names or headers unreadable:
 * no table) or was a write interrupted by a signal (tried again). */
typedef struct outcome {
    fp_fn fn;
    int e;
    otm_status st;      /* the refusal's status */
    const char *reason; /* in its sentence */
    int may_load;       /* the load may succeed, without the table */
} outcome;

static const outcome outcomes[] = {
    {FP_CALLOC, ENOMEM, OTM_ERR_NOMEM, "out of memory", 0},
    {FP_ELF_VERSION, 0, OTM_ERR_INVALID, "libelf", 0},
    {FP_ELF_MEMORY, ENOMEM, OTM_ERR_INVALID, "libelf rejects", 0},
    {FP_GELF_GETSHDR, 0, OTM_ERR_INVALID, "is unreadable", 1},
    {FP_ELF_GETPHDRNUM, 0, OTM_ERR_INVALID, "not a table of entries", 0},
    {FP_ELF_GETSHDRSTRNDX, 0, OTM_ERR_INVALID, "", 1},
    {FP_MEMFD_CREATE, ENOMEM, OTM_ERR_NOMEM, "cannot create a memfd", 0},
    {FP_MEMFD_CREATE, EMFILE, OTM_ERR_NO_KERNEL, "cannot create a memfd", 0},
    {FP_WRITE, ENOSPC, OTM_ERR_NOMEM, "cannot copy the device image", 0},
    {FP_WRITE, EFBIG, OTM_ERR_NOMEM, "cannot copy the device image", 0},
    {FP_WRITE, EIO, OTM_ERR_NO_KERNEL, "cannot copy the device image", 0},
    {FP_WRITE, 0, OTM_ERR_NO_KERNEL, "Input/output error", 0},  /* wrote nothing */
    {FP_WRITE, EINTR, OTM_OK, "", 1},
};

/* Fails the 1st, 2nd... call of o->fn in a load of the image until a load
 * makes fewer calls; returns how many loads were refused. `entries`: how
 * many entries the image's table holds. */
static unsigned sweep_load(const unsigned char *bytes, size_t size, const outcome *o,
                           uint64_t entries)
{
    int fds = count_fds();
    unsigned refused = 0;

    for (unsigned long n = 1; n < 4096; n++) {
        char err[256] = "";
        otd_image *img = (otd_image *)&img;

        fp_fail(o->fn, n, o->e);
        otm_status st = otd_image_load(bytes, size, &img, err, sizeof err);
        int fired = fp_fired(o->fn);
        fp_clear();
        if (st == OTM_OK) {
            const otd_image_entry *t = NULL;
            uint64_t count = 99;
            if (!fired || !o->may_load)
                print_error("%s #%lu (errno %d): the load %s\n", fp_name(o->fn), n, o->e,
                            fired ? "succeeded" : "made fewer calls");
            assert_true(!fired || o->may_load);
            assert_non_null(otd_image_symbol(img, "fx_tick"));
            assert_int_equal(otd_image_entries(img, &t, &count), OTM_OK);
            /* The table is whole, or was not found. */
            assert_true(count == entries || (fired && o->fn != FP_WRITE && count == 0));
            otd_image_unload(img);
            assert_int_equal(count_fds(), fds);
            if (!fired)
                return refused;
            continue;
        }
        if (st != o->st || !strstr(err, o->reason))
            print_error("%s #%lu (errno %d): %d, %s\n", fp_name(o->fn), n, o->e, (int)st,
                        err);
        assert_true(fired);
        assert_int_equal(st, o->st);
        assert_non_null(strstr(err, o->reason));
        assert_null(img);
        assert_int_equal(count_fds(), fds);
        refused++;
    }
    fail_msg("%s: more than 4096 calls in one load", fp_name(o->fn));
    return refused;
}

/* Every call of the load, for the image without a table of entries and
 * for the one with it. */
static void test_each_call_fails(void **state)
{
    FP_NEEDED();
    (void)state;
    size_t size2;
    unsigned char *image2 = read_file(FIXTURE2_PATH, &size2);
    otd_image *img = NULL;
    const otd_image_entry *t = NULL;
    uint64_t entries = 0;
    char err[256];

    assert_int_equal(otd_image_load(image2, size2, &img, err, sizeof err), OTM_OK);
    assert_int_equal(otd_image_entries(img, &t, &entries), OTM_OK);
    assert_true(entries > 0);
    otd_image_unload(img);
    for (size_t i = 0; i < sizeof outcomes / sizeof outcomes[0]; i++) {
        const outcome *o = &outcomes[i];
        unsigned plain = sweep_load(image, image_size, o, 0);
        unsigned with_table = sweep_load(image2, size2, o, entries);
        switch (o->fn) {
        case FP_CALLOC: case FP_MEMFD_CREATE:
            assert_int_equal(plain, 1);
            assert_int_equal(with_table, 1);
            break;
        case FP_ELF_VERSION: case FP_ELF_MEMORY:
            /* the checks, then the search for the table */
            assert_int_equal(plain, 2);
            assert_int_equal(with_table, 2);
            break;
        case FP_ELF_GETPHDRNUM:
            /* only where the table is found: is it in loaded memory? */
            assert_int_equal(plain, 0);
            assert_int_equal(with_table, 1);
            break;
        case FP_ELF_GETSHDRSTRNDX:
            assert_int_equal(plain + with_table, 0);
            break;
        case FP_WRITE:
            assert_int_equal(plain, o->st == OTM_OK ? 0 : 1);
            assert_int_equal(with_table, plain);
            break;
        default:
            assert_true(plain > 0 && with_table > plain);
            break;
        }
    }
    free(image2);
    load_works();
}

/* A library loaded from /proc/self/fd/N keeps that name after N is closed:
 * a memfd that gets number N cannot be loaded under it (the loader would
 * hand back the library), so the load is refused; once the library is
 * closed, the same load works. */
static void test_name_in_use(void **state)
{
    (void)state;
    int fds = count_fds();
    int fd = open(FIXTURE_PATH, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    for (int low = 0; low < fd; low++)
        assert_true(fcntl(low, F_GETFD) != -1);     /* fd is the lowest free */
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    close(fd);
    expect_refused(OTM_ERR_NO_KERNEL, "is already loaded as");
    assert_int_equal(count_fds(), fds);
    assert_int_equal(dlclose(h), 0);
    load_works();
    assert_int_equal(count_fds(), fds);
}

/* The loader's answers failing after the load: no table and no symbol
 * rather than a wrong address; both come back with the answers. */
static void test_loader_answers_fail(void **state)
{
    FP_NEEDED();
    (void)state;
    size_t size2;
    unsigned char *image2 = read_file(FIXTURE2_PATH, &size2);
    otd_image *img = NULL;
    const otd_image_entry *t = (const otd_image_entry *)&t;
    uint64_t n = 0;
    char err[256];

    assert_int_equal(otd_image_load(image2, size2, &img, err, sizeof err), OTM_OK);
    fp_fail(FP_DLINFO, 1, 0);
    assert_int_equal(otd_image_entries(img, &t, &n), OTM_ERR_NO_KERNEL);
    assert_true(fp_fired(FP_DLINFO));
    assert_null(t);
    fp_fail(FP_DLINFO, 1, 0);
    assert_null(otd_image_symbol(img, "fx_tick"));
    assert_true(fp_fired(FP_DLINFO));
    fp_fail(FP_DLADDR1, 1, 0);
    assert_null(otd_image_symbol(img, "fx_tick"));
    assert_true(fp_fired(FP_DLADDR1));
    fp_clear();
    assert_int_equal(otd_image_entries(img, &t, &n), OTM_OK);
    assert_non_null(t);
    assert_true(n > 0);
    assert_non_null(otd_image_symbol(img, "fx_tick"));
    otd_image_unload(img);
    free(image2);
}

/* A kernel call whose description libffi refuses, or whose argument
 * arrays (more than fit on the stack) cannot be allocated, fails without
 * calling the kernel. */
static void test_kernel_call_refused(void **state)
{
    FP_NEEDED();
    (void)state;
    char err[256];
    otd_image *img = NULL;
    assert_int_equal(otd_image_load(image, image_size, &img, err, sizeof err), OTM_OK);
    void *tick = otd_image_symbol(img, "fx_tick");
    void *sum40 = otd_image_symbol(img, "fx_sum40");
    int *global = otd_image_symbol(img, "fx_global");
    assert_non_null(tick);
    assert_non_null(sum40);
    assert_non_null(global);

    global[0] = 0;
    fp_fail(FP_FFI_PREP_CIF, 1, 0);
    assert_int_equal(otd_kernel_call(tick, NULL, 0), OTM_ERR_KERNEL);
    assert_int_equal(global[0], 0);
    fp_clear();
    assert_int_equal(otd_kernel_call(tick, NULL, 0), OTM_OK);
    assert_int_equal(global[0], 1);

    int64_t out = -1;
    void *args[40];
    args[0] = &out;
    for (int i = 1; i < 40; i++)
        args[i] = (void *)(intptr_t)1;
    for (unsigned long n = 1; n <= 2; n++) {
        fp_fail(FP_MALLOC, n, ENOMEM);
        assert_int_equal(otd_kernel_call(sum40, args, 40), OTM_ERR_NOMEM);
        assert_true(fp_fired(FP_MALLOC));
        assert_int_equal(out, -1);
    }
    fp_fail(FP_FFI_PREP_CIF, 1, 0);
    assert_int_equal(otd_kernel_call(sum40, args, 40), OTM_ERR_KERNEL);
    assert_int_equal(out, -1);
    fp_clear();
    assert_int_equal(otd_kernel_call(sum40, args, 40), OTM_OK);
    assert_int_equal(out, 39 * 40 / 2);
    otd_image_unload(img);
}

int main(void)
{
    read_fixture();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_descriptor),
        cmocka_unit_test(test_image_too_big_for_memfd),
        cmocka_unit_test(test_xnum_without_sections),
        cmocka_unit_test(test_no_section_table),
        cmocka_unit_test(test_each_call_fails),
        cmocka_unit_test(test_name_in_use),
        cmocka_unit_test(test_loader_answers_fail),
        cmocka_unit_test(test_kernel_call_refused),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(image);
    return rc;
}
