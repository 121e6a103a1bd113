/*
 * gpu_probe - what ci/gpu-check.sh asks of the machine and of the bundle's
 * programs, without the CUDA toolkit:
 *
 *   gpu_probe driver         loads the NVIDIA driver's libcuda.so.1 and
 *                            prints
 *                              driver VERSION PATH
 *                              libcuda.so loads|missing
 *                              gpu N cc MAJORMINOR mem MIB pci BUS name NAME
 *                            one line a GPU, in CUDA's numbering (the
 *                            plugin's "cuda device N"); exit status 2 with
 *                            one line saying what is missing when the
 *                            driver does not load or finds no GPU
 *   gpu_probe images FILE... lists the offload images embedded in each
 *                            program (clang-16's offload binaries), one
 *                            line each:
 *                              FILE x86_64-elf
 *                              FILE cubin sm_NN abi N
 *                              FILE llvm-ir TRIPLE sm_NN
 *                            exit status 1 if a file holds none
 *
 * The driver is read through dlopen/dlsym, its API's stable entry points
 * only (cuInit, cuDriverGetVersion, cuDeviceGet*), so the probe builds
 * anywhere and runs wherever a driver is installed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EM_X86_64_ 62
#define EM_CUDA_ 190

/* ---- driver ------------------------------------------------------------ */

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_int_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_attr_fn)(int *, int, int);
typedef int (*cu_mem_fn)(size_t *, int);
typedef int (*cu_err_fn)(int, const char **);

enum {
    ATTR_PCI_BUS = 33,
    ATTR_PCI_DEVICE = 34,
    ATTR_PCI_DOMAIN = 50,
    ATTR_CC_MAJOR = 75,
    ATTR_CC_MINOR = 76,
};

static const char *cu_error(void *h, int rc)
{
    static char buf[160];
    cu_err_fn name = (cu_err_fn)dlsym(h, "cuGetErrorName");
    cu_err_fn text = (cu_err_fn)dlsym(h, "cuGetErrorString");
    const char *n = NULL, *t = NULL;
    if (name)
        name(rc, &n);
    if (text)
        text(rc, &t);
    if (!n || !t) {     /* the toolkit's stub library answers neither */
        static const struct { int rc; const char *n, *t; } known[] = {
            {34, "CUDA_ERROR_STUB_LIBRARY", "the CUDA toolkit's stub libcuda.so, not a driver"},
            {35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "the kernel module is older than the library"},
            {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
            {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility is "
                  "not supported on this device"},
        };
        for (size_t i = 0; i < sizeof known / sizeof *known; i++)
            if (known[i].rc == rc)
                n = known[i].n, t = known[i].t;
    }
    snprintf(buf, sizeof buf, "%s (%d)%s%s", n ? n : "CUDA error", rc, t ? ": " : "", t ? t : "");
    return buf;
}

static int probe_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        printf("missing: the NVIDIA driver's libcuda.so.1 does not load (%s)\n",
               e ? e : "not found");
        return 2;
    }
    char path[4096] = "libcuda.so.1";
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name)
        snprintf(path, sizeof path, "%s", lm->l_name);
    cu_init_fn init = (cu_init_fn)dlsym(h, "cuInit");
    cu_int_fn version = (cu_int_fn)dlsym(h, "cuDriverGetVersion");
    cu_int_fn count = (cu_int_fn)dlsym(h, "cuDeviceGetCount");
    cu_get_fn get = (cu_get_fn)dlsym(h, "cuDeviceGet");
    cu_name_fn name = (cu_name_fn)dlsym(h, "cuDeviceGetName");
    cu_attr_fn attr = (cu_attr_fn)dlsym(h, "cuDeviceGetAttribute");
    cu_mem_fn mem = (cu_mem_fn)dlsym(h, "cuDeviceTotalMem_v2");
    if (!init || !version || !count || !get || !name || !attr) {
        printf("missing: %s lacks the driver API (cuInit, cuDeviceGet...): not NVIDIA's "
               "driver library\n", path);
        return 2;
    }
    int v = 0, n = 0, rc;
    version(&v);
    if ((rc = init(0)) != 0) {
        printf("missing: a working NVIDIA driver: %s (driver %d.%d) cuInit failed: %s\n", path,
               v / 1000, v % 1000 / 10, cu_error(h, rc));
        return 2;
    }
    if ((rc = count(&n)) != 0 || n < 1) {
        printf("missing: a GPU: %s (driver %d.%d) finds no CUDA device%s%s\n", path, v / 1000,
               v % 1000 / 10, rc ? ": " : "", rc ? cu_error(h, rc) : "");
        return 2;
    }
    printf("driver %d %s\n", v, path);
    /* libomptarget 16's CUDA plugins open the unversioned name, which
     * some installations lack (a driver's package with libcuda.so.1 only). */
    void *u = dlopen("libcuda.so", RTLD_LAZY | RTLD_LOCAL);
    printf("libcuda.so %s\n", u ? "loads" : "missing");
    if (u)
        dlclose(u);
    for (int i = 0; i < n; i++) {
        int dev = 0, major = 0, minor = 0, bus = 0, slot = 0, domain = 0;
        char nm[256] = "?";
        size_t bytes = 0;
        get(&dev, i);
        name(nm, sizeof nm, dev);
        attr(&major, ATTR_CC_MAJOR, dev);
        attr(&minor, ATTR_CC_MINOR, dev);
        attr(&bus, ATTR_PCI_BUS, dev);
        attr(&slot, ATTR_PCI_DEVICE, dev);
        attr(&domain, ATTR_PCI_DOMAIN, dev);
        if (mem)
            mem(&bytes, dev);
        printf("gpu %d cc %d%d mem %zu pci %04x:%02x:%02x.0 name %s\n", i, major, minor,
               bytes >> 20, domain, bus, slot, nm);
    }
    return 0;
}

/* ---- images ------------------------------------------------------------ */

/* clang-16 wraps each device image in an LLVM offload binary
 * (llvm/Object/OffloadBinary.h, version 1), which names its triple and
 * arch: a 32-byte header (magic, version, size, entry offset, entry size),
 * an entry (image kind, offload kind, flags, string table offset, number
 * of strings, image offset, image size), string pairs (key offset, value
 * offset), all offsets from the binary's start, little-endian. */
#define OFFLOAD_MAGIC "\x10\xff\x10\xad"

static unsigned rd16(const unsigned char *p) { return p[0] | p[1] << 8; }
static unsigned long rd32(const unsigned char *p)
{
    return p[0] | p[1] << 8 | (unsigned long)p[2] << 16 | (unsigned long)p[3] << 24;
}
static unsigned long long rd64(const unsigned char *p)
{
    return rd32(p) | (unsigned long long)rd32(p + 4) << 32;
}

/* The value of KEY in the string table of the offload binary ob, or "". */
static const char *offload_string(const unsigned char *ob, unsigned long long size,
                                  unsigned long long table, unsigned long long n, const char *key)
{
    for (unsigned long long k = 0; k < n && k < 64; k++) {
        unsigned long long at = table + 16 * k;
        if (at > size || size - at < 16)
            break;
        unsigned long long ko = rd64(ob + at), vo = rd64(ob + at + 8);
        if (ko >= size || vo >= size || !memchr(ob + ko, 0, size - ko) ||
            !memchr(ob + vo, 0, size - vo))
            continue;
        if (!strcmp((const char *)ob + ko, key))
            return (const char *)ob + vo;
    }
    return "";
}

/* One line for the image img (len bytes) of the offload binary. */
static void describe_image(const char *file, const unsigned char *img, unsigned long long len,
                           unsigned kind, const char *triple, const char *arch)
{
    if (len >= 64 && !memcmp(img, "\177ELF", 4) && img[4] == 2 && img[5] == 1) {
        unsigned machine = rd16(img + 18);
        unsigned long flags = rd32(img + 48);
        unsigned osabi = img[7], abi = img[8];
        if (machine == EM_X86_64_ && rd16(img + 16) == 3) {
            printf("%s x86_64-elf\n", file);
            return;
        }
        if (machine == EM_CUDA_) {
            /* CUDA's ELF ABI 8 (OS ABI 0x41, CUDA 12.8's toolkits and
             * later) keeps the SM in bits 8-15 of e_flags, the older ones
             * in bits 0-7. */
            unsigned sm = osabi == 0x41 || abi >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
            printf("%s cubin sm_%u abi %u\n", file, sm, abi);
            return;
        }
        printf("%s elf machine %u %s %s\n", file, machine, *triple ? triple : "no-triple",
               *arch ? arch : "no-arch");
        return;
    }
    if (len >= 4 && !memcmp(img, "BC\xc0\xde", 4)) {
        printf("%s llvm-ir %s %s\n", file, *triple ? triple : "no-triple",
               *arch ? arch : "no-arch");
        return;
    }
    printf("%s image kind %u %s %s\n", file, kind, *triple ? triple : "no-triple",
           *arch ? arch : "no-arch");
}

static int probe_images(const char *file)
{
    FILE *f = fopen(file, "rb");
    if (!f) {
        printf("%s unreadable\n", file);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = size > 0 ? malloc((size_t)size) : NULL;
    if (!b || fread(b, 1, (size_t)size, f) != (size_t)size) {
        printf("%s unreadable\n", file);
        fclose(f);
        free(b);
        return 1;
    }
    fclose(f);
    int found = 0;
    for (long i = 0; i + 32 <= size; i++) {
        if (b[i] != 0x10 || memcmp(b + i, OFFLOAD_MAGIC, 4))
            continue;
        const unsigned char *ob = b + i;
        unsigned long long obsize = rd64(ob + 8), entry = rd64(ob + 16);
        if (rd32(ob + 4) != 1 || obsize < 32 || obsize > (unsigned long long)(size - i) ||
            entry > obsize || obsize - entry < 40)
            continue;
        const unsigned char *e = ob + entry;
        unsigned long long table = rd64(e + 8), strings = rd64(e + 16);
        unsigned long long at = rd64(e + 24), len = rd64(e + 32);
        if (at > obsize || len > obsize - at)
            continue;
        describe_image(file, ob + at, len, rd16(e),
                       offload_string(ob, obsize, table, strings, "triple"),
                       offload_string(ob, obsize, table, strings, "arch"));
        found++;
        i += (long)obsize - 1;
    }
    free(b);
    if (!found)
        printf("%s no offload image\n", file);
    return !found;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "driver"))
        return probe_driver();
    if (argc >= 3 && !strcmp(argv[1], "images")) {
        int rc = 0;
        for (int i = 2; i < argc; i++)
            rc |= probe_images(argv[i]);
        return rc;
    }
    fprintf(stderr, "usage: gpu_probe driver | gpu_probe images FILE...\n");
    return 2;
}
