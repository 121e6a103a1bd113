/*
 * mpi_images.c - several image descriptors through the ABI, as a program
 * with libraries registers them: descriptors registered while the job runs
 * (dlopen), so the workers never registered them and get their images'
 * bytes; one whose image the workers hold already (same bytes and names as
 * the start-up one: loaded by reference); unregistered in every order, each
 * unregistration unloading its images on every device while the others
 * keep working; the start-up descriptor unregistered before a later one;
 * the job ends with the last unregistration only; images a worker must
 * refuse (not an image, names not the host's, no table it can know).
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_common.h"

#ifndef MT_FIXTURE2_PATH
#error "MT_FIXTURE2_PATH must name the second fixture device image"
#endif

#define OK OFFLOAD_SUCCESS
#define NDESC 3

typedef struct lib {
    __tgt_bin_desc desc;
    __tgt_device_image image;
    __tgt_offload_entry entries[MT_FX_COUNT];
    __tgt_target_table *table[MT_MAX_DEV];
    void *kernel[MT_MAX_DEV];       /* its fx_tick, kept past its unload */
} lib;

static lib libs[NDESC];
static const char *const lib_names[NDESC] = {"B (new bytes)", "C (new bytes)",
                                             "D (the start-up image's bytes)"};

static void *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    void *buf = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0)
        buf = malloc((size_t)n);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (f)
        fclose(f);
    *size = buf ? (size_t)n : 0;
    return buf;
}

/* A descriptor of its own over a copy of `bytes`, with the start-up
 * descriptor's entry names and sizes (the fixtures define the same). */
static void make_lib(lib *l, const void *bytes, size_t size)
{
    char *copy = malloc(size);
    if (!copy)
        exit(2);
    memcpy(copy, bytes, size);
    static char ids[NDESC][MT_FX_COUNT];
    for (int i = 0; i < MT_FX_COUNT; i++) {
        l->entries[i] = mt.desc.HostEntriesBegin[i];
        l->entries[i].addr = &ids[l - libs][i];
    }
    l->image = (__tgt_device_image){copy, copy + size, l->entries, l->entries + MT_FX_COUNT};
    l->desc = (__tgt_bin_desc){1, &l->image, l->entries, l->entries + MT_FX_COUNT};
}

static int run(int d, void *kernel)
{
    return __tgt_rtl_run_target_region(d, kernel, NULL, NULL, 0);
}

static int tick(int d, __tgt_target_table *t)
{
    return run(d, t->EntriesBegin[MT_FX_TICK].addr);
}

/* fx_global[0] of the image copy behind table t on device d, or -1. */
static int counter(int d, __tgt_target_table *t)
{
    int g[16];
    if (__tgt_rtl_data_retrieve(d, g, t->EntriesBegin[MT_FX_GLOBAL].addr, sizeof g) != OK)
        return -1;
    return g[0];
}

static void register_and_load(int k)
{
    lib *l = &libs[k];
    CHECK(__tgt_rtl_register_lib(&l->desc) == OK, "register_lib of %s", lib_names[k]);
    for (int d = 0; d < mt.ndev; d++) {
        l->table[d] = __tgt_rtl_load_binary(d, &l->image);
        int ok = l->table[d] && l->table[d]->EntriesEnd - l->table[d]->EntriesBegin ==
                                    MT_FX_COUNT;
        ok = ok && tick(d, l->table[d]) == OK && counter(d, l->table[d]) == 1;
        l->kernel[d] = ok ? l->table[d]->EntriesBegin[MT_FX_TICK].addr : NULL;
        CHECK(ok, "device %d: %s loaded, its kernel runs on its own global", d,
              lib_names[k]);
    }
}

/* Each live library's kernel works; the unloaded ones' kernels (their
 * tables are gone: the addresses were kept) are refused. */
static void check_libs(const int *live, const char *when)
{
    for (int d = 0; d < mt.ndev; d++) {
        int ok = tick(d, mt.table[d]) == OK;
        for (int k = 0; k < NDESC; k++) {
            if (!libs[k].kernel[d])
                continue;
            mt_capture_begin();
            int rc = run(d, libs[k].kernel[d]);
            mt_capture_end();
            ok &= live[k] ? rc == OK : rc != OK;
        }
        CHECK(ok, "device %d %s: the kernels of the loaded images run, those of the "
              "unloaded ones are refused", d, when);
    }
}

static void every_order(void)
{
    static const int orders[6][NDESC] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                         {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int o = 0; o < 6; o++) {
        int live[NDESC] = {1, 1, 1};
        for (int k = 0; k < NDESC; k++)
            register_and_load(k);
        for (int i = 0; i < NDESC; i++) {
            int k = orders[o][i];
            CHECK(__tgt_rtl_unregister_lib(&libs[k].desc) == OK,
                  "order %d: unregister_lib of %s", o, lib_names[k]);
            live[k] = 0;
            check_libs(live, "after it");
            CHECK(mt_roundtrip(0, 4096, (uint32_t)(o * 3 + i)), "order %d: the job still "
                  "runs (a round trip on device 0)", o);
        }
        for (int k = 0; k < NDESC; k++) {
            memset(libs[k].table, 0, sizeof libs[k].table);
            memset(libs[k].kernel, 0, sizeof libs[k].kernel);
        }
    }
}

/* Images a worker must refuse: bytes that are no image, a table whose
 * names are not the host's (another order), an image without a table
 * that the worker never registered (it cannot know its entries). Each
 * load_binary fails with a message; the job goes on. */
static void bad_images(const void *bytes2, size_t size2, const void *bytes1, size_t size1)
{
    static const char *const what[3] = {"bytes that are no image",
                                        "entry names in another order",
                                        "no table, never registered by the workers"};
    for (int k = 0; k < 3; k++) {
        lib *l = &libs[0];
        make_lib(l, k == 2 ? bytes1 : bytes2, k == 2 ? size1 : size2);
        if (k == 0)
            ((char *)l->image.ImageStart)[1] ^= 0x20;   /* "\x7fElf" */
        if (k > 0) {
            __tgt_offload_entry t = l->entries[0];
            l->entries[0] = l->entries[1];
            l->entries[1] = t;
        }
        CHECK(__tgt_rtl_register_lib(&l->desc) == OK, "register_lib: %s", what[k]);
        mt_capture_begin();
        __tgt_target_table *t = __tgt_rtl_load_binary(0, &l->image);
        const char *msg = mt_capture_end();
        CHECK(!t && strstr(msg, "load_binary on device 0 failed"),
              "load_binary of an image with %s fails with a message", what[k]);
        CHECK(__tgt_rtl_unregister_lib(&l->desc) == OK && mt_roundtrip(0, 4096, 5u + (uint32_t)k),
              "unregister_lib; the job goes on");
        free(l->image.ImageStart);
    }
}

int main(void)
{
    mt_start("mpi_images", 1);
    size_t size2 = 0, size1 = 0;
    void *bytes2 = read_all(MT_FIXTURE2_PATH, &size2);
    void *bytes1 = read_all(MT_FIXTURE_PATH, &size1);
    if (!bytes2 || !bytes1) {
        printf("not ok - cannot read the fixture images\n");
        return 1;
    }
    bad_images(bytes2, size2, bytes1, size1);
    make_lib(&libs[0], bytes2, size2);
    make_lib(&libs[1], bytes2, size2);
    make_lib(&libs[2], bytes1, size1);
    every_order();

    /* The start-up descriptor goes first: the job goes on with B. */
    register_and_load(0);
    CHECK(__tgt_rtl_unregister_lib(&mt.desc) == OK,
          "unregister_lib of the start-up descriptor while B is registered");
    int ok = 1;
    for (int d = 0; d < mt.ndev; d++) {
        mt_capture_begin();
        ok &= run(d, mt.fx[d][MT_FX_TICK]) != OK;
        mt_capture_end();
        ok &= tick(d, libs[0].table[d]) == OK && counter(d, libs[0].table[d]) == 2;
    }
    CHECK(ok, "its images are unloaded on every device, B's kernels still run");
    CHECK(mt_roundtrip(1 % mt.ndev, 1 << 20, 77), "the job still runs");
    /* The last one ends the job; mt_finish's unregistration of the start-up
     * descriptor, no longer registered, changes nothing. */
    CHECK(__tgt_rtl_unregister_lib(&libs[0].desc) == OK,
          "unregister_lib of B, the last: the exit protocol");
    free(bytes1);
    free(bytes2);
    return mt_finish();
}
