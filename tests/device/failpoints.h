/*
 * failpoints.h - system and library calls of src/device made to fail on
 * demand, for the tests of its error paths (test_*_failures.c).
 *
 * A test binary that links failpoints.c is linked with --wrap for each of
 * the functions below (tests/device/CMakeLists.txt,
 * otm_device_failures_test): every call of them from the test and from
 * libotm_device.a's objects goes through a wrapper that passes it on,
 * unless a failure is armed for it. Calls made inside shared libraries
 * (libc's own, libelf's, cmocka's) are not seen.
 *
 * fp_fail(FP_X, n, e): the n-th call of X from now fails (n >= 1), the way
 * X reports failure (-1, NULL, MAP_FAILED, an error number for the pthread
 * functions, EV_NONE, FFI_BAD_ABI...) with errno e; only that one. For
 * read, pread, write: e == 0 makes the call return 0 instead (end of file,
 * nothing written). fp_fail_from(FP_X, n, e): the n-th call and every
 * later one fail, until fp_clear. fp_fired: whether an armed failure
 * happened. fp_calls: the calls of X since it was last armed or cleared.
 *
 * Thread-safe (atomics); a test arms a failure right before the call it
 * means, since the test's own calls of X count too.
 *
 * _exit, _Exit and quick_exit are wrapped too, never failed: in a coverage
 * build they write the process's counters first, as exit() does.
 */
#ifndef OTM_TEST_FAILPOINTS_H
#define OTM_TEST_FAILPOINTS_H

typedef enum fp_fn {
    FP_CALLOC,
    FP_MALLOC,
    FP_REALLOC,
    FP_FCNTL,
    FP_DUP2,
    FP_MEMFD_CREATE,
    FP_PTHREAD_MUTEX_INIT,
    FP_LSEEK,
    FP_PREAD,
    FP_PWRITE,
    FP_WRITE,
    FP_OPEN,
    FP_READ,
    FP_FOPEN,
    FP_MMAP,
    FP_MPROTECT,
    FP_SIGALTSTACK,
    FP_SIGACTION,
    FP_PTHREAD_SETSPECIFIC,
    FP_PTHREAD_KEY_CREATE,
    FP_DLINFO,
    FP_DLADDR1,
    FP_ELF_VERSION,
    FP_ELF_MEMORY,
    FP_ELF_BEGIN,
    FP_GELF_GETSHDR,
    FP_ELF_GETPHDRNUM,
    FP_ELF_GETSHDRSTRNDX,
    FP_ELF_GETDATA,
    FP_FFI_PREP_CIF,
    FP_GETRLIMIT,
    FP_SYSCALL,
    FP_IOCTL,
    FP_POLL,
    FP_COUNT
} fp_fn;

/* The function's name, for messages. */
const char *fp_name(fp_fn fn);

/* The n-th call of fn from now (n >= 1) fails with errno err. */
void fp_fail(fp_fn fn, unsigned long n, int err);

/* The n-th call of fn from now and every later one fail with errno err. */
void fp_fail_from(fp_fn fn, unsigned long n, int err);

/* 1 when a failure armed for fn since it was last armed or cleared
 * happened. */
int fp_fired(fp_fn fn);

/* Calls of fn since it was last armed or cleared. */
unsigned long fp_calls(fp_fn fn);

/* Disarms every function and zeroes the counts. */
void fp_clear(void);

/* 1 where the failpoints work; 0 in a sanitizer's tree (OTM_TSAN,
 * OTM_FUZZ), whose runtime, linked into the program, makes these very
 * calls itself and cannot take a wrapper: nothing is wrapped there, every
 * fp_* call does nothing. FP_NEEDED() first in a cmocka test that arms
 * failures: it is skipped there. */
int fp_available(void);
#define FP_NEEDED()                                                            \
    do {                                                                       \
        if (!fp_available())                                                   \
            skip();                                                            \
    } while (0)

/* Not a failure: dlinfo(h, RTLD_DI_LINKMAP, &out) answers link_map (a
 * struct link_map * the test made, for an image that is not what it
 * seems) until called again with NULL. */
void fp_dlinfo_answer(void *link_map);

#endif
