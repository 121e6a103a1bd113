/*
 * omp_check.h - what every program of the `omp` label shares.
 *
 * A program checks its own results on the host (never inside a target
 * region: exiting there would take a device rank down, not the program),
 * prints "FAIL <program>: ..." on stderr and exits with status 1 at the
 * first mismatch, and prints one line "PASS <program>: <what it checked>"
 * on stdout at the end. run_omp.sh requires that line.
 */
#ifndef OMP_CHECK_H
#define OMP_CHECK_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <omp.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#ifndef OMP_TEST_NAME
#define OMP_TEST_NAME "omp test"
#endif

static void omp_test_fail(const char *file, int line, const char *cond,
                          const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));

static void omp_test_fail(const char *file, int line, const char *cond,
                          const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "FAIL %s: %s:%d: %s: ", OMP_TEST_NAME, file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* CHECK(condition, "printf format", args...) */
#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond))                                                          \
            omp_test_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);            \
    } while (0)

/* The number of devices the driver started (ranks - 1), from
 * OTM_TEST_NDEVICES; 2 when it is not set. */
static inline int expected_devices(void)
{
    const char *s = getenv("OTM_TEST_NDEVICES");
    return s && *s ? atoi(s) : 2;
}

/* Stops the program unless it has the devices the driver started and at
 * least `min` of them. */
static inline int require_devices(int min)
{
    int n = omp_get_num_devices();
    CHECK(n == expected_devices(), "omp_get_num_devices() = %d, expected %d "
          "(is the program running under omptarget-mpirun?)", n, expected_devices());
    CHECK(n >= min, "%d device(s), the test needs %d", n, min);
    return n;
}

/* A deterministic pseudo-random byte stream (xorshift32). */
static inline unsigned next_rand(unsigned *state)
{
    unsigned x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

/* A host page at an address of its own, where no Linux process has memory
 * unless it asks for it (below the mmap area, far above the heap): a
 * device that reads it without unified shared memory faults. */
static inline int *page_of_its_own(void)
{
    for (uintptr_t at = 0x3f0000000000u; at < 0x3f0000100000u; at += 0x10000) {
        void *p = mmap((void *)at, 4096, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p == (void *)at)
            return (int *)p;
        if (p != MAP_FAILED)
            munmap(p, 4096);
    }
    CHECK(0, "no free page at 0x3f0000000000 and above");
    return NULL;
}

#define PASS(...)                                                             \
    do {                                                                      \
        printf("PASS %s: ", OMP_TEST_NAME);                                   \
        printf(__VA_ARGS__);                                                  \
        putchar('\n');                                                        \
        fflush(stdout);                                                       \
    } while (0)

#endif
