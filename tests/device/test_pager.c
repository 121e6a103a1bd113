/*
 * test_pager.c - the pager of unified shared memory (otm/pager.h) in one
 * process: a range reserved, pages placed on a thread's touch, the bytes
 * it changed found exactly, pages dropped and asked again, a refused page
 * faulting, runs placed at once, a taken range named, what a touch
 * reaches, the wake; and the host's end (read, write, ranges) on
 * addresses good and bad.
 *
 * The "host" is a buffer of this process: the page at offset k of the
 * reserved range gets the bytes at offset k of the buffer. Exits 77
 * (skipped, never passed) where this system gives no userfaultfd.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "otm/pager.h"

#define PAGES 4
#define ROUNDS 200      /* 100-ms waits for a fault: 20 s at most */

static uint64_t psize;
static uint8_t *base;           /* the reserved range */
static uint8_t *host;           /* what the "host" holds there */

/* A free range: mapped by the kernel where it likes, then given back. */
static uint8_t *free_range(size_t len)
{
    void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    munmap(p, len);
    return p;
}

static otd_pager *open_reserved(void)
{
    char err[512] = "";
    otd_pager *pg = NULL;
    assert_int_equal(otd_pager_open(&pg, err, sizeof err), OTM_OK);
    base = free_range(PAGES * psize);
    otd_range r = {(uint64_t)(uintptr_t)base, (uint64_t)(uintptr_t)base + PAGES * psize};
    assert_int_equal(otd_pager_reserve(pg, &r, 1, err, sizeof err), OTM_OK);
    /* Again, and with a neighbour page: only the gap is new. */
    assert_int_equal(otd_pager_reserve(pg, &r, 1, err, sizeof err), OTM_OK);
    return pg;
}

/* ---- a thread that touches the range ---------------------------------- */

typedef struct touch {
    size_t offset;
    int write;              /* 0: read a byte; 1: write `value` */
    uint8_t value, seen;
    int faulted;            /* SIGSEGV instead of the byte */
} touch;

static __thread sigjmp_buf *jump;

static void on_segv(int sig)
{
    (void)sig;
    siglongjmp(*jump, 1);
}

static void *toucher(void *arg)
{
    touch *t = arg;
    sigjmp_buf here;
    jump = &here;
    if (sigsetjmp(here, 1)) {
        t->faulted = 1;
        return NULL;
    }
    if (t->write)
        base[t->offset] = t->value;
    else
        t->seen = ((volatile uint8_t *)base)[t->offset];
    return NULL;
}

/* Runs the touch on a thread and serves its faults: place the host's
 * page, or refuse pages in `refuse_page` (a page index, -1 none). */
static void serve_touch(otd_pager *pg, touch *t, int refuse_page)
{
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, toucher, t), 0);
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t page = 0;
        int r = otd_pager_next_fault(pg, 100, &page);
        assert_true(r >= 0);
        if (r == 0) {
            if (pthread_tryjoin_np(th, NULL) == 0)
                return;
            continue;
        }
        size_t k = (size_t)(page - (uint64_t)(uintptr_t)base) / psize;
        assert_true(k < PAGES);
        if ((int)k == refuse_page)
            assert_int_equal(otd_pager_refuse(pg, page), OTM_OK);
        else
            assert_int_equal(otd_pager_place(pg, page, host + k * psize), OTM_OK);
    }
    fail_msg("the touching thread did not end within %d rounds", ROUNDS);
}

/* ---- what a flush emits -------------------------------------------------- */

typedef struct run {
    uint64_t addr, len;
    uint8_t first;
} run;

typedef struct runs {
    run r[16];
    int n;
} runs;

static int collect(void *ctx, uint64_t addr, const void *bytes, uint64_t len)
{
    runs *rs = ctx;
    if (rs->n == 16)
        return 1;
    rs->r[rs->n++] = (run){addr, len, *(const uint8_t *)bytes};
    return 0;
}

static void test_pages_on_demand(void **state)
{
    (void)state;
    otd_pager *pg = open_reserved();
    for (size_t i = 0; i < PAGES * psize; i++)
        host[i] = (uint8_t)(i / psize + 1);

    touch rd = {.offset = 2 * psize + 5};
    serve_touch(pg, &rd, -1);
    assert_int_equal(rd.faulted, 0);
    assert_int_equal(rd.seen, 3);

    /* Writes: bytes 10 and 12 of page 0, byte 11 unchanged between them. */
    touch w1 = {.offset = 10, .write = 1, .value = 0xaa};
    touch w2 = {.offset = 12, .write = 1, .value = 0xbb};
    serve_touch(pg, &w1, -1);
    serve_touch(pg, &w2, -1);
    uint64_t placed = 0, total = 0;
    otd_pager_counts(pg, &placed, &total);
    assert_int_equal(placed, 2);
    assert_int_equal(total, 2);

    runs rs = {0};
    assert_int_equal(otd_pager_flush(pg, 0, collect, &rs), 0);
    assert_int_equal(rs.n, 2);
    assert_int_equal(rs.r[0].addr, (uint64_t)(uintptr_t)base + 10);
    assert_int_equal(rs.r[0].len, 1);
    assert_int_equal(rs.r[0].first, 0xaa);
    assert_int_equal(rs.r[1].addr, (uint64_t)(uintptr_t)base + 12);
    assert_int_equal(rs.r[1].first, 0xbb);

    /* Flushed once: nothing new. Then dropped: the next touch asks again
     * and sees what the host holds now. */
    rs.n = 0;
    assert_int_equal(otd_pager_flush(pg, 1, collect, &rs), 0);
    assert_int_equal(rs.n, 0);
    otd_pager_counts(pg, &placed, &total);
    assert_int_equal(placed, 0);
    host[10] = 0x55;
    touch again = {.offset = 10};
    serve_touch(pg, &again, -1);
    assert_int_equal(again.seen, 0x55);
    otd_pager_counts(pg, &placed, &total);
    assert_int_equal(total, 3);

    /* The run a fault may ask for: the placed page none, the pages after
     * it up to the end of the reservation. */
    uint64_t at = (uint64_t)(uintptr_t)base;
    assert_int_equal(otd_pager_absent_run(pg, at, 16), 0);
    assert_int_equal(otd_pager_absent_run(pg, at + psize, 16), PAGES - 1);
    assert_int_equal(otd_pager_absent_run(pg, at + psize, 2), 2);
    assert_int_equal(otd_pager_absent_run(pg, at + 1, 16), 0);
    /* Placed again, or refused once placed: nothing changes. */
    assert_int_equal(otd_pager_place(pg, at, host), OTM_OK);
    assert_int_equal(otd_pager_refuse(pg, at), OTM_OK);
    assert_int_equal(((volatile uint8_t *)base)[10], 0x55);
    /* A flush that its emitter stops returns the emitter's answer. */
    base[20] = 0xf0;
    base[30] = 0xf1;
    runs one = {.n = 15};
    assert_int_equal(otd_pager_flush(pg, 0, collect, &one), 1);
    otd_pager_close(pg);
}

static void *no_memory(size_t n)
{
    (void)n;
    return NULL;
}

/* A run placed at once: the faulting thread goes on with every page of it
 * placed; a run with a page placed already is placed one by one; memory
 * short for the twins places nothing. */
static void test_place_run(void **state)
{
    (void)state;
    otd_pager *pg = open_reserved();
    for (size_t i = 0; i < PAGES * psize; i++)
        host[i] = (uint8_t)(i / psize + 1);
    uint64_t at = (uint64_t)(uintptr_t)base, page = 0, placed = 0, total = 0;
    assert_int_equal(otd_pager_place_run(pg, at, 0, host), OTM_ERR_INVALID);
    assert_int_equal(otd_pager_place_run(pg, at, OTD_PAGER_RUN_MAX + 1, host),
                     OTM_ERR_INVALID);
    otd_pager_use_alloc(pg, no_memory, free);
    assert_int_equal(otd_pager_place_run(pg, at + 2 * psize, 2, host + 2 * psize),
                     OTM_ERR_NOMEM);
    otd_pager_use_alloc(pg, malloc, free);
    otd_pager_counts(pg, &placed, &total);
    assert_int_equal(placed, 0);

    touch t = {.offset = 2 * psize + 7};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, toucher, &t), 0);
    int r = 0;
    for (int round = 0; round < ROUNDS && r != 1; round++)
        r = otd_pager_next_fault(pg, 100, &page);
    assert_int_equal(r, 1);
    assert_int_equal(page, at + 2 * psize);
    assert_int_equal(otd_pager_place_run(pg, page, 2, host + 2 * psize), OTM_OK);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(t.seen, 3);
    otd_pager_counts(pg, &placed, &total);
    assert_int_equal(placed, 2);
    assert_int_equal(((volatile uint8_t *)base)[3 * psize + 1], 4);   /* no fault */

    /* Pages 1 to 3, two of them placed: page 1 is placed alone. */
    assert_int_equal(otd_pager_place_run(pg, at + psize, 3, host + psize), OTM_OK);
    otd_pager_counts(pg, &placed, &total);
    assert_int_equal(placed, 3);
    assert_int_equal(total, 3);
    assert_int_equal(((volatile uint8_t *)base)[psize], 2);
    otd_pager_close(pg);
}

static void test_refused_page_faults(void **state)
{
    (void)state;
    struct sigaction sa = {.sa_handler = on_segv}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old);
    otd_pager *pg = open_reserved();
    touch t = {.offset = psize + 1};
    serve_touch(pg, &t, 1);
    assert_int_equal(t.faulted, 1);
    /* Dropped, the page is asked for again and placed. */
    runs rs = {0};
    assert_int_equal(otd_pager_flush(pg, 1, collect, &rs), 0);
    host[psize + 1] = 9;
    touch t2 = {.offset = psize + 1};
    serve_touch(pg, &t2, -1);
    assert_int_equal(t2.faulted, 0);
    assert_int_equal(t2.seen, 9);
    sigaction(SIGSEGV, &old, NULL);
    otd_pager_close(pg);
}

/* A range the host keeps read-only: reserved so, its placed pages read
 * but never written (the store faults, as on the host); made writable and
 * read-only again as the host's protection changes between regions. */
static void test_read_only_range(void **state)
{
    (void)state;
    char err[512] = "";
    struct sigaction sa = {.sa_handler = on_segv}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old);
    otd_pager *pg = NULL;
    assert_int_equal(otd_pager_open(&pg, err, sizeof err), OTM_OK);
    base = free_range(PAGES * psize);
    uint64_t b = (uint64_t)(uintptr_t)base;
    otd_range ro = {b | OTD_RANGE_READ_ONLY, b + PAGES * psize};
    assert_int_equal(otd_pager_reserve(pg, &ro, 1, err, sizeof err), OTM_OK);
    host[1] = 5;
    touch rd = {.offset = 1};
    serve_touch(pg, &rd, -1);
    assert_int_equal(rd.faulted, 0);
    assert_int_equal(rd.seen, 5);
    touch wr = {.offset = 2, .write = 1, .value = 7};
    serve_touch(pg, &wr, -1);
    assert_int_equal(wr.faulted, 1);
    /* The host made its first two pages writable: so are they here. */
    otd_range rw = {b, b + 2 * psize};
    assert_int_equal(otd_pager_reserve(pg, &rw, 1, err, sizeof err), OTM_OK);
    touch wr2 = {.offset = 2, .write = 1, .value = 7};
    serve_touch(pg, &wr2, -1);
    assert_int_equal(wr2.faulted, 0);
    assert_int_equal(base[2], 7);
    touch wr3 = {.offset = 2 * psize, .write = 1, .value = 8};
    serve_touch(pg, &wr3, -1);
    assert_int_equal(wr3.faulted, 1);      /* the third page is still read-only */
    /* And read-only again: the placed page keeps its bytes, refuses stores. */
    otd_range ro2 = {b | OTD_RANGE_READ_ONLY, b + psize};
    assert_int_equal(otd_pager_reserve(pg, &ro2, 1, err, sizeof err), OTM_OK);
    touch wr4 = {.offset = 3, .write = 1, .value = 9};
    serve_touch(pg, &wr4, -1);
    assert_int_equal(wr4.faulted, 1);
    assert_int_equal(base[2], 7);
    sigaction(SIGSEGV, &old, NULL);
    otd_pager_close(pg);
}

/* otd_pager_reaches follows the reservations and their protection;
 * otd_pager_wake makes the next wait return 2, once, even with no fault. */
static void test_reaches_and_wake(void **state)
{
    (void)state;
    char err[512] = "";
    otd_pager *pg = NULL;
    assert_int_equal(otd_pager_open(&pg, err, sizeof err), OTM_OK);
    base = free_range(PAGES * psize);
    uint64_t b = (uint64_t)(uintptr_t)base, page = 0;
    assert_false(otd_pager_reaches(pg, b, 0));
    otd_range ro = {b | OTD_RANGE_READ_ONLY, b + 2 * psize};
    assert_int_equal(otd_pager_reserve(pg, &ro, 1, err, sizeof err), OTM_OK);
    assert_true(otd_pager_reaches(pg, b + psize + 5, 0));
    assert_false(otd_pager_reaches(pg, b + psize + 5, 1));
    assert_false(otd_pager_reaches(pg, b + 2 * psize, 0));
    otd_range rw = {b + psize, b + 3 * psize};
    assert_int_equal(otd_pager_reserve(pg, &rw, 1, err, sizeof err), OTM_OK);
    assert_false(otd_pager_reaches(pg, b, 1));
    assert_true(otd_pager_reaches(pg, b + psize, 1));
    assert_true(otd_pager_reaches(pg, b + 3 * psize - 1, 1));
    assert_false(otd_pager_reaches(pg, b + 3 * psize, 0));
    assert_int_equal(otd_pager_next_fault(pg, 0, &page), 0);
    otd_pager_wake(pg);
    otd_pager_wake(pg);
    assert_int_equal(otd_pager_next_fault(pg, 1000, &page), 2);
    assert_int_equal(otd_pager_next_fault(pg, 0, &page), 0);
    otd_pager_close(pg);
}

static void test_bad_ranges(void **state)
{
    (void)state;
    char err[512] = "";
    otd_pager *pg = NULL;
    assert_int_equal(otd_pager_open(&pg, err, sizeof err), OTM_OK);
    /* This process's own heap: taken, and the message names it. */
    uint8_t *mine = malloc(4 * psize);
    assert_non_null(mine);
    uint64_t at = ((uint64_t)(uintptr_t)mine + psize) & ~(psize - 1);
    otd_range r = {at, at + psize};
    assert_int_equal(otd_pager_reserve(pg, &r, 1, err, sizeof err), OTM_ERR_INVALID);
    assert_non_null(strstr(err, "is taken in this process by 0x"));
    /* Not whole pages, empty, or NULL. */
    otd_range odd = {at + 2, at + psize};
    assert_int_equal(otd_pager_reserve(pg, &odd, 1, err, sizeof err), OTM_ERR_INVALID);
    assert_non_null(strstr(err, "not whole pages"));
    otd_range odd_ro = {at + 3, at + psize};   /* read-only, and not whole pages */
    assert_int_equal(otd_pager_reserve(pg, &odd_ro, 1, err, sizeof err), OTM_ERR_INVALID);
    assert_non_null(strstr(err, "not whole pages"));
    /* Above every process's reach: the system refuses it, said so. */
    otd_range high = {0x800000000000ull, 0x800000000000ull + psize};
    assert_int_equal(otd_pager_reserve(pg, &high, 1, err, sizeof err), OTM_ERR_INVALID);
    assert_non_null(strstr(err, "is taken in this process by the system ("));
    otd_range empty = {at, at};
    assert_int_equal(otd_pager_reserve(pg, &empty, 1, err, sizeof err), OTM_ERR_INVALID);
    assert_int_equal(otd_pager_reserve(pg, NULL, 1, err, sizeof err), OTM_ERR_INVALID);
    /* A page outside every reservation is neither placed nor refused. */
    assert_int_equal(otd_pager_place(pg, at, host), OTM_ERR_INVALID);
    assert_int_equal(otd_pager_refuse(pg, at), OTM_ERR_INVALID);
    assert_int_equal(otd_pager_place(pg, at + 1, host), OTM_ERR_INVALID);
    assert_int_equal(otd_pager_open(NULL, err, sizeof err), OTM_ERR_INVALID);
    free(mine);
    otd_pager_close(pg);
    otd_pager_close(NULL);
}

/* In a child: `how` 0 runs out of descriptors (the open must fail and say
 * why), 1 drops root for nobody (the open must still succeed, with the
 * user-mode-only descriptor Linux 5.11 and later give anyone). Returns
 * the child's status: 0 as expected, 1 not, 77 when it cannot drop root. */
static int open_in_child(int how)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[512] = "";
        otd_pager *pg = NULL;
        if (how == 0) {
            struct rlimit none = {0, 0};
            setrlimit(RLIMIT_NOFILE, &none);
            _exit(otd_pager_open(&pg, err, sizeof err) == OTM_ERR_INVALID &&
                          strstr(err, "userfaultfd is not available to this process (")
                      ? 0 : 1);
        }
        if (getuid() != 0 || setgid(65534) || setuid(65534))
            _exit(77);
        otm_status st = otd_pager_open(&pg, err, sizeof err);
        otd_pager_close(pg);
        _exit(st == OTM_OK ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_open_elsewhere(void **state)
{
    (void)state;
    assert_int_equal(open_in_child(0), 0);
    int unprivileged = open_in_child(1);
    if (unprivileged == 77)
        printf("not root: the unprivileged open was not tried\n");
    else
        assert_int_equal(unprivileged, 0);
}

static void test_host_end(void **state)
{
    (void)state;
    static const char text[] = "read-only";
    uint8_t buf[64];
    int on_stack = 42;
    uint64_t heap = (uint64_t)(uintptr_t)host;
    assert_int_equal(otd_host_read(heap + 3, buf, 8), OTM_OK);
    assert_memory_equal(buf, host + 3, 8);
    memset(buf, 0x77, sizeof buf);
    assert_int_equal(otd_host_write(heap + 100, buf, sizeof buf), OTM_OK);
    assert_int_equal(host[100], 0x77);
    assert_int_equal(otd_host_read(16, buf, 8), OTM_ERR_BAD_POINTER);
    assert_int_equal(otd_host_write(16, buf, 8), OTM_ERR_BAD_POINTER);
    /* Code is readable, never writable. */
    uint64_t code = (uint64_t)(uintptr_t)&test_host_end;
    assert_int_equal(otd_host_read(code, buf, 8), OTM_OK);
    assert_int_equal(otd_host_write(code, buf, 8), OTM_ERR_BAD_POINTER);

    otd_range r[4096];
    size_t n = 0;
    assert_int_equal(otd_host_ranges(r, 4096, &n), OTM_OK);
    assert_true(n > 0);
    uint64_t want[] = {heap, (uint64_t)(uintptr_t)&on_stack, code,
                       (uint64_t)(uintptr_t)text};
    /* Each one's writability: heap and stack writable, code and constants
     * read-only. */
    int want_ro[] = {0, 0, 1, 1};
    for (size_t w = 0; w < sizeof want / sizeof *want; w++) {
        int in = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t start = r[i].start & ~(uint64_t)OTD_RANGE_READ_ONLY;
            int ro = (r[i].start & OTD_RANGE_READ_ONLY) != 0;
            assert_true(start < r[i].end);
            if (i) {    /* sorted; neighbours joined unless writability differs */
                uint64_t prev_end = r[i - 1].end;
                int prev_ro = (r[i - 1].start & OTD_RANGE_READ_ONLY) != 0;
                assert_true(prev_end < start || (prev_end == start && prev_ro != ro));
            }
            if (start <= want[w] && want[w] < r[i].end) {
                in = 1;
                assert_int_equal(ro, want_ro[w]);
            }
        }
        assert_true(in);
    }
    size_t n2 = 0;
    otm_status st = otd_host_ranges(r, 1, &n2);
    assert_int_equal(n2, n);
    assert_int_equal(st, OTM_ERR_BAD_SIZE);
}

int main(void)
{
    char err[512] = "";
    otd_pager *probe = NULL;
    psize = otd_pager_page_size();
    if (otd_pager_open(&probe, err, sizeof err)) {
        printf("skipped: %s\n", err);
        return 77;
    }
    otd_pager_close(probe);
    host = aligned_alloc(psize, PAGES * psize);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_on_demand),
        cmocka_unit_test(test_place_run),
        cmocka_unit_test(test_refused_page_faults),
        cmocka_unit_test(test_read_only_range),
        cmocka_unit_test(test_reaches_and_wake),
        cmocka_unit_test(test_bad_ranges),
        cmocka_unit_test(test_host_end),
        cmocka_unit_test(test_open_elsewhere),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    free(host);
    return r;
}
