/* omp_dlopen_first: the executable has no offload code of its own (built
 * without -fopenmp-targets): its first target region is in a library it
 * dlopen()s, libomp_dlopen_lib.so. On a device rank the program's main
 * runs up to that dlopen, and the library's constructor starts the device
 * there, inside glibc's dlopen, whose loader lock that thread then holds
 * for as long as the device serves. The device's images must be loaded by
 * that thread (src/plugin/worker.c, on_loader_thread): loaded by another,
 * they waited for the lock for ever (LLVM 14's own
 * offloading/dynamic_module_load.c, about one run in 30 under load). The
 * driver runs it with several handler threads per device, so that the
 * gate is often a kernel thread's when a load comes. */
#define OMP_TEST_NAME "omp_dlopen_first"
#include "omp_check.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define N 333
#define ROUNDS 20

int main(void)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    CHECK(n > 0, "readlink(/proc/self/exe) failed");
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    CHECK(slash != NULL, "no directory in %s", path);
    snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "libomp_dlopen_lib.so");

    /* On a device rank, main goes no further than this. */
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL, "dlopen(%s): %s", path, dlerror());
    /* omp_get_num_devices() here is libomp's, which finds no libomptarget
     * in the global scope (it came with a library opened RTLD_LOCAL). */
    int ndev = expected_devices();
    long (*run)(int, int *, int) = (long (*)(int, int *, int))(uintptr_t)dlsym(lib, "dl_run");
    CHECK(run != NULL, "dlsym(dl_run): %s", dlerror());

    static int a[N];
    long want_sum[16] = {0};
    for (int round = 0; round < ROUNDS; round++)
        for (int dev = 0; dev < ndev && dev < 16; dev++) {
            for (int i = 0; i < N; i++)
                a[i] = i + round;
            long s = run(dev, a, N);
            for (int i = 0; i < N; i++) {
                int want = (i + round) * 2 + 500;
                CHECK(a[i] == want, "round %d, device %d: a[%d] = %d, expected %d", round,
                      dev, i, a[i], want);
                want_sum[dev] += want;
            }
            CHECK(s == want_sum[dev], "round %d, device %d: the device's sum = %ld, "
                  "expected %ld", round, dev, s, want_sum[dev]);
        }
    CHECK(dlclose(lib) == 0, "dlclose: %s", dlerror());
    PASS("no offload code in the executable; %s dlopen()ed first, its kernels run %d "
         "times on each of %d devices", slash + 1, ROUNDS, ndev);
    return 0;
}
