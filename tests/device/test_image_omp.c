/*
 * test_image_omp.c - a device image as clang-14 really builds it for
 * -fopenmp-targets=x86_64-pc-linux-gnu (from omp_kernel.c): the library
 * checks it, loads it from memory with its libomp.so.5 dependency, finds
 * its outlined kernel and its declare-target global, and calls the kernel.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otm/device.h"

typedef struct blob {
    unsigned char *bytes;
    size_t size;
} blob;

typedef struct images {
    blob device; /* what -save-temps kept of the device link */
    blob host;   /* the host library that embeds it */
} images;

static blob read_file(const char *path)
{
    blob b = {NULL, 0};
    FILE *f = fopen(path, "rb");
    long end;

    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    end = ftell(f);
    assert_true(end > 0);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    b.size = (size_t)end;
    b.bytes = malloc(b.size);
    assert_non_null(b.bytes);
    assert_int_equal(fread(b.bytes, 1, b.size, f), b.size);
    fclose(f);
    return b;
}

static int count_maps(const char *needle)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int n = 0;

    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL)
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

/* The dynamic symbol of the outlined kernel of omp_kernel_double, named
 * __omp_offloading_<device id>_<file id>_omp_kernel_double_l<line> by
 * clang: the ids depend on where the source file lives, so it is looked
 * up rather than spelled. Returns 0 when there is none. */
static int find_kernel_name(const blob *img, char *out, size_t outlen)
{
    Elf *elf;
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    GElf_Sym s;
    int i, found = 0;

    assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
    elf = elf_memory((char *)img->bytes, img->size);
    assert_non_null(elf);
    while (!found && (scn = elf_nextscn(elf, scn)) != NULL) {
        Elf_Data *data;

        assert_non_null(gelf_getshdr(scn, &sh));
        if (sh.sh_type != SHT_DYNSYM || sh.sh_entsize == 0)
            continue;
        data = elf_getdata(scn, NULL);
        assert_non_null(data);
        for (i = 0; !found && i < (int)(sh.sh_size / sh.sh_entsize); i++) {
            const char *name;

            assert_non_null(gelf_getsym(data, i, &s));
            name = elf_strptr(elf, sh.sh_link, s.st_name);
            if (name != NULL && strncmp(name, "__omp_offloading_", 17) == 0 &&
                strstr(name, "_omp_kernel_double_l") != NULL &&
                GELF_ST_TYPE(s.st_info) == STT_FUNC) {
                snprintf(out, outlen, "%s", name);
                found = 1;
            }
        }
    }
    elf_end(elf);
    return found;
}

/* The file -save-temps kept is byte for byte the image clang embedded in
 * the host library, i.e. what libomptarget would hand the plugin. */
static void test_image_is_what_clang_embeds(void **state)
{
    images *im = *state;

    assert_true(im->device.size < im->host.size);
    assert_non_null(memmem(im->host.bytes, im->host.size, im->device.bytes,
                           im->device.size));
}

static void test_check_load_and_call(void **state)
{
    images *im = *state;
    long a[8] = {10, 20, 30, 40, 50, 60, 70, 80};
    void *args[1] = {a};
    otd_image *img = NULL;
    char err[256], kernel[256];
    long *global;
    void *fn;
    int i;

    assert_int_equal(otd_image_check(im->device.bytes, im->device.size, err,
                                     sizeof(err)),
                     OTM_OK);
    if (otd_image_load(im->device.bytes, im->device.size, &img, err,
                       sizeof(err)) != OTM_OK)
        print_error("otd_image_load: %s\n", err);
    assert_non_null(img);
    /* Its dependency came along. */
    assert_true(count_maps("libomp.so.5") > 0);

    assert_true(find_kernel_name(&im->device, kernel, sizeof(kernel)));
    fn = otd_image_symbol(img, kernel);
    assert_non_null(fn);
    global = otd_image_symbol(img, "omp_kernel_global");
    assert_non_null(global);
    assert_int_equal(global[0], 1);
    assert_int_equal(global[3], 4);

    /* What libomptarget's x86_64 plugin does: one pointer-sized argument,
     * the device address of the mapped array (here the host's, since this
     * process is the device). */
    assert_int_equal(otd_kernel_call(fn, args, 1), OTM_OK);
    for (i = 0; i < 8; i++)
        assert_int_equal(a[i], 2 * 10 * (i + 1) + (i % 4) + 1);
    /* The kernel reads the image's copy of the global. */
    global[0] = 100;
    assert_int_equal(otd_kernel_call(fn, args, 1), OTM_OK);
    assert_int_equal(a[0], 2 * 21 + 100);
    otd_image_unload(img);
}

static int setup(void **state)
{
    images *im = calloc(1, sizeof(*im));

    if (im == NULL)
        return -1;
    im->device = read_file(OMP_DEVICE_IMAGE_PATH);
    im->host = read_file(OMP_HOST_LIBRARY_PATH);
    *state = im;
    return 0;
}

static int teardown(void **state)
{
    images *im = *state;

    free(im->device.bytes);
    free(im->host.bytes);
    free(im);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_is_what_clang_embeds),
        cmocka_unit_test(test_check_load_and_call),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
