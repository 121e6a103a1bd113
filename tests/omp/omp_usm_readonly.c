/* omp_usm_readonly: EXPECTED TO FAIL (run_omp.sh --expect-fail). Under
 * unified shared memory, a region writes memory that rank 0 keeps
 * read-only (OTM_TEST_VARIANT): `const` (the default), a table in the program's
 * constants (.rodata), or `mprotect`, a page of the host's heap made
 * read-only before the region. The host itself would die of SIGSEGV at
 * that store; the device must too, with the fault report naming the
 * address, the mapping and its protection (status 139), never a silent
 * success nor an error of the write-back. Variant `after`: the page is
 * made read-only only after a first region read it, when the device has
 * learned it writable (DESIGN.md §4, "Ranges learned again"): the store
 * is refused at the write-back, with a line that says why (status 134).
 */
#define OMP_TEST_NAME "omp_usm_readonly"
#include "omp_check.h"

#pragma omp requires unified_shared_memory

static const int table[2048] = {1, 2, 3};

int main(void)
{
    int n = require_devices(1);
    const char *how = getenv("OTM_TEST_VARIANT");
    if (!how)
        how = "const";
    int *target = (int *)table + 1024;
    if (!strcmp(how, "mprotect") || !strcmp(how, "after")) {
        long page = sysconf(_SC_PAGESIZE);
        target = aligned_alloc((size_t)page, (size_t)page);
        CHECK(target != NULL, "no memory");
        target[0] = 1;
        if (!strcmp(how, "after")) {
            int seen = 0;
#pragma omp target device(0) map(from : seen)
            seen = target[0];
            CHECK(seen == 1, "the first region read %d", seen);
        }
        CHECK(!mprotect(target, (size_t)page, PROT_READ), "mprotect failed");
    }
    int before = target[0];
    printf("RUN omp_usm_readonly: %d devices; a region writes the host's read-only %s at "
           "%p\n", n, how, (void *)target);
    fflush(stdout);
#pragma omp target device(0)
    target[0] = before + 41;
    fprintf(stderr, "FAIL omp_usm_readonly: the region returned (%d on the host)\n",
            target[0]);
    return 3;
}
