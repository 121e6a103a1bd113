/*
 * test_host_ranges.c - the host's ranges for unified shared memory
 * (otd_host_ranges, otm/pager.h) read from a /proc/self/maps longer than
 * the first buffer, and when it cannot be read (failpoints.h): the file
 * not opened, no memory for its buffer or the buffer's growth, a read
 * failing. Each is OTM_ERR_INVALID with nothing written; then it works.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "failpoints.h"
#include "otm/pager.h"

#define MAPPINGS 400   /* about 20 KB more of the map: past its 16 KB buffer */
#define CAP 4096

static otd_range ranges[CAP];
static void *mapped[MAPPINGS];

/* Mappings that the map lists one per line: every other page read-only,
 * so that no two neighbours join. */
static int setup(void **state)
{
    (void)state;
    long page = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, (size_t)page * 2 * MAPPINGS, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    for (int i = 0; i < MAPPINGS; i++) {
        mapped[i] = p + (size_t)page * 2 * (size_t)i;
        if (mprotect(mapped[i], (size_t)page, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE))
            return -1;
    }
    return 0;
}

/* The range holding addr, or NULL. */
static const otd_range *holding(size_t n, const void *addr)
{
    uint64_t a = (uint64_t)(uintptr_t)addr;
    for (size_t i = 0; i < n; i++)
        if ((ranges[i].start & ~(uint64_t)OTD_RANGE_READ_ONLY) <= a && a < ranges[i].end)
            return &ranges[i];
    return NULL;
}

/* All of the map is read: every mapping is there, with its writability. */
static void test_long_map(void **state)
{
    (void)state;
    size_t n = 0;
    assert_int_equal(otd_host_ranges(ranges, CAP, &n), OTM_OK);
    assert_true(n >= MAPPINGS);
    for (int i = 0; i < MAPPINGS; i++) {
        const otd_range *r = holding(n, mapped[i]);
        assert_non_null(r);
        assert_int_equal(!!(r->start & OTD_RANGE_READ_ONLY), i % 2);
    }
    /* The last mapping, the map's last lines, too. */
    assert_non_null(holding(n, &n));
}

static void test_map_unreadable(void **state)
{
    FP_NEEDED();
    (void)state;
    static const struct {
        fp_fn fn;
        unsigned long nth;
    } fails[] = {{FP_OPEN, 1}, {FP_MALLOC, 1}, {FP_REALLOC, 1}, {FP_READ, 1}, {FP_READ, 2}};
    for (size_t i = 0; i < sizeof fails / sizeof fails[0]; i++) {
        size_t n = 99;
        ranges[0] = (otd_range){1, 2};
        fp_fail(fails[i].fn, fails[i].nth, i == 0 ? EMFILE : i < 3 ? ENOMEM : EIO);
        assert_int_equal(otd_host_ranges(ranges, CAP, &n), OTM_ERR_INVALID);
        if (!fp_fired(fails[i].fn))
            fail_msg("%s #%lu was not called", fp_name(fails[i].fn), fails[i].nth);
        fp_clear();
        assert_int_equal(n, 99);
        assert_int_equal(ranges[0].start, 1);
    }
    test_long_map(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_long_map),
        cmocka_unit_test(test_map_unreadable),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
