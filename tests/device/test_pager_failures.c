/*
 * test_pager_failures.c - the pager of unified shared memory (otm/pager.h)
 * when the system refuses (failpoints.h): userfaultfd refused every way
 * (the system call, its user-mode-only variant, /dev/userfaultfd), only
 * the system call refused (the device node serves where this process may
 * open it), the handshake refused, no memory for the pager; a range that
 * userfaultfd refuses, no memory to note it, its holder unnamed, a
 * protection that cannot change; waiting for a fault that fails or is
 * interrupted, a message cut short; placing a page when the copy must be
 * tried again or fails, and with no memory for its twin or the table.
 * Each failure is a status (a sentence where the call takes one), leaves
 * nothing behind (no descriptor, no mapping), and the pager works on. Also
 * a piece re-protected in its middle, split in three.
 *
 * A thread touches the reserved range and the test serves its faults, as
 * in test_pager.c. Exits 77 (skipped, never passed) where this system
 * gives no userfaultfd.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "failpoints.h"
#include "otm/pager.h"

#define PAGES 4
#define ROUNDS 200      /* 100-ms waits for a fault: 20 s at most */

static uint64_t psize;
static uint8_t *base;           /* the reserved range */
static uint8_t host[PAGES * 65536];

static int count_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) >= 0;
    return n;
}

/* A free range: mapped by the kernel where it likes, then given back. */
static uint8_t *free_range(size_t len)
{
    void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    munmap(p, len);
    return p;
}

/* Whether [p, p + len) is free: a mapping may be put exactly there. */
static int is_free(void *p, size_t len)
{
    void *q = mmap(p, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (q == MAP_FAILED)
        return 0;
    munmap(q, len);
    return q == p;
}

static otd_pager *open_pager(void)
{
    char err[512] = "";
    otd_pager *pg = NULL;
    assert_int_equal(otd_pager_open(&pg, err, sizeof err), OTM_OK);
    return pg;
}

static otd_range whole(void)
{
    uint64_t b = (uint64_t)(uintptr_t)base;
    return (otd_range){b, b + PAGES * psize};
}

static otd_pager *open_reserved(void)
{
    char err[512] = "";
    otd_pager *pg = open_pager();
    base = free_range(PAGES * psize);
    otd_range r = whole();
    assert_int_equal(otd_pager_reserve(pg, &r, 1, err, sizeof err), OTM_OK);
    return pg;
}

/* ---- a thread that touches the range ------------------------------------ */

typedef struct touch {
    size_t offset;
    uint8_t seen;
    int faulted;            /* SIGSEGV instead of the byte */
    pthread_t thread;
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
    t->seen = ((volatile uint8_t *)base)[t->offset];
    return NULL;
}

static void start_touch(touch *t, size_t offset)
{
    memset(t, 0, sizeof *t);
    t->offset = offset;
    assert_int_equal(pthread_create(&t->thread, NULL, toucher, t), 0);
}

/* The next fault, within ROUNDS waits: its page. */
static uint64_t next_fault(otd_pager *pg)
{
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t page = 0;
        int r = otd_pager_next_fault(pg, 100, &page);
        assert_true(r >= 0);
        if (r == 1)
            return page;
    }
    fail_msg("no fault within %d rounds", ROUNDS);
    return 0;
}

/* Serves the touch's faults with the host's pages until it ends. */
static void finish_touch(otd_pager *pg, touch *t)
{
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t page = 0;
        int r = otd_pager_next_fault(pg, 100, &page);
        assert_true(r >= 0);
        if (r == 0) {
            if (pthread_tryjoin_np(t->thread, NULL) == 0)
                return;
            continue;
        }
        size_t k = (size_t)(page - (uint64_t)(uintptr_t)base) / psize;
        assert_true(k < PAGES);
        assert_int_equal(otd_pager_place(pg, page, host + k * psize), OTM_OK);
    }
    fail_msg("the touching thread did not end within %d rounds", ROUNDS);
}

/* ---- opening ---------------------------------------------------------------- */

static void expect_open_refused(otm_status want, const char *reason)
{
    char err[512] = "";
    otd_pager *pg = (otd_pager *)err;
    int fds = count_fds();
    otm_status st = otd_pager_open(&pg, err, sizeof err);
    fp_clear();
    if (st != want || !strstr(err, reason))
        fail_msg("open: %d, %s (want %d, %s)", (int)st, err, (int)want, reason);
    assert_null(pg);
    assert_int_equal(count_fds(), fds);
}

/* Refused every way: the system call (EPERM), its user-mode-only variant,
 * the device node; the handshake; no memory. Nothing stays open. */
static void test_open_refused(void **state)
{
    FP_NEEDED();
    (void)state;
    fp_fail_from(FP_SYSCALL, 1, EPERM);
    fp_fail(FP_OPEN, 1, EACCES);
    expect_open_refused(OTM_ERR_INVALID, "userfaultfd is not available to this process (");
    fp_fail(FP_IOCTL, 1, EINVAL);
    expect_open_refused(OTM_ERR_INVALID, "userfaultfd refused its handshake (");
    fp_fail(FP_CALLOC, 1, ENOMEM);
    expect_open_refused(OTM_ERR_NOMEM, "out of memory");
    otd_pager_close(open_pager());
}

/* Without the system call (ENOSYS, as under a seccomp filter), the device
 * node serves where this process may open it. */
static void test_open_through_the_device_node(void **state)
{
    FP_NEEDED();
    (void)state;
    char err[512] = "";
    otd_pager *pg = NULL;
    int node = access("/dev/userfaultfd", R_OK | W_OK) == 0;
    fp_fail_from(FP_SYSCALL, 1, ENOSYS);
    otm_status st = otd_pager_open(&pg, err, sizeof err);
    fp_clear();
    if (!node) {
        print_message("/dev/userfaultfd is not open to this process: refused, as it "
                      "should be\n");
        assert_int_equal(st, OTM_ERR_INVALID);
        assert_null(pg);
        return;
    }
    assert_int_equal(st, OTM_OK);
    /* That descriptor serves faults as well. */
    base = free_range(PAGES * psize);
    otd_range r = whole();
    assert_int_equal(otd_pager_reserve(pg, &r, 1, err, sizeof err), OTM_OK);
    host[psize + 3] = 41;
    touch t;
    start_touch(&t, psize + 3);
    finish_touch(pg, &t);
    assert_int_equal(t.seen, 41);
    otd_pager_close(pg);
}

/* ---- reserving ----------------------------------------------------------- */

static void expect_reserve_refused(otd_pager *pg, const otd_range *r, otm_status want,
                                   const char *reason)
{
    char err[512] = "";
    otm_status st = otd_pager_reserve(pg, r, 1, err, sizeof err);
    fp_clear();
    if (st != want || !strstr(err, reason))
        fail_msg("reserve: %d, %s (want %d, %s)", (int)st, err, (int)want, reason);
}

/* userfaultfd refusing the range, no memory to note it: refused, and the
 * range is not left mapped; then it is reserved. A range taken here whose
 * holder cannot be looked up is still refused, naming "something". */
static void test_reserve_refused(void **state)
{
    FP_NEEDED();
    (void)state;
    char err[512] = "";
    otd_pager *pg = open_pager();
    base = free_range(PAGES * psize);
    otd_range r = whole();
    fp_fail(FP_IOCTL, 1, EINVAL);
    expect_reserve_refused(pg, &r, OTM_ERR_INVALID, "userfaultfd refused the range 0x");
    assert_true(is_free(base, PAGES * psize));
    fp_fail(FP_REALLOC, 1, ENOMEM);
    expect_reserve_refused(pg, &r, OTM_ERR_NOMEM, "out of memory");
    assert_true(is_free(base, PAGES * psize));
    assert_int_equal(otd_pager_reserve(pg, &r, 1, err, sizeof err), OTM_OK);
    assert_false(is_free(base, PAGES * psize));

    void *mine = mmap(NULL, psize, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(mine != MAP_FAILED);
    otd_range taken = {(uint64_t)(uintptr_t)mine, (uint64_t)(uintptr_t)mine + psize};
    fp_fail(FP_FOPEN, 1, EMFILE);
    expect_reserve_refused(pg, &taken, OTM_ERR_INVALID, "is taken in this process by something");
    munmap(mine, psize);
    otd_pager_close(pg);
    assert_true(is_free(base, PAGES * psize));
}

/* Part of a piece re-protected: the piece is split around it (three
 * pieces), each keeps its protection; a protection that cannot change is
 * refused, saying which. */
static void test_reprotect(void **state)
{
    FP_NEEDED();
    (void)state;
    char err[512] = "";
    struct sigaction sa = {.sa_handler = on_segv}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old);
    otd_pager *pg = open_pager();
    base = free_range(PAGES * psize);
    uint64_t b = (uint64_t)(uintptr_t)base;
    otd_range ro = {b | OTD_RANGE_READ_ONLY, b + PAGES * psize};
    assert_int_equal(otd_pager_reserve(pg, &ro, 1, err, sizeof err), OTM_OK);
    otd_range middle = {b + psize, b + 2 * psize};
    fp_fail(FP_MPROTECT, 1, ENOMEM);
    expect_reserve_refused(pg, &middle, OTM_ERR_INVALID, "cannot be made writable here (");
    assert_int_equal(otd_pager_reserve(pg, &middle, 1, err, sizeof err), OTM_OK);
    /* Pages 0 and 2 read-only, page 1 writable: placed, then written. */
    for (int k = 0; k < 3; k++) {
        host[(size_t)k * psize] = (uint8_t)(k + 1);
        touch t;
        start_touch(&t, (size_t)k * psize);
        finish_touch(pg, &t);
        assert_int_equal(t.seen, k + 1);
    }
    /* volatile: set after the store that may jump back over it. */
    volatile int wrote[3];
    for (int k = 0; k < 3; k++) {
        sigjmp_buf here;
        jump = &here;
        wrote[k] = 0;
        if (!sigsetjmp(here, 1)) {
            ((volatile uint8_t *)base)[(size_t)k * psize + 1] = 9;
            wrote[k] = 1;
        }
    }
    assert_int_equal(wrote[0], 0);
    assert_int_equal(wrote[1], 1);
    assert_int_equal(wrote[2], 0);
    sigaction(SIGSEGV, &old, NULL);
    otd_pager_close(pg);
}

/* ---- faults and pages ------------------------------------------------------ */

/* Waiting for a fault: a poll interrupted is no fault yet, a poll that
 * fails is the descriptor's failure. A read with nothing there yet or
 * interrupted is no fault yet (the message waits), a read cut short is a
 * failure. The fault still comes, and is served. */
static void test_waiting_fails(void **state)
{
    FP_NEEDED();
    (void)state;
    otd_pager *pg = open_reserved();
    uint64_t page = 0;
    fp_fail(FP_POLL, 1, EINTR);
    assert_int_equal(otd_pager_next_fault(pg, 0, &page), 0);
    fp_fail(FP_POLL, 1, EBADF);
    assert_int_equal(otd_pager_next_fault(pg, 0, &page), -OTM_ERR_INVALID);
    assert_true(fp_fired(FP_POLL));
    fp_clear();

    host[2 * psize] = 17;
    touch t;
    start_touch(&t, 2 * psize);
    static const struct {
        int e;
        int want;
    } reads[] = {{EAGAIN, 0}, {EINTR, 0}, {0, -OTM_ERR_INVALID}, {EIO, -OTM_ERR_INVALID}};
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
        /* The fault is there: poll says so, then the read fails. */
        int r = 0;
        for (int round = 0; round < ROUNDS; round++) {
            fp_fail(FP_READ, 1, reads[i].e);
            r = otd_pager_next_fault(pg, 100, &page);
            if (fp_fired(FP_READ))
                break;
        }
        assert_true(fp_fired(FP_READ));
        fp_clear();
        assert_int_equal(r, reads[i].want);
    }
    finish_touch(pg, &t);
    assert_int_equal(t.seen, 17);
    otd_pager_close(pg);
}

static int twin_refused;

static void *no_twin(size_t size)
{
    (void)size;
    twin_refused++;
    return NULL;
}

/* Placing: a copy the kernel asks to try again is tried again; one that
 * fails refuses the page (the touching thread faults, as for a page the
 * host does not have). No memory for the twin or for the table: nothing
 * placed, nobody woken; placed once there is. */
static void test_place_fails(void **state)
{
    FP_NEEDED();
    (void)state;
    struct sigaction sa = {.sa_handler = on_segv}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old);
    otd_pager *pg = open_reserved();
    touch t;

    host[5] = 33;
    start_touch(&t, 5);
    uint64_t page = next_fault(pg);
    fp_fail(FP_IOCTL, 1, EAGAIN);      /* UFFDIO_COPY */
    assert_int_equal(otd_pager_place(pg, page, host), OTM_OK);
    assert_true(fp_fired(FP_IOCTL));
    finish_touch(pg, &t);
    assert_int_equal(t.faulted, 0);
    assert_int_equal(t.seen, 33);

    start_touch(&t, psize + 5);
    page = next_fault(pg);
    fp_fail(FP_IOCTL, 1, ENOMEM);
    assert_int_equal(otd_pager_place(pg, page, host + psize), OTM_ERR_INVALID);
    fp_clear();
    assert_int_equal(pthread_join(t.thread, NULL), 0);
    assert_int_equal(t.faulted, 1);

    /* A fresh pager: its first page needs the table. */
    otd_pager_close(pg);
    pg = open_reserved();
    host[3 * psize] = 44;
    start_touch(&t, 3 * psize);
    page = next_fault(pg);
    otd_pager_use_alloc(pg, no_twin, free);
    assert_int_equal(otd_pager_place(pg, page, host + 3 * psize), OTM_ERR_NOMEM);
    assert_int_equal(twin_refused, 1);
    otd_pager_use_alloc(pg, malloc, free);
    fp_fail(FP_CALLOC, 1, ENOMEM);
    assert_int_equal(otd_pager_place(pg, page, host + 3 * psize), OTM_ERR_NOMEM);
    assert_true(fp_fired(FP_CALLOC));
    fp_fail(FP_CALLOC, 1, ENOMEM);
    assert_int_equal(otd_pager_refuse(pg, page), OTM_ERR_NOMEM);
    fp_clear();
    uint64_t placed = 9, total = 9;
    otd_pager_counts(pg, &placed, &total);
    assert_int_equal(placed, 0);
    assert_int_equal(total, 0);
    assert_int_equal(otd_pager_place(pg, page, host + 3 * psize), OTM_OK);
    assert_int_equal(pthread_join(t.thread, NULL), 0);
    assert_int_equal(t.faulted, 0);
    assert_int_equal(t.seen, 44);
    sigaction(SIGSEGV, &old, NULL);
    otd_pager_close(pg);
}

/* A run whose one copy fails is placed page by page, its first page
 * last; the table that cannot grow for a run places nothing. */
static void test_place_run_fails(void **state)
{
    FP_NEEDED();
    (void)state;
    otd_pager *pg = open_reserved();
    touch t;
    host[psize + 5] = 55;
    start_touch(&t, psize + 5);
    uint64_t page = next_fault(pg), placed = 0, total = 0;
    fp_fail(FP_CALLOC, 1, ENOMEM);      /* the table's first slots */
    assert_int_equal(otd_pager_place_run(pg, page, 2, host + psize), OTM_ERR_NOMEM);
    fp_fail(FP_IOCTL, 1, ENOMEM);       /* the run's UFFDIO_COPY */
    assert_int_equal(otd_pager_place_run(pg, page, 2, host + psize), OTM_OK);
    assert_true(fp_fired(FP_IOCTL));
    fp_clear();
    finish_touch(pg, &t);
    assert_int_equal(t.faulted, 0);
    assert_int_equal(t.seen, 55);
    otd_pager_counts(pg, &placed, &total);
    assert_int_equal(placed, 2);
    otd_pager_close(pg);
}

int main(void)
{
    char err[512] = "";
    otd_pager *probe = NULL;
    psize = otd_pager_page_size();
    if (psize > 65536 || otd_pager_open(&probe, err, sizeof err)) {
        printf("skipped: %s\n", err);
        return 77;
    }
    otd_pager_close(probe);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_refused),
        cmocka_unit_test(test_open_through_the_device_node),
        cmocka_unit_test(test_reserve_refused),
        cmocka_unit_test(test_reprotect),
        cmocka_unit_test(test_waiting_fails),
        cmocka_unit_test(test_place_fails),
        cmocka_unit_test(test_place_run_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
