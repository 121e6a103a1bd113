/* omp_dlopen: the executable runs target regions of its own, then, in the
 * middle of the run, dlopen()s an offload library that it is not linked
 * with (libomp_dlopen_lib.so, next to the executable, found through
 * /proc/self/exe, or the path given as argv[1]), calls its functions, which
 * run target regions and read and write the library's declare-target
 * globals on every device, dlclose()s it, runs its own regions again, and
 * loads it a second time (the library loaded anew: its globals start from
 * their initial values again; used from its kernels only, see use_library),
 * then runs its own regions once more. */
#define OMP_TEST_NAME "omp_dlopen"
#include "omp_check.h"

#include <dlfcn.h>
#include <limits.h>

#define N 777

#pragma omp declare target
int exe_add = 10;
#pragma omp end declare target

static void exe_regions(int ndev, int round)
{
    static int a[N];
    for (int dev = 0; dev < ndev; dev++) {
        for (int i = 0; i < N; i++)
            a[i] = i;
#pragma omp target device(dev) map(tofrom: a) firstprivate(round)
        for (int i = 0; i < N; i++)
            a[i] = a[i] * 3 + exe_add + round;
        for (int i = 0; i < N; i++)
            CHECK(a[i] == i * 3 + 10 + round, "round %d, device %d: a[%d] = %d, expected %d",
                  round, dev, i, a[i], i * 3 + 10 + round);
    }
}

static void *must_sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    CHECK(p != NULL, "dlsym(%s): %s", name, dlerror());
    return p;
}

/* with_update: also write the library's global with target update. Not on
 * the second load: libomptarget 14 keeps the first load's table entry for
 * a global when the library comes back at the same address, so an update
 * then goes to the old image's copy while the kernels use the new one (its
 * own in-process host plugin fails that way too). */
static void use_library(const char *path, int ndev, int round, int with_update)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL, "round %d: dlopen(%s): %s", round, path, dlerror());
    int (*read_base)(int) = (int (*)(int))must_sym(lib, "dl_read_base");
    void (*set_base)(int, int) = (void (*)(int, int))must_sym(lib, "dl_set_base");
    long (*run)(int, int *, int) = (long (*)(int, int *, int))must_sym(lib, "dl_run");
    int *host_base = (int *)must_sym(lib, "dl_base");
    CHECK(*host_base == 500, "round %d: host dl_base = %d after dlopen, expected 500", round,
          *host_base);

    static int a[N];
    for (int dev = 0; dev < ndev; dev++) {
        int b = read_base(dev);
        CHECK(b == 500, "round %d, device %d: dl_base = %d in the library's kernel, expected "
              "the initial 500", round, dev, b);
        long want_sum = 0;
        for (int pass = 0; pass < 1 + with_update; pass++) {
            int base = 500 + pass * (1 + dev);
            if (pass)
                set_base(dev, base);
            CHECK(read_base(dev) == base, "round %d, device %d: dl_base after update to",
                  round, dev);
            for (int i = 0; i < N; i++)
                a[i] = i + round;
            long s = run(dev, a, N);
            for (int i = 0; i < N; i++) {
                int want = (i + round) * 2 + base;
                CHECK(a[i] == want, "round %d, device %d: a[%d] = %d, expected %d", round, dev,
                      i, a[i], want);
                want_sum += want;
            }
            CHECK(s == want_sum, "round %d, device %d: the device's dl_sum = %ld, expected %ld",
                  round, dev, s, want_sum);
        }
    }
    CHECK(dlclose(lib) == 0, "round %d: dlclose: %s", round, dlerror());
}

int main(int argc, char **argv)
{
    int ndev = require_devices(1);
    char path[PATH_MAX];

    if (argc > 1) {
        snprintf(path, sizeof path, "%s", argv[1]);
    } else {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        CHECK(n > 0, "readlink(/proc/self/exe) failed");
        path[n] = '\0';
        char *slash = strrchr(path, '/');
        CHECK(slash != NULL, "no directory in %s", path);
        snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "libomp_dlopen_lib.so");
    }

    /* OTM_TEST_DLOPEN_ROUNDS=1: the library opened once. libomptarget 19
     * keeps its mappings of a dlclose()d library's globals, so the library
     * opened again at the same address finds them taken (tests/omp/omp19.cmake). */
    const char *r = getenv("OTM_TEST_DLOPEN_ROUNDS");
    int rounds = r && atoi(r) == 1 ? 1 : 2;
    exe_regions(ndev, 0);
    use_library(path, ndev, 1, 1);
    exe_regions(ndev, 2);
    if (rounds == 2) {
        use_library(path, ndev, 3, 0);
        exe_regions(ndev, 4);
    }

    PASS("the executable's kernels on %d devices, then %s dlopen()ed, its kernels and "
         "globals used on every device, dlclose()d, the executable's kernels again; "
         "%s",
         ndev, strrchr(path, '/') ? strrchr(path, '/') + 1 : path,
         rounds == 2 ? "twice" : "once");
    return 0;
}
