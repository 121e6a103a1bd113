/*
 * failpoints.c - the wrappers of failpoints.h. Each __wrap_X counts the
 * call and either fails it as armed or calls __real_X (the linker's name
 * for the function itself under --wrap=X).
 */
#include "failpoints.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ffi.h>
#include <gelf.h>
#include <libelf.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static const char *const names[FP_COUNT] = {
    [FP_CALLOC] = "calloc",
    [FP_MALLOC] = "malloc",
    [FP_REALLOC] = "realloc",
    [FP_FCNTL] = "fcntl",
    [FP_DUP2] = "dup2",
    [FP_MEMFD_CREATE] = "memfd_create",
    [FP_PTHREAD_MUTEX_INIT] = "pthread_mutex_init",
    [FP_LSEEK] = "lseek",
    [FP_PREAD] = "pread",
    [FP_PWRITE] = "pwrite",
    [FP_WRITE] = "write",
    [FP_OPEN] = "open",
    [FP_READ] = "read",
    [FP_FOPEN] = "fopen",
    [FP_MMAP] = "mmap",
    [FP_MPROTECT] = "mprotect",
    [FP_SIGALTSTACK] = "sigaltstack",
    [FP_SIGACTION] = "sigaction",
    [FP_PTHREAD_SETSPECIFIC] = "pthread_setspecific",
    [FP_PTHREAD_KEY_CREATE] = "pthread_key_create",
    [FP_DLINFO] = "dlinfo",
    [FP_DLADDR1] = "dladdr1",
    [FP_ELF_VERSION] = "elf_version",
    [FP_ELF_MEMORY] = "elf_memory",
    [FP_ELF_BEGIN] = "elf_begin",
    [FP_GELF_GETSHDR] = "gelf_getshdr",
    [FP_ELF_GETPHDRNUM] = "elf_getphdrnum",
    [FP_ELF_GETSHDRSTRNDX] = "elf_getshdrstrndx",
    [FP_ELF_GETDATA] = "elf_getdata",
    [FP_FFI_PREP_CIF] = "ffi_prep_cif",
    [FP_GETRLIMIT] = "getrlimit",
    [FP_SYSCALL] = "syscall",
    [FP_IOCTL] = "ioctl",
    [FP_POLL] = "poll",
};

#ifdef OTM_FAILPOINTS_OFF
/* A sanitizer's tree: nothing is wrapped (failpoints.h). */
const char *fp_name(fp_fn fn)
{
    return (int)fn >= 0 && (int)fn < FP_COUNT ? names[fn] : "?";
}

int fp_available(void)
{
    return 0;
}

void fp_fail(fp_fn fn, unsigned long n, int err)
{
    (void)fn, (void)n, (void)err;
}

void fp_fail_from(fp_fn fn, unsigned long n, int err)
{
    (void)fn, (void)n, (void)err;
}

int fp_fired(fp_fn fn)
{
    (void)fn;
    return 0;
}

unsigned long fp_calls(fp_fn fn)
{
    (void)fn;
    return 0;
}

void fp_clear(void)
{
}

void fp_dlinfo_answer(void *link_map)
{
    (void)link_map;
}
#else
int fp_available(void)
{
    return 1;
}

typedef struct point {
    atomic_ulong calls;   /* since armed or cleared */
    atomic_ulong first;   /* the first call that fails; 0: none */
    atomic_ulong last;    /* the last one (ULONG_MAX: every later one) */
    atomic_int err;
    atomic_int fired;
} point;

static point points[FP_COUNT];

const char *fp_name(fp_fn fn)
{
    return (int)fn >= 0 && (int)fn < FP_COUNT ? names[fn] : "?";
}

static void arm(fp_fn fn, unsigned long n, unsigned long last, int err)
{
    point *p = &points[fn];

    atomic_store(&p->first, 0);
    atomic_store(&p->calls, 0);
    atomic_store(&p->fired, 0);
    atomic_store(&p->err, err);
    atomic_store(&p->last, last);
    atomic_store(&p->first, n);
}

void fp_fail(fp_fn fn, unsigned long n, int err)
{
    arm(fn, n, n, err);
}

void fp_fail_from(fp_fn fn, unsigned long n, int err)
{
    arm(fn, n, (unsigned long)-1, err);
}

int fp_fired(fp_fn fn)
{
    return atomic_load(&points[fn].fired);
}

unsigned long fp_calls(fp_fn fn)
{
    return atomic_load(&points[fn].calls);
}

void fp_clear(void)
{
    for (int i = 0; i < FP_COUNT; i++) {
        atomic_store(&points[i].first, 0);
        atomic_store(&points[i].calls, 0);
        atomic_store(&points[i].fired, 0);
    }
}

/* 1 when this call of fn fails; errno is then set. *err0 (when not NULL)
 * tells a "return 0" failure (err == 0) from an errno one. */
static int hit(fp_fn fn, int *err0)
{
    point *p = &points[fn];
    unsigned long c = atomic_fetch_add(&p->calls, 1) + 1;
    unsigned long first = atomic_load(&p->first);

    if (!first || c < first || c > atomic_load(&p->last))
        return 0;
    atomic_store(&p->fired, 1);
    int e = atomic_load(&p->err);
    if (err0)
        *err0 = e == 0;
    if (e)
        errno = e;
    return 1;
}

/* The error number itself, for the functions that return it. */
static int hit_err(fp_fn fn)
{
    return hit(fn, NULL) ? atomic_load(&points[fn].err) : 0;
}

/* ---- the wrappers ------------------------------------------------------------ */

#define DECLARE(ret, name, params)                                             \
    ret __real_##name params;                                                  \
    ret __wrap_##name params;

DECLARE(void *, calloc, (size_t n, size_t size))
DECLARE(void *, malloc, (size_t size))
DECLARE(void *, realloc, (void *p, size_t size))
DECLARE(int, fcntl, (int fd, int cmd, ...))
DECLARE(int, dup2, (int a, int b))
DECLARE(int, memfd_create, (const char *name, unsigned int flags))
DECLARE(int, pthread_mutex_init, (pthread_mutex_t *m, const pthread_mutexattr_t *a))
DECLARE(off_t, lseek, (int fd, off_t off, int whence))
DECLARE(ssize_t, pread, (int fd, void *buf, size_t n, off_t off))
DECLARE(ssize_t, pwrite, (int fd, const void *buf, size_t n, off_t off))
DECLARE(ssize_t, write, (int fd, const void *buf, size_t n))
DECLARE(int, open, (const char *path, int flags, ...))
DECLARE(ssize_t, read, (int fd, void *buf, size_t n))
DECLARE(FILE *, fopen, (const char *path, const char *mode))
DECLARE(void *, mmap, (void *at, size_t len, int prot, int flags, int fd, off_t off))
DECLARE(int, mprotect, (void *at, size_t len, int prot))
DECLARE(int, sigaltstack, (const stack_t *ss, stack_t *old))
DECLARE(int, sigaction, (int sig, const struct sigaction *sa, struct sigaction *old))
DECLARE(int, pthread_setspecific, (pthread_key_t key, const void *v))
DECLARE(int, pthread_key_create, (pthread_key_t *key, void (*fn)(void *)))
DECLARE(int, dlinfo, (void *h, int req, void *arg))
DECLARE(int, dladdr1, (const void *addr, Dl_info *info, void **extra, int flags))
DECLARE(unsigned, elf_version, (unsigned v))
DECLARE(Elf *, elf_memory, (char *image, size_t size))
DECLARE(Elf *, elf_begin, (int fd, Elf_Cmd cmd, Elf *ref))
DECLARE(GElf_Shdr *, gelf_getshdr, (Elf_Scn *scn, GElf_Shdr *dst))
DECLARE(int, elf_getphdrnum, (Elf *e, size_t *n))
DECLARE(int, elf_getshdrstrndx, (Elf *e, size_t *n))
DECLARE(Elf_Data *, elf_getdata, (Elf_Scn *scn, Elf_Data *d))
DECLARE(ffi_status, ffi_prep_cif, (ffi_cif *cif, ffi_abi abi, unsigned int n,
                                   ffi_type *rtype, ffi_type **atypes))
DECLARE(int, getrlimit, (__rlimit_resource_t r, struct rlimit *rl))
DECLARE(long, syscall, (long nr, ...))
DECLARE(int, ioctl, (int fd, unsigned long req, ...))
DECLARE(int, poll, (struct pollfd *fds, nfds_t n, int timeout))

void *__wrap_calloc(size_t n, size_t size)
{
    return hit(FP_CALLOC, NULL) ? NULL : __real_calloc(n, size);
}

void *__wrap_malloc(size_t size)
{
    return hit(FP_MALLOC, NULL) ? NULL : __real_malloc(size);
}

void *__wrap_realloc(void *p, size_t size)
{
    return hit(FP_REALLOC, NULL) ? NULL : __real_realloc(p, size);
}

/* The third argument, when there is one, is an int or a pointer: passed on
 * as glibc's fcntl reads it. */
int __wrap_fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return hit(FP_FCNTL, NULL) ? -1 : __real_fcntl(fd, cmd, arg);
}

int __wrap_dup2(int a, int b)
{
    return hit(FP_DUP2, NULL) ? -1 : __real_dup2(a, b);
}

int __wrap_memfd_create(const char *name, unsigned int flags)
{
    return hit(FP_MEMFD_CREATE, NULL) ? -1 : __real_memfd_create(name, flags);
}

int __wrap_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
    int e = hit_err(FP_PTHREAD_MUTEX_INIT);
    return e ? e : __real_pthread_mutex_init(m, a);
}

off_t __wrap_lseek(int fd, off_t off, int whence)
{
    return hit(FP_LSEEK, NULL) ? -1 : __real_lseek(fd, off, whence);
}

ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off)
{
    int zero = 0;
    if (hit(FP_PREAD, &zero))
        return zero ? 0 : -1;
    return __real_pread(fd, buf, n, off);
}

ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    int zero = 0;
    if (hit(FP_PWRITE, &zero))
        return zero ? 0 : -1;
    return __real_pwrite(fd, buf, n, off);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    int zero = 0;
    if (hit(FP_WRITE, &zero))
        return zero ? 0 : -1;
    return __real_write(fd, buf, n);
}

int __wrap_open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    unsigned mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, unsigned) : 0;
    va_end(ap);
    return hit(FP_OPEN, NULL) ? -1 : __real_open(path, flags, mode);
}

ssize_t __wrap_read(int fd, void *buf, size_t n)
{
    int zero = 0;
    if (hit(FP_READ, &zero))
        return zero ? 0 : -1;
    return __real_read(fd, buf, n);
}

FILE *__wrap_fopen(const char *path, const char *mode)
{
    return hit(FP_FOPEN, NULL) ? NULL : __real_fopen(path, mode);
}

void *__wrap_mmap(void *at, size_t len, int prot, int flags, int fd, off_t off)
{
    return hit(FP_MMAP, NULL) ? MAP_FAILED : __real_mmap(at, len, prot, flags, fd, off);
}

int __wrap_mprotect(void *at, size_t len, int prot)
{
    return hit(FP_MPROTECT, NULL) ? -1 : __real_mprotect(at, len, prot);
}

int __wrap_sigaltstack(const stack_t *ss, stack_t *old)
{
    return hit(FP_SIGALTSTACK, NULL) ? -1 : __real_sigaltstack(ss, old);
}

int __wrap_sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
    return hit(FP_SIGACTION, NULL) ? -1 : __real_sigaction(sig, sa, old);
}

int __wrap_pthread_setspecific(pthread_key_t key, const void *v)
{
    int e = hit_err(FP_PTHREAD_SETSPECIFIC);
    return e ? e : __real_pthread_setspecific(key, v);
}

int __wrap_pthread_key_create(pthread_key_t *key, void (*fn)(void *))
{
    int e = hit_err(FP_PTHREAD_KEY_CREATE);
    return e ? e : __real_pthread_key_create(key, fn);
}

static void *_Atomic dlinfo_answer;

void fp_dlinfo_answer(void *link_map)
{
    atomic_store(&dlinfo_answer, link_map);
}

int __wrap_dlinfo(void *h, int req, void *arg)
{
    if (hit(FP_DLINFO, NULL))
        return -1;
    void *answer = atomic_load(&dlinfo_answer);
    if (answer && req == RTLD_DI_LINKMAP) {
        *(void **)arg = answer;
        return 0;
    }
    return __real_dlinfo(h, req, arg);
}

int __wrap_dladdr1(const void *addr, Dl_info *info, void **extra, int flags)
{
    return hit(FP_DLADDR1, NULL) ? 0 : __real_dladdr1(addr, info, extra, flags);
}

unsigned __wrap_elf_version(unsigned v)
{
    return hit(FP_ELF_VERSION, NULL) ? EV_NONE : __real_elf_version(v);
}

Elf *__wrap_elf_memory(char *image, size_t size)
{
    return hit(FP_ELF_MEMORY, NULL) ? NULL : __real_elf_memory(image, size);
}

Elf *__wrap_elf_begin(int fd, Elf_Cmd cmd, Elf *ref)
{
    return hit(FP_ELF_BEGIN, NULL) ? NULL : __real_elf_begin(fd, cmd, ref);
}

GElf_Shdr *__wrap_gelf_getshdr(Elf_Scn *scn, GElf_Shdr *dst)
{
    return hit(FP_GELF_GETSHDR, NULL) ? NULL : __real_gelf_getshdr(scn, dst);
}

int __wrap_elf_getphdrnum(Elf *e, size_t *n)
{
    return hit(FP_ELF_GETPHDRNUM, NULL) ? -1 : __real_elf_getphdrnum(e, n);
}

int __wrap_elf_getshdrstrndx(Elf *e, size_t *n)
{
    return hit(FP_ELF_GETSHDRSTRNDX, NULL) ? -1 : __real_elf_getshdrstrndx(e, n);
}

Elf_Data *__wrap_elf_getdata(Elf_Scn *scn, Elf_Data *d)
{
    return hit(FP_ELF_GETDATA, NULL) ? NULL : __real_elf_getdata(scn, d);
}

ffi_status __wrap_ffi_prep_cif(ffi_cif *cif, ffi_abi abi, unsigned int n,
                               ffi_type *rtype, ffi_type **atypes)
{
    return hit(FP_FFI_PREP_CIF, NULL) ? FFI_BAD_ABI
                                      : __real_ffi_prep_cif(cif, abi, n, rtype, atypes);
}

int __wrap_getrlimit(__rlimit_resource_t r, struct rlimit *rl)
{
    return hit(FP_GETRLIMIT, NULL) ? -1 : __real_getrlimit(r, rl);
}

/* Six arguments passed on, as many as a system call takes. */
long __wrap_syscall(long nr, ...)
{
    va_list ap;
    long a[6];
    va_start(ap, nr);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    return hit(FP_SYSCALL, NULL) ? -1 : __real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

int __wrap_ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return hit(FP_IOCTL, NULL) ? -1 : __real_ioctl(fd, req, arg);
}

int __wrap_poll(struct pollfd *fds, nfds_t n, int timeout)
{
    return hit(FP_POLL, NULL) ? -1 : __real_poll(fds, n, timeout);
}

/* ---- leaving the process --------------------------------------------------------- */

/* Not failpoints: a child that leaves through _exit, _Exit or quick_exit
 * (an exit function of an image's, exit_hooks.c) writes its coverage
 * counters first, as exit() would. */
#ifdef OTM_COVERAGE
void __gcov_dump(void);
#define DUMP() __gcov_dump()
#else
#define DUMP() ((void)0)
#endif

DECLARE(_Noreturn void, _exit, (int status))
DECLARE(_Noreturn void, _Exit, (int status))
DECLARE(_Noreturn void, quick_exit, (int status))

void __wrap__exit(int status)
{
    DUMP();
    __real__exit(status);
}

void __wrap__Exit(int status)
{
    DUMP();
    __real__Exit(status);
}

void __wrap_quick_exit(int status)
{
    DUMP();
    __real_quick_exit(status);
}
#endif
