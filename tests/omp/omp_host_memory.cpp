// omp_host_memory: EXPECTED TO FAIL (run_omp.sh --expect-fail). A program
// that needs rank 0's addresses on its devices (a virtual call on a mapped
// object, which must work: its virtual table is a host address), then a
// region that writes host memory it was never given, through
// is_device_ptr: the host's stack, heap or globals (OTM_TEST_VARIANT).
// The device must fault there, with the report naming that memory, and
// the job end with status 139: never a write into the device rank's own
// memory at that address while the host's array stays as it was.
#define OMP_TEST_NAME "omp_host_memory"
#include "omp_check.h"

#pragma clang diagnostic ignored "-Wopenmp-mapping"   // mapped on purpose

struct Counter {
    int base;
    virtual int next(int x) const { return base + x; }
    virtual ~Counter() {}
};

static int on_globals[64];

int main()
{
    int n = require_devices(1);
    const char *kind = getenv("OTM_TEST_VARIANT");
    CHECK(kind != NULL, "OTM_TEST_VARIANT is not set (stack, heap or global)");
    Counter c;
    c.base = 40;
    int got = 0;
#pragma omp target device(0) map(to : c) map(from : got)
    {
        const Counter *p = &c;
        got = p->next(2);
    }
    CHECK(got == 42, "the virtual call on device 0 gave %d, expected 42", got);
    int on_stack[64] = {0};
    int *on_heap = (int *)calloc(64, sizeof(int));
    CHECK(on_heap != NULL, "no memory");
    int *a = !strcmp(kind, "stack") ? on_stack : !strcmp(kind, "heap") ? on_heap : on_globals;
    printf("RUN omp_host_memory: %d devices; a virtual call ran on device 0, now a region "
           "writes the host's %s at %p it was never given\n", n, kind, (void *)a);
    fflush(stdout);
#pragma omp target device(0) is_device_ptr(a)
    for (int i = 0; i < 64; i++)
        a[i] = i + 1;
    fprintf(stderr, "FAIL omp_host_memory: the region wrote the host's %s and returned "
            "(a[63] = %d on the host)\n", kind, a[63]);
    return 3;
}
