/*
 * test_host_code.c - rank 0's objects at rank 0's addresses
 * (otm/host_code.h), in one process: this process describes itself, the
 * description is moved down by SHIFT as if "rank 0" had loaded every
 * object there, and placed. Then, through "rank 0's" addresses: a call
 * of a function of the program and of libc runs (resumed in this
 * process's copy), a string constant and a table of pointers (RELRO)
 * read as here, a writable global and rank 0's stack fault; bad
 * descriptions are refused with nothing placed. And when the system
 * refuses (failpoints.h): no memory for the description or its reading,
 * the stack's extent or limit unknown, the objects' files unopenable,
 * rank 0's RELRO or stack range in use here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "failpoints.h"
#include "otm/device.h"
#include "otm/fault.h"
#include "otm/host_code.h"

#define HEAD 32u
#define RECORD 20u

/* Where "rank 0" has everything: this much lower. Tried in turn until
 * nothing of this process is in the way. */
static const uint64_t shifts[] = {0x100000000000ull, 0x180000000000ull, 0x0c0000000000ull};
static uint64_t shift;

static int counter;                                     /* .bss */
static const char greeting[] = "hello from rank 0";     /* .rodata */

__attribute__((noinline)) static int seven_x_plus_one(int x) { return 7 * x + 1; }
__attribute__((noinline)) static int twice(int x) { return 2 * x; }

struct ops {
    int (*fn)(int);
    const char *name;
};
/* Pointers relocated at load: RELRO in a position-independent program. */
static const struct ops ops_table[] = {{twice, "twice"}, {seven_x_plus_one, "seven"}};

static void *down(const void *p) { return (void *)((uintptr_t)p - shift); }

/* cmocka catches SIGSEGV around each test: ours go back in first. */
static void handlers(void)
{
    assert_int_equal(otd_fault_install(2, "test_host_code: "), OTM_OK);
}

/* The description of this process, every object and the stack moved down
 * by `by`. */
static uint8_t *shifted(size_t *len, uint64_t by)
{
    char err[256];
    uint8_t *d = NULL;
    assert_int_equal(otd_host_code_describe(&d, len, err, sizeof err), OTM_OK);
    uint32_t count;
    memcpy(&count, d + 8, 4);
    assert_true(count > 0);
    for (int i = 16; i < 32; i += 8) {
        uint64_t v;
        memcpy(&v, d + i, 8);
        v -= by;
        memcpy(d + i, &v, 8);
    }
    size_t at = HEAD;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t base;
        memcpy(&base, d + at, 8);
        base -= by;
        memcpy(d + at, &base, 8);
        at += RECORD + d[at + 16] + d[at + 17];
    }
    assert_int_equal(at, *len);
    return d;
}

static int setup(void **state)
{
    (void)state;
    assert_int_equal(otd_fault_install(2, "test_host_code: "), OTM_OK);
    for (size_t i = 0; i < sizeof shifts / sizeof shifts[0]; i++) {
        char err[256];
        size_t len;
        otd_host_code_counts c;
        uint8_t *d = shifted(&len, shifts[i]);
        otm_status st = otd_host_code_place(d, len, &c, err, sizeof err);
        free(d);
        assert_int_equal(st, OTM_OK);
        if (c.taken == 0 && c.stack_guard) {
            shift = shifts[i];
            assert_true(c.matched == c.objects && c.same == 0 && c.placed > 0);
            return 0;
        }
        otd_host_code_clear();
    }
    fail_msg("no shift left this process's own mappings clear");
    return 1;
}

static void test_calls_resume_here(void **state)
{
    (void)state;
    handlers();
    int (*fn)(int) = (int (*)(int))down((void *)(uintptr_t)seven_x_plus_one);
    assert_int_equal(fn(3), 22);
    /* A function of libc, through its "rank 0" address. */
    size_t (*len)(const char *) = (size_t (*)(const char *))down((void *)(uintptr_t)strlen);
    assert_int_equal(len(greeting), strlen(greeting));
    assert_int_equal(otd_host_code_redirect((uint64_t)(uintptr_t)fn),
                     (uint64_t)(uintptr_t)seven_x_plus_one);
    assert_int_equal(otd_host_code_redirect((uint64_t)(uintptr_t)seven_x_plus_one), 0);
    assert_int_equal(otd_host_code_redirect(4096), 0);
}

static void test_constants_read_as_here(void **state)
{
    (void)state;
    const char *s = down(greeting);
    assert_string_equal(s, greeting);
    /* The table's pointers are this process's: called and read directly. */
    const struct ops *t = down(ops_table);
    assert_ptr_equal(t[0].fn, twice);
    assert_int_equal(t[1].fn(2), 15);
    assert_string_equal(t[1].name, "seven");
}

static void write_one(void *p) { *(volatile int *)p = 1; }
static void read_one(void *p) { (void)*(volatile const char *)p; }

static void faults_at(void *addr)
{
    void *args[1] = {addr};
    otd_fault f;
    memset(&f, 0, sizeof f);
    assert_int_equal(otd_kernel_call_guarded((void *)(uintptr_t)write_one, args, 1, &f),
                     OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.signo, SIGSEGV);
    assert_int_equal(f.addr, (uint64_t)(uintptr_t)addr);
}

static void test_globals_and_stack_fault(void **state)
{
    (void)state;
    handlers();
    faults_at(down(&counter));
    assert_int_equal(counter, 0);
    int local = 0;
    faults_at(down(&local));
    assert_int_equal(local, 0);
    /* Code and constants are read-only there. */
    faults_at(down(greeting));
}

static void test_once(void **state)
{
    char err[256];
    size_t len;
    (void)state;
    uint8_t *d = shifted(&len, shift);
    assert_int_equal(otd_host_code_place(d, len, NULL, err, sizeof err), OTM_ERR_BUSY);
    free(d);
    size_t n;
    const otd_range *r = otd_host_code_ranges(&n);
    assert_true(n > 0);
    for (size_t i = 1; i < n; i++)
        assert_true(r[i - 1].end <= r[i].start);
}

/* A page of this process: mapped or not. */
static int mapped(const void *p)
{
    unsigned char v;
    uintptr_t page = (uintptr_t)p & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
    return mincore((void *)page, 1, &v) == 0;
}

static void test_unguard(void **state)
{
    (void)state;
    int local = 0;
    assert_true(mapped(down(&local)));
    otd_host_code_unguard();
    assert_false(mapped(down(&local)));
}

static void expect_refused(const uint8_t *d, size_t len, const char *why)
{
    char err[256] = "";
    otd_host_code_counts c;
    assert_int_equal(otd_host_code_place(d, len, &c, err, sizeof err), OTM_ERR_BAD_MESSAGE);
    assert_non_null(strstr(err, why));
    size_t n;
    otd_host_code_ranges(&n);
    assert_int_equal(n, 0);
    assert_int_equal(otd_host_code_redirect((uint64_t)(uintptr_t)down(twice)), 0);
}

static void test_bad_descriptions(void **state)
{
    size_t len;
    (void)state;
    handlers();
    otd_host_code_clear();
    uint8_t *d = shifted(&len, shift), *copy = malloc(len + 8);
    assert_non_null(copy);
    expect_refused(NULL, 0, "a description of 0 bytes");
    expect_refused(d, HEAD - 1, "a description of 31 bytes");
    memcpy(copy, d, len);
    copy[0] ^= 1;
    expect_refused(copy, len, "not a description of version 1");
    memcpy(copy, d, len);
    copy[4] = 2;
    expect_refused(copy, len, "not a description of version 1");
    memcpy(copy, d, len);
    uint32_t many = OTD_HOST_CODE_MAX_OBJECTS + 1;
    memcpy(copy + 8, &many, 4);
    expect_refused(copy, len, "objects (at most");
    expect_refused(d, len - 1, "do not fill");
    memcpy(copy, d, len);
    memset(copy + len, 0, 8);
    expect_refused(copy, len + 8, "do not fill");
    memcpy(copy, d, len);
    copy[HEAD + 16] = 65;                    /* a build-id longer than any */
    expect_refused(copy, len, "do not fill");
    uint32_t none = 0;
    memcpy(copy, d, HEAD);
    memcpy(copy + 8, &none, 4);
    char err[256];
    otd_host_code_counts c;
    assert_int_equal(otd_host_code_place(copy, HEAD, &c, err, sizeof err), OTM_OK);
    assert_int_equal(c.objects, 0);
    assert_int_equal(c.matched, 0);
    otd_host_code_clear();
    /* After all that, the real one still places. */
    assert_int_equal(otd_host_code_place(d, len, &c, err, sizeof err), OTM_OK);
    assert_int_equal(c.matched, c.objects);
    int (*fn)(int) = (int (*)(int))down((void *)(uintptr_t)twice);
    assert_int_equal(fn(21), 42);
    free(copy);
    free(d);
}

/* This process described to itself: every object is where "rank 0" has
 * it, nothing is placed. */
static void test_same_addresses(void **state)
{
    char err[256];
    size_t len;
    otd_host_code_counts c;
    (void)state;
    otd_host_code_clear();
    uint8_t *d = shifted(&len, 0);
    otd_range *r = (otd_range *)(void *)(d + 16);
    r->start = r->end = 0;                 /* no stack to guard: it is ours */
    assert_int_equal(otd_host_code_place(d, len, &c, err, sizeof err), OTM_OK);
    assert_int_equal(c.same, c.objects);
    assert_int_equal(c.placed, 0);
    assert_int_equal(c.stack_guard, 0);
    free(d);
    otd_host_code_clear();
}

/* A range of "rank 0's" that this process uses already is left alone and
 * counted; the call through it still resumes here when the range does not
 * execute. */
static void test_taken_range(void **state)
{
    char err[256];
    size_t len;
    otd_host_code_counts c;
    (void)state;
    handlers();
    otd_host_code_clear();
    uint8_t *d = shifted(&len, shift);
    long page = sysconf(_SC_PAGESIZE);
    void *in_way = (void *)(((uintptr_t)down(seven_x_plus_one)) & ~(uintptr_t)(page - 1));
    assert_ptr_equal(mmap(in_way, (size_t)page, PROT_READ,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0),
                     in_way);
    assert_int_equal(otd_host_code_place(d, len, &c, err, sizeof err), OTM_OK);
    assert_true(c.taken >= 1);
    int (*fn)(int) = (int (*)(int))down((void *)(uintptr_t)seven_x_plus_one);
    assert_int_equal(fn(1), 8);
    munmap(in_way, (size_t)page);
    free(d);
}

/* ------------------------------------------------------------------------ */
/* When the system refuses                                                   */

#define STACK_GUARD_MAX (256ull << 20)  /* host_code.c */

/* The description's stack range. */
static void stack_of(const uint8_t *d, uint64_t *lo, uint64_t *hi)
{
    memcpy(lo, d + 16, 8);
    memcpy(hi, d + 24, 8);
}

/* No memory for the description as it grows: OTM_ERR_NOMEM, nothing
 * handed out, whichever growth fails; then it works. */
static void test_describe_without_memory(void **state)
{
    FP_NEEDED();
    (void)state;
    unsigned failures = 0;
    for (unsigned long n = 1; n < 64; n++) {
        char err[256] = "";
        uint8_t *d = (uint8_t *)err;
        size_t len = 99;
        fp_fail(FP_REALLOC, n, ENOMEM);
        otm_status st = otd_host_code_describe(&d, &len, err, sizeof err);
        int fired = fp_fired(FP_REALLOC);
        fp_clear();
        if (!fired) {
            assert_int_equal(st, OTM_OK);
            free(d);
            break;
        }
        failures++;
        assert_int_equal(st, OTM_ERR_NOMEM);
        assert_null(d);
        assert_int_equal(len, 0);
        assert_non_null(strstr(err, "out of memory"));
    }
    assert_true(failures >= 1);
}

/* The stack's extent: from /proc/self/maps, as far down as RLIMIT_STACK
 * lets it grow (at most 256 MiB); the whole 256 MiB when the limit cannot
 * be read; no range at all when the maps cannot be read. */
static void test_describe_stack_unknown(void **state)
{
    FP_NEEDED();
    (void)state;
    char err[256];
    uint8_t *d;
    size_t len;
    uint64_t lo, hi, lo2, hi2;
    int local = 0;

    assert_int_equal(otd_host_code_describe(&d, &len, err, sizeof err), OTM_OK);
    stack_of(d, &lo, &hi);
    free(d);
    assert_true(lo < (uintptr_t)&local && (uintptr_t)&local < hi);
    assert_true(hi - lo <= STACK_GUARD_MAX);

    fp_fail(FP_GETRLIMIT, 1, EPERM);
    assert_int_equal(otd_host_code_describe(&d, &len, err, sizeof err), OTM_OK);
    assert_true(fp_fired(FP_GETRLIMIT));
    stack_of(d, &lo2, &hi2);
    free(d);
    assert_int_equal(hi2, hi);
    if (hi > STACK_GUARD_MAX)
        assert_int_equal(hi2 - lo2, STACK_GUARD_MAX);

    /* A limit past 256 MiB, or none: 256 MiB. */
    struct rlimit was, big;
    assert_int_equal(getrlimit(RLIMIT_STACK, &was), 0);
    static const rlim_t limits[] = {512ull << 20, RLIM_INFINITY};
    for (int i = 0; i < 2; i++) {
        big = (struct rlimit){limits[i], was.rlim_max};
        if (was.rlim_max != RLIM_INFINITY && was.rlim_max < limits[i])
            continue;       /* not allowed here */
        assert_int_equal(setrlimit(RLIMIT_STACK, &big), 0);
        assert_int_equal(otd_host_code_describe(&d, &len, err, sizeof err), OTM_OK);
        assert_int_equal(setrlimit(RLIMIT_STACK, &was), 0);
        stack_of(d, &lo2, &hi2);
        free(d);
        assert_int_equal(hi2, hi);
        if (hi > STACK_GUARD_MAX)
            assert_int_equal(hi2 - lo2, STACK_GUARD_MAX);
    }

    fp_fail(FP_FOPEN, 1, EMFILE);
    assert_int_equal(otd_host_code_describe(&d, &len, err, sizeof err), OTM_OK);
    assert_true(fp_fired(FP_FOPEN));
    fp_clear();
    stack_of(d, &lo2, &hi2);
    assert_int_equal(lo2, 0);
    assert_int_equal(hi2, 0);
    /* Placed, such a description guards no stack. */
    otd_host_code_counts c;
    otd_host_code_clear();
    for (size_t at = HEAD, i = 0; at < len; i++) {
        uint64_t base;
        memcpy(&base, d + at, 8);
        base -= shift;
        memcpy(d + at, &base, 8);
        at += RECORD + d[at + 16] + d[at + 17];
    }
    assert_int_equal(otd_host_code_place(d, len, &c, err, sizeof err), OTM_OK);
    assert_int_equal(c.stack_guard, 0);
    assert_true(c.placed > 0);
    free(d);
    otd_host_code_clear();
}

/* No memory to read the description: OTM_ERR_NOMEM, nothing placed. A
 * count of objects with no record after the head: malformed. */
static void test_place_without_memory(void **state)
{
    FP_NEEDED();
    (void)state;
    char err[256] = "";
    size_t len, n;
    otd_host_code_counts c;
    otd_host_code_clear();
    uint8_t *d = shifted(&len, shift);
    fp_fail(FP_CALLOC, 1, ENOMEM);
    assert_int_equal(otd_host_code_place(d, len, &c, err, sizeof err), OTM_ERR_NOMEM);
    assert_true(fp_fired(FP_CALLOC));
    fp_clear();
    assert_non_null(strstr(err, "out of memory"));
    otd_host_code_ranges(&n);
    assert_int_equal(n, 0);
    expect_refused(d, HEAD, "do not fill");
    assert_int_equal(otd_host_code_place(d, len, &c, err, sizeof err), OTM_OK);
    assert_true(c.placed > 0);
    free(d);
    otd_host_code_clear();
}

/* The objects' files cannot be opened: their read-only and code ranges
 * are still taken, without their bytes, so a call through rank 0's
 * address still resumes here, and a constant read there faults instead of
 * reading whatever lies at that address here. */
static void test_place_files_unopenable(void **state)
{
    FP_NEEDED();
    (void)state;
    char err[256];
    size_t len;
    otd_host_code_counts c;
    handlers();
    otd_host_code_clear();
    uint8_t *d = shifted(&len, shift);
    fp_fail_from(FP_OPEN, 1, EACCES);
    assert_int_equal(otd_host_code_place(d, len, &c, err, sizeof err), OTM_OK);
    assert_true(fp_fired(FP_OPEN));
    fp_clear();
    assert_int_equal(c.matched, c.objects);
    assert_true(c.placed > 0);
    int (*fn)(int) = (int (*)(int))down((void *)(uintptr_t)twice);
    assert_int_equal(fn(21), 42);
    void *args[1] = {down(greeting)};
    otd_fault f;
    memset(&f, 0, sizeof f);
    assert_int_equal(otd_kernel_call_guarded((void *)(uintptr_t)read_one, args, 1, &f),
                     OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.signo, SIGSEGV);
    assert_int_equal(f.addr, (uint64_t)(uintptr_t)down(greeting));
    free(d);
    otd_host_code_clear();
}

/* Rank 0's RELRO pages and a page of its stack range in use here: the
 * RELRO range is left alone and counted, the stack is not guarded; the
 * rest is placed. */
static void test_relro_and_stack_taken(void **state)
{
    (void)state;
    char err[256];
    size_t len;
    otd_host_code_counts c;
    int local = 0;
    long page = sysconf(_SC_PAGESIZE);
    otd_host_code_clear();
    uint8_t *d = shifted(&len, shift);
    void *way[2] = {
        (void *)((uintptr_t)down(ops_table) & ~(uintptr_t)(page - 1)),
        (void *)((uintptr_t)down(&local) & ~(uintptr_t)(page - 1)),
    };
    for (int i = 0; i < 2; i++)
        assert_ptr_equal(mmap(way[i], (size_t)page, PROT_READ,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0),
                         way[i]);
    assert_int_equal(otd_host_code_place(d, len, &c, err, sizeof err), OTM_OK);
    assert_true(c.taken >= 1);
    assert_int_equal(c.stack_guard, 0);
    assert_true(c.placed > 0);
    /* The page in the way is still this process's own. */
    assert_int_equal(*(const char *)way[0], 0);
    int (*fn)(int) = (int (*)(int))down((void *)(uintptr_t)twice);
    handlers();
    assert_int_equal(fn(4), 8);
    for (int i = 0; i < 2; i++)
        munmap(way[i], (size_t)page);
    free(d);
    otd_host_code_clear();
}

/* An object without a build-id is known by its name: placed, and its
 * function runs through rank 0's address. */
static void test_object_without_build_id(void **state)
{
    (void)state;
    char err[256];
    size_t len;
    otd_host_code_counts c;
    void *h = dlopen(FIXTURE_NO_BUILD_ID_PATH, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    int (*which)(void) = (int (*)(void))dlsym(h, "fx_which");
    assert_non_null(which);
    handlers();
    otd_host_code_clear();
    uint8_t *d = shifted(&len, shift);
    assert_int_equal(otd_host_code_place(d, len, &c, err, sizeof err), OTM_OK);
    assert_int_equal(c.matched, c.objects);
    int (*there)(void) = (int (*)(void))down((void *)(uintptr_t)which);
    assert_int_equal(there(), 1);
    free(d);
    otd_host_code_clear();
    assert_int_equal(dlclose(h), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_resume_here),
        cmocka_unit_test(test_constants_read_as_here),
        cmocka_unit_test(test_globals_and_stack_fault),
        cmocka_unit_test(test_once),
        cmocka_unit_test(test_unguard),
        cmocka_unit_test(test_bad_descriptions),
        cmocka_unit_test(test_same_addresses),
        cmocka_unit_test(test_taken_range),
        cmocka_unit_test(test_describe_without_memory),
        cmocka_unit_test(test_describe_stack_unknown),
        cmocka_unit_test(test_place_without_memory),
        cmocka_unit_test(test_place_files_unopenable),
        cmocka_unit_test(test_relro_and_stack_taken),
        cmocka_unit_test(test_object_without_build_id),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
