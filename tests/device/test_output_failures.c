/*
 * test_output_failures.c - capturing stdout and stderr (otm/output.h) when
 * the system refuses: each call otd_output_start makes failing in turn
 * (calloc, fcntl, memfd_create, pthread_mutex_init, dup2; failpoints.h),
 * with errors of memory or descriptors and others; the memfd's size or
 * bytes unreadable while taking; the saved descriptors unwritable while
 * stopping. Every refusal is a status with a sentence and undoes
 * everything: the same descriptors open, 1 and 2 on the same files with
 * the same close-on-exec flag, and the next capture works.
 *
 * Every capture runs in a forked child, as in test_output.c: a capture in
 * this process would swallow cmocka's report.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "failpoints.h"
#include "otm/output.h"

/* The test's own stderr, for the children's reports. */
static int diag_fd = -1;

static void child_fail(int line, const char *what)
{
    dprintf(diag_fd, "test_output_failures.c:%d: check failed: %s\n", line, what);
    _exit(1);
}

#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c))                                                             \
            child_fail(__LINE__, #c);                                         \
    } while (0)

#ifdef OTM_COVERAGE
void __gcov_dump(void);
#define CHILD_DONE() __gcov_dump()
#else
#define CHILD_DONE() ((void)0)
#endif

static void in_child(void (*fn)(void))
{
    pid_t pid;
    int status = 0;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fn();
        fp_clear();
        CHILD_DONE();
        _exit(0);
    }
    while (waitpid(pid, &status, 0) < 0)
        assert_int_equal(errno, EINTR);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static int count_fds(void)
{
    int n = 0;

    for (int fd = 0; fd < 1024; fd++)
        n += fcntl(fd, F_GETFD) >= 0;
    return n;
}

static int same_file(int a, int b)
{
    struct stat sa, sb;

    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void write_str(int fd, const char *s)
{
    CHECK(write(fd, s, strlen(s)) == (ssize_t)strlen(s));
}

static otd_output *start(void)
{
    char err[256];
    otd_output *o = NULL;
    otm_status st = otd_output_start(&o, err, sizeof(err));

    if (st != OTM_OK)
        dprintf(diag_fd, "otd_output_start: %s\n", err);
    CHECK(st == OTM_OK && o != NULL);
    return o;
}

/* A file in place of descriptor `fd` (1 or 2), to read what reaches it. */
static int file_on(int fd)
{
    char path[] = "/tmp/otm_output_failures_XXXXXX";
    int f = mkstemp(path);

    CHECK(f >= 0);
    unlink(path);
    CHECK(dup2(f, fd) == fd);
    return f;
}

/* What file f (on a descriptor) holds from its start. */
static const char *contents(int f)
{
    static char buf[256];
    ssize_t n = pread(f, buf, sizeof(buf) - 1, 0);

    CHECK(n >= 0);
    buf[n] = '\0';
    return buf;
}

/* ------------------------------------------------------------------------ */
/* Starting                                                                  */

/* Whether errno e means out of memory or descriptors (OTM_ERR_NOMEM). */
static int nomem_errno(int e)
{
    return e == ENOMEM || e == EMFILE || e == ENFILE || e == ENOSPC;
}

/* Fails the 1st, 2nd... call of fn in otd_output_start until a start
 * makes fewer calls than the failure's number (and succeeds); returns how
 * many starts failed. Each failure: the status errno e calls for (a
 * descriptor found not open is OTM_ERR_INVALID whatever e), a sentence,
 * the same descriptors open, 1 and 2 on their files with their flags. */
static unsigned sweep_start(fp_fn fn, int e)
{
    int out = fcntl(1, F_DUPFD_CLOEXEC, 3), errfd = fcntl(2, F_DUPFD_CLOEXEC, 3);
    int fds = count_fds();
    int flags1 = fcntl(1, F_GETFD), flags2 = fcntl(2, F_GETFD);
    int stdin_open = fcntl(0, F_GETFD) >= 0;
    unsigned failures = 0;

    CHECK(out >= 0 && errfd >= 0);
    for (unsigned long n = 1; n < 64; n++) {
        char err[256] = "";
        otd_output *o = (otd_output *)&err;

        fp_fail(fn, n, e);
        otm_status st = otd_output_start(&o, err, sizeof(err));
        int fired = fp_fired(fn);
        fp_clear();
        if (!fired) {
            CHECK(st == OTM_OK && o != NULL);
            otd_output_stop(o);
            break;
        }
        failures++;
        CHECK(st != OTM_OK);
        CHECK(o == NULL);
        CHECK(err[0] != '\0');
        if (fn == FP_CALLOC || fn == FP_PTHREAD_MUTEX_INIT || strstr(err, "not open") == NULL)
            CHECK(st == (fn == FP_CALLOC || fn == FP_PTHREAD_MUTEX_INIT || nomem_errno(e)
                             ? OTM_ERR_NOMEM
                             : OTM_ERR_INVALID));
        else
            CHECK(st == OTM_ERR_INVALID);
        CHECK(count_fds() == fds);
        CHECK(same_file(1, out) && same_file(2, errfd));
        CHECK(fcntl(1, F_GETFD) == flags1 && fcntl(2, F_GETFD) == flags2);
        CHECK((fcntl(0, F_GETFD) >= 0) == stdin_open);
    }
    /* Nothing was left held: a capture starts and captures. */
    otd_output *o = start();
    uint8_t buf[8];
    uint64_t n_out = 0;
    write_str(1, "after");
    otd_output_pending(o, &n_out, NULL);
    CHECK(n_out == 5);
    CHECK(otd_output_take(o, buf, 5, 0) == OTM_OK && memcmp(buf, "after", 5) == 0);
    otd_output_stop(o);
    CHECK(same_file(1, out) && same_file(2, errfd));
    close(out);
    close(errfd);
    return failures;
}

/* calloc once, fcntl 8 times (descriptors 1 and 2 checked, then for each
 * stream: saved, its memfd's flags read and set), memfd_create twice,
 * pthread_mutex_init once, dup2 twice (1, then 2: 1 is put back). */
static void child_each_call_fails(void)
{
    /* stdin open, so that no memfd lands on 0 (see below). */
    if (fcntl(0, F_GETFD) < 0)
        CHECK(open("/dev/null", O_RDONLY) == 0);
    CHECK(sweep_start(FP_CALLOC, ENOMEM) == 1);
    CHECK(sweep_start(FP_PTHREAD_MUTEX_INIT, EAGAIN) == 1);
    static const int errs[] = {ENOMEM, EMFILE, ENFILE, ENOSPC, EBADF, EINVAL};
    for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
        CHECK(sweep_start(FP_FCNTL, errs[i]) == 8);
        CHECK(sweep_start(FP_MEMFD_CREATE, errs[i]) == 2);
        CHECK(sweep_start(FP_DUP2, errs[i]) == 2);
    }
}

static void test_each_call_fails(void **state)
{
    FP_NEEDED();
    in_child(child_each_call_fails);
}

/* Descriptor 1 close-on-exec: when 2 cannot be switched, 1 is put back
 * with its flag. */
static void child_put_back_keeps_cloexec(void)
{
    int p[2];

    CHECK(pipe2(p, O_CLOEXEC) == 0);
    CHECK(dup3(p[1], 1, O_CLOEXEC) == 1);
    CHECK(sweep_start(FP_DUP2, EMFILE) == 2);
    CHECK(fcntl(1, F_GETFD) == FD_CLOEXEC);
    CHECK(same_file(1, p[0]));
}

static void test_put_back_keeps_cloexec(void **state)
{
    FP_NEEDED();
    in_child(child_put_back_keeps_cloexec);
}

/* With stdin closed, each memfd first lands on 0 and is moved up
 * (F_DUPFD_CLOEXEC): two more fcntl calls, whose failure closes the memfd
 * and leaves 0 closed. */
static void child_low_memfd_cannot_move(void)
{
    close(0);
    CHECK(sweep_start(FP_FCNTL, EMFILE) == 10);
    CHECK(sweep_start(FP_FCNTL, EINVAL) == 10);
    CHECK(fcntl(0, F_GETFD) == -1 && errno == EBADF);
}

static void test_low_memfd_cannot_move(void **state)
{
    FP_NEEDED();
    in_child(child_low_memfd_cannot_move);
}

/* ------------------------------------------------------------------------ */
/* Counting and taking                                                       */

/* A read interrupted by a signal is tried again; a read that fails, or
 * finds the memfd shorter than its size said, takes nothing from either
 * stream, and a later take gets the same bytes. */
static void child_take_read_fails(void)
{
    otd_output *o = start();
    uint8_t buf[16];
    uint64_t n_out = 0, n_err = 0;

    write_str(1, "out1");
    write_str(2, "err");
    fp_fail(FP_PREAD, 1, EINTR);
    CHECK(otd_output_take(o, buf, 2, 1) == OTM_OK);
    CHECK(fp_fired(FP_PREAD) && fp_calls(FP_PREAD) == 3);
    CHECK(memcmp(buf, "oue", 3) == 0);
    /* stdout's read fails; then stderr's; then a read comes back empty. */
    static const struct { unsigned long n; int e; } fails[] = {
        {1, EIO}, {2, EIO}, {1, 0}, {2, 0}};
    for (size_t i = 0; i < sizeof(fails) / sizeof(fails[0]); i++) {
        fp_fail(FP_PREAD, fails[i].n, fails[i].e);
        CHECK(otd_output_take(o, buf, 2, 2) == OTM_ERR_INVALID);
        CHECK(fp_fired(FP_PREAD));
        fp_clear();
        otd_output_pending(o, &n_out, &n_err);
        CHECK(n_out == 2 && n_err == 2);
    }
    CHECK(otd_output_take(o, buf, 2, 2) == OTM_OK);
    CHECK(memcmp(buf, "t1rr", 4) == 0);
    otd_output_stop(o);
}

static void test_take_read_fails(void **state)
{
    FP_NEEDED();
    in_child(child_take_read_fails);
}

/* A memfd whose size cannot be read counts nothing, so nothing can be
 * taken; one truncated below what was taken counts nothing either. */
static void child_size_unreadable(void)
{
    otd_output *o = start();
    uint8_t buf[16];
    uint64_t n_out = 9, n_err = 9;

    write_str(1, "abcdef");
    write_str(2, "gh");
    fp_fail_from(FP_LSEEK, 1, EBADF);
    otd_output_pending(o, &n_out, &n_err);
    CHECK(n_out == 0 && n_err == 0);
    CHECK(otd_output_take(o, buf, 1, 0) == OTM_ERR_INVALID);
    fp_clear();
    otd_output_pending(o, &n_out, &n_err);
    CHECK(n_out == 6 && n_err == 2);
    CHECK(otd_output_take(o, buf, 4, 0) == OTM_OK);
    CHECK(memcmp(buf, "abcd", 4) == 0);
    /* Something truncates stdout's memfd below the 4 bytes taken. */
    CHECK(ftruncate(1, 2) == 0);
    otd_output_pending(o, &n_out, &n_err);
    CHECK(n_out == 0 && n_err == 2);
    CHECK(otd_output_take(o, buf, 1, 0) == OTM_ERR_INVALID);
    CHECK(otd_output_take(o, buf, 0, 2) == OTM_OK);
    CHECK(memcmp(buf, "gh", 2) == 0);
    otd_output_stop(o);
}

static void test_size_unreadable(void **state)
{
    FP_NEEDED();
    in_child(child_size_unreadable);
}

/* ------------------------------------------------------------------------ */
/* Stopping                                                                  */

/* Runs a capture whose stdout and stderr receive `out` and `err`, fails
 * calls of fn from its n-th with errno e (e 0: they return 0) at stop,
 * and checks what reached the original descriptors. */
static void stop_with(fp_fn fn, unsigned long n, int e, int every, const char *want_out,
                      const char *want_err)
{
    int keep1 = fcntl(1, F_DUPFD_CLOEXEC, 3), keep2 = fcntl(2, F_DUPFD_CLOEXEC, 3);
    int f1 = file_on(1), f2 = file_on(2);
    int fds = count_fds();
    otd_output *o = start();

    write_str(1, "to stdout");
    write_str(2, "to stderr");
    if (every)
        fp_fail_from(fn, n, e);
    else
        fp_fail(fn, n, e);
    otd_output_stop(o);
    CHECK(fp_fired(fn));
    fp_clear();
    CHECK(count_fds() == fds);
    CHECK(same_file(1, f1) && same_file(2, f2));
    CHECK(strcmp(contents(f1), want_out) == 0);
    CHECK(strcmp(contents(f2), want_err) == 0);
    CHECK(dup2(keep1, 1) == 1 && dup2(keep2, 2) == 2);
    close(f1);
    close(f2);
    close(keep1);
    close(keep2);
}

/* An interrupted write is tried again; a write that fails, or writes
 * nothing, drops the rest of its stream, as does a read of the memfd that
 * fails; the other stream is delivered whole. */
static void child_stop_cannot_deliver(void)
{
    stop_with(FP_WRITE, 1, EINTR, 0, "to stdout", "to stderr");
    stop_with(FP_WRITE, 1, EIO, 0, "", "to stderr");
    stop_with(FP_WRITE, 2, EIO, 0, "to stdout", "");
    stop_with(FP_WRITE, 1, 0, 0, "", "to stderr");
    stop_with(FP_WRITE, 1, EPIPE, 1, "", "");
    stop_with(FP_PREAD, 1, EIO, 0, "", "to stderr");
    stop_with(FP_PREAD, 2, EINTR, 0, "to stdout", "to stderr");
    stop_with(FP_PREAD, 1, 0, 1, "", "");
    /* Still whole when nothing fails. */
    int f1 = file_on(1);
    otd_output *o = start();
    write_str(1, "whole");
    otd_output_stop(o);
    CHECK(strcmp(contents(f1), "whole") == 0);
}

static void test_stop_cannot_deliver(void **state)
{
    FP_NEEDED();
    in_child(child_stop_cannot_deliver);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_call_fails),
        cmocka_unit_test(test_put_back_keeps_cloexec),
        cmocka_unit_test(test_low_memfd_cannot_move),
        cmocka_unit_test(test_take_read_fails),
        cmocka_unit_test(test_size_unreadable),
        cmocka_unit_test(test_stop_cannot_deliver),
    };

    diag_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
    if (diag_fd < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
