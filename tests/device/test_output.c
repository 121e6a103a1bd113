/*
 * test_output.c - capturing stdout and stderr (otm/output.h): printf and
 * write captured and taken in order, counts with and without a newline,
 * partial takes, bytes arriving after the count, concurrent writers, a
 * 10 MiB stream whose memory is released, refusals, start twice, forwarding
 * at stop and the restored descriptors, failures undone.
 *
 * Every capture runs in a forked child: cmocka prints to stdout, and a
 * capture in this process would swallow its report. A child checks with
 * CHECK, which reports on a duplicate of the test's stderr made before any
 * capture and exits 1; the parent asserts that the child exited 0.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "otm/output.h"

#define MIB (1024u * 1024u)

/* The test's own stderr, for the children's reports. */
static int diag_fd = -1;

/* ------------------------------------------------------------------------ */
/* Running a check in a child                                                */

static void child_fail(int line, const char *what)
{
    dprintf(diag_fd, "test_output.c:%d: check failed: %s\n", line, what);
    _exit(1);
}

static void child_fail_u64(int line, const char *what, uint64_t got,
                           uint64_t want)
{
    dprintf(diag_fd, "test_output.c:%d: %s: got %llu, want %llu\n", line,
            what, (unsigned long long)got, (unsigned long long)want);
    _exit(1);
}

#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c))                                                             \
            child_fail(__LINE__, #c);                                         \
    } while (0)

#define CHECK_U64(got, want)                                                  \
    do {                                                                      \
        uint64_t g_ = (got), w_ = (want);                                     \
        if (g_ != w_)                                                         \
            child_fail_u64(__LINE__, #got, g_, w_);                           \
    } while (0)

#ifdef OTM_COVERAGE
/* libgcov: writes the .gcda files, which _exit alone would skip. */
void __gcov_dump(void);
#define CHILD_DONE() __gcov_dump()
#else
#define CHILD_DONE() ((void)0)
#endif

/* Runs fn in a forked child and asserts that it exited 0. stdio is flushed
 * first so that the child does not inherit, and later flush, a copy of
 * cmocka's buffered output. */
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
        CHILD_DONE();
        _exit(0);
    }
    while (waitpid(pid, &status, 0) < 0)
        assert_int_equal(errno, EINTR);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* ------------------------------------------------------------------------ */
/* Helpers for the children                                                  */

static otd_output *start(void)
{
    char err[256];
    otd_output *o = NULL;
    otm_status st = otd_output_start(&o, err, sizeof(err));

    if (st != OTM_OK)
        dprintf(diag_fd, "otd_output_start: %s\n", err);
    CHECK(st == OTM_OK);
    CHECK(o != NULL);
    return o;
}

static void expect_pending(otd_output *o, uint64_t out, uint64_t err)
{
    uint64_t n_out = 99, n_err = 99;

    otd_output_pending(o, &n_out, &n_err);
    CHECK_U64(n_out, out);
    CHECK_U64(n_err, err);
}

/* Takes out + err bytes and checks them against the two strings. */
static void expect_take(otd_output *o, const char *out, const char *err)
{
    size_t n_out = strlen(out), n_err = strlen(err);
    uint8_t buf[4096];

    CHECK(n_out + n_err <= sizeof(buf));
    CHECK(otd_output_take(o, buf, n_out, n_err) == OTM_OK);
    CHECK(memcmp(buf, out, n_out) == 0);
    CHECK(memcmp(buf + n_out, err, n_err) == 0);
}

static void write_str(int fd, const char *s)
{
    CHECK(write(fd, s, strlen(s)) == (ssize_t)strlen(s));
}

/* Everything a pipe holds once its write ends are closed. */
static size_t read_pipe(int fd, char *buf, size_t size)
{
    size_t got = 0;
    ssize_t n;

    while (got < size - 1 && (n = read(fd, buf + got, size - 1 - got)) != 0) {
        CHECK(n > 0 || errno == EINTR);
        if (n > 0)
            got += (size_t)n;
    }
    buf[got] = '\0';
    return got;
}

/* The number of open descriptors below 1024. Probing each with fcntl
 * needs no descriptor of its own, so it works at a tight RLIMIT_NOFILE. */
static int count_fds(void)
{
    int fd, n = 0;

    for (fd = 0; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            n++;
    return n;
}

static int same_file(int a, int b)
{
    struct stat sa, sb;

    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* ------------------------------------------------------------------------ */
/* Capturing and taking                                                      */

static void child_in_order(void)
{
    otd_output *o = start();

    /* stdout's buffer reaches the memfd when flushed; the explicit flushes
     * order printf against write as a program would have to. */
    printf("p1 %d\n", 1);
    fflush(stdout);
    write_str(1, "w1\n");
    printf("p2");
    fprintf(stderr, "e1 %s", "x");
    write_str(2, "w2");
    fputs("e3\n", stderr);
    expect_pending(o, 10, 9);
    expect_take(o, "p1 1\nw1\np2", "e1 xw2e3\n");
    expect_pending(o, 0, 0);
    /* A second round continues where the first stopped. */
    write_str(1, "again");
    expect_pending(o, 5, 0);
    expect_take(o, "again", "");
    otd_output_stop(o);
}

static void test_in_order(void **state)
{
    in_child(child_in_order);
}

static void child_pending_counts(void)
{
    otd_output *o = start();

    expect_pending(o, 0, 0);
    printf("abc\n");
    expect_pending(o, 4, 0);
    /* No newline: only pending's flush gets it out of stdio, also when
     * stdout is line buffered. */
    printf("xyz");
    expect_pending(o, 7, 0);
    fprintf(stderr, "12");
    expect_pending(o, 7, 2);
    /* Counting takes nothing. */
    expect_pending(o, 7, 2);
    expect_take(o, "abc\nxyz", "12");
    otd_output_stop(o);
}

static void test_pending_counts(void **state)
{
    in_child(child_pending_counts);
}

static void child_take_part(void)
{
    otd_output *o = start();

    write_str(1, "0123456789");
    write_str(2, "abcdef");
    expect_pending(o, 10, 6);
    expect_take(o, "0123", "ab");
    expect_pending(o, 6, 4);
    expect_take(o, "", "cd");
    expect_pending(o, 6, 2);
    expect_take(o, "456789", "ef");
    expect_pending(o, 0, 0);
    otd_output_stop(o);
}

static void test_take_part(void **state)
{
    in_child(child_take_part);
}

static void child_after_pending(void)
{
    otd_output *o = start();

    write_str(1, "one");
    expect_pending(o, 3, 0);
    write_str(1, "two");
    write_str(2, "late");
    expect_take(o, "one", "");
    expect_pending(o, 3, 4);
    expect_take(o, "two", "late");
    otd_output_stop(o);
}

static void test_after_pending(void **state)
{
    in_child(child_after_pending);
}

static void child_take_too_much(void)
{
    otd_output *o = start();
    uint8_t buf[16];

    write_str(1, "12345");
    write_str(2, "ab");
    expect_pending(o, 5, 2);
    CHECK(otd_output_take(o, buf, 6, 0) == OTM_ERR_INVALID);
    CHECK(otd_output_take(o, buf, 0, 3) == OTM_ERR_INVALID);
    CHECK(otd_output_take(o, buf, 6, 2) == OTM_ERR_INVALID);
    CHECK(otd_output_take(o, buf, UINT64_MAX, UINT64_MAX) == OTM_ERR_INVALID);
    /* Nothing was taken by the refusals. */
    expect_pending(o, 5, 2);
    expect_take(o, "12345", "ab");
    CHECK(otd_output_take(o, buf, 1, 0) == OTM_ERR_INVALID);
    otd_output_stop(o);
}

static void test_take_too_much(void **state)
{
    in_child(child_take_too_much);
}

/* ------------------------------------------------------------------------ */
/* Concurrent writers                                                        */

#define WRITERS 4     /* threads per stream */
#define LINES 3000    /* lines per thread */
#define LINE_LEN 12   /* "s t ssss nn\n": stream, thread, sequence, check */

typedef struct writer {
    pthread_t thread;
    int stream; /* 1: printf to stdout; 2: write(2) */
    int id;
} writer;

static void format_line(char *line, int stream, int id, int seq)
{
    snprintf(line, LINE_LEN + 1, "%u %u %04u %02u\n", (unsigned)stream % 10,
             (unsigned)id % 10, (unsigned)seq % 10000,
             (unsigned)(seq * 7 + id) % 100);
}

static void *write_lines(void *arg)
{
    const writer *w = arg;
    char line[LINE_LEN + 1];
    int seq;

    for (seq = 0; seq < LINES; seq++) {
        format_line(line, w->stream, w->id, seq);
        if (w->stream == 1)
            fputs(line, stdout);
        else
            write_str(2, line);
    }
    return NULL;
}

/* Appends everything pending to buf (out bytes at *n_out, err bytes at
 * *n_err of their own buffers). */
static void take_all(otd_output *o, char *out, size_t *n_out, char *err,
                     size_t *n_err, size_t cap)
{
    uint64_t p_out, p_err;
    uint8_t *tmp;

    otd_output_pending(o, &p_out, &p_err);
    CHECK(*n_out + p_out <= cap && *n_err + p_err <= cap);
    tmp = malloc(p_out + p_err + 1);
    CHECK(tmp != NULL);
    CHECK(otd_output_take(o, tmp, p_out, p_err) == OTM_OK);
    memcpy(out + *n_out, tmp, p_out);
    memcpy(err + *n_err, tmp + p_out, p_err);
    *n_out += p_out;
    *n_err += p_err;
    free(tmp);
}

/* Every line of every writer of `stream` is in buf exactly once, whole,
 * and each writer's lines in its own order. */
static void check_lines(const char *buf, size_t n, int stream)
{
    int next[WRITERS] = {0};
    char want[LINE_LEN + 1];
    size_t at;

    CHECK_U64(n, (uint64_t)WRITERS * LINES * LINE_LEN);
    for (at = 0; at < n; at += LINE_LEN) {
        int id = buf[at + 2] - '0';

        CHECK(buf[at] - '0' == stream);
        CHECK(id >= 0 && id < WRITERS);
        CHECK(next[id] < LINES);
        format_line(want, stream, id, next[id]);
        CHECK(memcmp(buf + at, want, LINE_LEN) == 0);
        next[id]++;
    }
}

static void child_threads(void)
{
    size_t cap = (size_t)WRITERS * LINES * LINE_LEN;
    char *out = malloc(cap), *err = malloc(cap);
    size_t n_out = 0, n_err = 0;
    writer w[2 * WRITERS];
    otd_output *o = start();
    int i, rounds = 0;

    CHECK(out != NULL && err != NULL);
    for (i = 0; i < 2 * WRITERS; i++) {
        w[i].stream = 1 + i / WRITERS;
        w[i].id = i % WRITERS;
        CHECK(pthread_create(&w[i].thread, NULL, write_lines, &w[i]) == 0);
    }
    /* Take while they write, as the plugin would between regions. */
    while (n_err < cap && rounds++ < 100000)
        take_all(o, out, &n_out, err, &n_err, cap);
    for (i = 0; i < 2 * WRITERS; i++)
        CHECK(pthread_join(w[i].thread, NULL) == 0);
    take_all(o, out, &n_out, err, &n_err, cap);
    expect_pending(o, 0, 0);
    otd_output_stop(o);
    check_lines(out, n_out, 1);
    check_lines(err, n_err, 2);
    free(out);
    free(err);
}

static void test_threads(void **state)
{
    in_child(child_threads);
}

/* ------------------------------------------------------------------------ */
/* A long run: memory is released                                            */

static uint8_t pattern(size_t i)
{
    return (uint8_t)((i * 7 + i / 4099) % 251);
}

static void write_pattern(size_t total)
{
    uint8_t chunk[65536];
    size_t at = 0, i;

    while (at < total) {
        size_t n = total - at < sizeof(chunk) ? total - at : sizeof(chunk);

        for (i = 0; i < n; i++)
            chunk[i] = pattern(at + i);
        CHECK(write(1, chunk, n) == (ssize_t)n);
        at += n;
    }
}

/* Bytes the memfd on descriptor 1 still holds in memory. */
static uint64_t resident(void)
{
    struct stat st;

    CHECK(fstat(1, &st) == 0);
    return (uint64_t)st.st_blocks * 512;
}

static void child_ten_mib(void)
{
    const size_t total = 10 * MIB;
    const size_t first = 5 * MIB + 100; /* not a page boundary */
    uint8_t *buf = malloc(total);
    otd_output *o = start();
    struct stat st;
    size_t i;

    CHECK(buf != NULL);
    write_pattern(total);
    expect_pending(o, total, 0);
    CHECK(resident() >= total);
    CHECK(otd_output_take(o, buf, first, 0) == OTM_OK);
    expect_pending(o, total - first, 0);
    /* The taken pages are gone, the rest is there, with one page split. */
    CHECK(resident() <= total - first + 4096);
    CHECK(resident() >= total - first);
    CHECK(otd_output_take(o, buf + first, total - first, 0) == OTM_OK);
    for (i = 0; i < total; i++)
        if (buf[i] != pattern(i))
            CHECK_U64(i, total); /* reports the first wrong offset */
    /* Everything is released, also the split page; the size stays. */
    CHECK_U64(resident(), 0);
    CHECK(fstat(1, &st) == 0);
    CHECK_U64((uint64_t)st.st_size, total);
    errno = 0;
    CHECK(lseek(1, 0, SEEK_DATA) == -1 && errno == ENXIO);
    /* Offsets did not move: new bytes are counted and taken as usual. */
    write_str(1, "tail");
    expect_pending(o, 4, 0);
    expect_take(o, "tail", "");
    otd_output_stop(o);
    free(buf);
}

static void test_ten_mib(void **state)
{
    in_child(child_ten_mib);
}

/* ------------------------------------------------------------------------ */
/* Stopping: forwarding and restoring                                        */

static void child_stop_forwards(void)
{
    int p_out[2], p_err[2];
    char got[256];
    otd_output *o;

    CHECK(pipe(p_out) == 0 && pipe(p_err) == 0);
    CHECK(dup2(p_out[1], 1) == 1 && dup2(p_err[1], 2) == 2);
    close(p_out[1]);
    close(p_err[1]);
    /* Written before the capture: start flushes it to the original. */
    printf("before|");
    o = start();
    CHECK(otd_output_fd(o, 1) >= 3 && otd_output_fd(o, 2) >= 3);
    CHECK(same_file(otd_output_fd(o, 1), p_out[0]));
    CHECK(same_file(otd_output_fd(o, 2), p_err[0]));
    CHECK(!same_file(1, p_out[0]) && !same_file(2, p_err[0]));
    CHECK(otd_output_fd(o, 0) == -1 && otd_output_fd(o, 3) == -1);
    printf("taken|");
    expect_pending(o, 6, 0);
    expect_take(o, "taken|", "");
    /* The worker's own log lines bypass the capture. */
    write_str(otd_output_fd(o, 1), "log|");
    write_str(otd_output_fd(o, 2), "elog|");
    printf("kept|");       /* still in stdio: stop flushes it */
    write_str(2, "ekept|");
    otd_output_stop(o);
    /* The originals are back on 1 and 2, not close-on-exec. */
    CHECK(same_file(1, p_out[0]) && same_file(2, p_err[0]));
    CHECK(fcntl(1, F_GETFD) == 0 && fcntl(2, F_GETFD) == 0);
    printf("after|");
    fflush(stdout);
    write_str(2, "eafter|");
    close(1);
    close(2);
    read_pipe(p_out[0], got, sizeof(got));
    CHECK(strcmp(got, "before|log|kept|after|") == 0);
    read_pipe(p_err[0], got, sizeof(got));
    CHECK(strcmp(got, "elog|ekept|eafter|") == 0);
}

static void test_stop_forwards(void **state)
{
    in_child(child_stop_forwards);
}

/* A close-on-exec original stays so. */
static void child_stop_keeps_cloexec(void)
{
    int p[2];
    otd_output *o;

    CHECK(pipe2(p, O_CLOEXEC) == 0);
    CHECK(dup3(p[1], 1, O_CLOEXEC) == 1);
    o = start();
    CHECK(fcntl(1, F_GETFD) == 0); /* the memfd on 1 is inherited */
    otd_output_stop(o);
    CHECK(fcntl(1, F_GETFD) == FD_CLOEXEC);
    CHECK(same_file(1, p[0]));
}

static void test_stop_keeps_cloexec(void **state)
{
    in_child(child_stop_keeps_cloexec);
}

/* ------------------------------------------------------------------------ */
/* Refusals                                                                  */

static void child_start_twice(void)
{
    char err[256];
    otd_output *o = start(), *again = (otd_output *)&err;
    int fds = count_fds();

    write_str(1, "first");
    CHECK(otd_output_start(&again, err, sizeof(err)) == OTM_ERR_BUSY);
    CHECK(again == NULL);
    CHECK(strstr(err, "already") != NULL);
    CHECK_U64((uint64_t)count_fds(), (uint64_t)fds);
    /* The first capture is untouched. */
    expect_pending(o, 5, 0);
    expect_take(o, "first", "");
    otd_output_stop(o);
    /* After stop, a new capture starts. */
    o = start();
    write_str(1, "second");
    expect_pending(o, 6, 0);
    expect_take(o, "second", "");
    otd_output_stop(o);
}

static void test_start_twice(void **state)
{
    in_child(child_start_twice);
}

static void child_null_arguments(void)
{
    char err[256];
    uint64_t n_out = 7, n_err = 7;
    uint8_t buf[4];
    otd_output *o;

    CHECK(otd_output_start(NULL, err, sizeof(err)) == OTM_ERR_INVALID);
    CHECK(err[0] != '\0');
    CHECK(otd_output_start(NULL, NULL, 0) == OTM_ERR_INVALID);
    CHECK(otd_output_take(NULL, buf, 0, 0) == OTM_ERR_INVALID);
    CHECK(otd_output_fd(NULL, 1) == -1);
    otd_output_pending(NULL, &n_out, &n_err);
    CHECK(n_out == 0 && n_err == 0);
    otd_output_stop(NULL);
    /* A start after the refusals still works: nothing was left held. */
    o = start();
    write_str(1, "ab");
    otd_output_pending(o, NULL, NULL);
    otd_output_pending(o, &n_out, NULL);
    CHECK_U64(n_out, 2);
    CHECK(otd_output_take(o, NULL, 1, 0) == OTM_ERR_INVALID);
    CHECK(otd_output_take(o, NULL, 0, 1) == OTM_ERR_INVALID);
    CHECK(otd_output_take(o, NULL, 0, 0) == OTM_OK);
    expect_pending(o, 2, 0);
    expect_take(o, "ab", "");
    otd_output_stop(o);
    /* No room for a sentence: err is not written, the capture works. */
    err[0] = 'x';
    o = NULL;
    CHECK(otd_output_start(&o, err, 0) == OTM_OK && o != NULL);
    CHECK(err[0] == 'x');
    otd_output_stop(o);
}

static void test_null_arguments(void **state)
{
    in_child(child_null_arguments);
}

/* ------------------------------------------------------------------------ */
/* Failures are undone                                                       */

static void child_closed_stderr(void)
{
    char err[256];
    otd_output *o = (otd_output *)&err;
    int fds;

    close(2);
    fds = count_fds();
    CHECK(otd_output_start(&o, err, sizeof(err)) == OTM_ERR_INVALID);
    CHECK(o == NULL);
    CHECK(strstr(err, "descriptor 2") != NULL);
    CHECK_U64((uint64_t)count_fds(), (uint64_t)fds);
    CHECK(fcntl(2, F_GETFD) == -1 && errno == EBADF);
    CHECK(fcntl(1, F_GETFD) == 0);
}

static void test_closed_stderr(void **state)
{
    in_child(child_closed_stderr);
}

/* With stdin closed, the memfds (and the saved copies) never take
 * descriptor 0, which stays closed; the capture works as usual. */
static void child_closed_stdin(void)
{
    close(0);
    otd_output *o = start();
    CHECK(fcntl(0, F_GETFD) == -1 && errno == EBADF);
    write_str(1, "in");
    expect_pending(o, 2, 0);
    expect_take(o, "in", "");
    otd_output_stop(o);
    CHECK(fcntl(0, F_GETFD) == -1 && errno == EBADF);
}

static void test_closed_stdin(void **state)
{
    in_child(child_closed_stdin);
}

/* Leaves 0, 1, 2 and diag_fd open, numbered without a gap, so that each
 * step of the descriptor limit allows exactly one more descriptor. A
 * child may close what it inherited from the test's launcher. */
static void close_inherited(void)
{
    int fd, low;

    for (fd = 3; fd < 1024; fd++)
        if (fd != diag_fd)
            close(fd);
    low = fcntl(diag_fd, F_DUPFD_CLOEXEC, 3);
    CHECK(low >= 0);
    if (low < diag_fd) {
        close(diag_fd);
        diag_fd = low;
    } else {
        close(low);
    }
}

/* With the descriptor limit at what is open, then one more each time,
 * each of the four descriptors start opens (two saved copies, two memfds)
 * fails in turn; each failure leaves the same descriptors open and 1 and 2
 * on the same files, and the fifth limit lets start succeed. */
static void child_out_of_descriptors(void)
{
    struct rlimit rl;
    char err[256];
    otd_output *o = NULL;
    int fds, highest = 0, fd, failures = 0, orig_out, orig_err;
    otm_status st = OTM_ERR_NOMEM;
    rlim_t limit;

    close_inherited();
    orig_out = fcntl(1, F_DUPFD_CLOEXEC, 3);
    orig_err = fcntl(2, F_DUPFD_CLOEXEC, 3);
    CHECK(orig_out >= 0 && orig_err >= 0);
    fds = count_fds();
    for (fd = 0; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            highest = fd;
    CHECK_U64((uint64_t)highest + 1, (uint64_t)fds);
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    for (limit = (rlim_t)highest + 1; limit < (rlim_t)highest + 16; limit++) {
        rl.rlim_cur = limit;
        CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
        st = otd_output_start(&o, err, sizeof(err));
        if (st == OTM_OK)
            break;
        failures++;
        CHECK(st == OTM_ERR_NOMEM);
        CHECK(o == NULL && err[0] != '\0');
        CHECK_U64((uint64_t)count_fds(), (uint64_t)fds);
        CHECK(same_file(1, orig_out) && same_file(2, orig_err));
    }
    CHECK(st == OTM_OK);
    CHECK_U64((uint64_t)failures, 4);
    CHECK(!same_file(1, orig_out) && !same_file(2, orig_err));
    otd_output_stop(o);
    CHECK_U64((uint64_t)count_fds(), (uint64_t)fds);
    CHECK(same_file(1, orig_out) && same_file(2, orig_err));
}

static void test_out_of_descriptors(void **state)
{
    in_child(child_out_of_descriptors);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order),
        cmocka_unit_test(test_pending_counts),
        cmocka_unit_test(test_take_part),
        cmocka_unit_test(test_after_pending),
        cmocka_unit_test(test_take_too_much),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_ten_mib),
        cmocka_unit_test(test_stop_forwards),
        cmocka_unit_test(test_stop_keeps_cloexec),
        cmocka_unit_test(test_start_twice),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_closed_stderr),
        cmocka_unit_test(test_closed_stdin),
        cmocka_unit_test(test_out_of_descriptors),
    };

    diag_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
    if (diag_fd < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
