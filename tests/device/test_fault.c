/*
 * test_fault.c - faults inside kernels become error values (otm/fault.h):
 * guarded calls of kernels that return, dereference NULL, write to a
 * read-only page, divide by zero, abort, overflow their stack, call exit
 * functions (a fixture library hooked with otd_fault_hook_exit), fault on a
 * thread they started; several guarded threads at once; the descriptions;
 * faults outside guarded calls, which must still kill the process (in a
 * child) after one line on the given fd.
 *
 * Every kernel that faults is followed by a normal guarded call on the same
 * thread: the process must stay usable. Nothing here sleeps or waits for a
 * time: threads meet at barriers, and a thread that must stay inside its
 * kernel until it is interrupted waits in pause().
 *
 * cmocka replaces the handlers of SIGSEGV, SIGBUS, SIGFPE and SIGILL around
 * each test (with signal(), without SA_SIGINFO), so every test installs
 * ours again first.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "otm/device.h"
#include "otm/fault.h"

#define PREFIX "omptarget-mpi: rank 1 (device 0): "
#define OUTSIDE                                                               \
    " outside any target region (the plugin's own code or the runtime's); "   \
    "the worker stops\n"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static void install(void)
{
    assert_int_equal(otd_fault_install(STDERR_FILENO, PREFIX), OTM_OK);
}

/* A fault record that no call fills: a changed field shows a write. */
static otd_fault untouched(void)
{
    otd_fault f;

    memset(&f, 0x5a, sizeof(f));
    return f;
}

static void k_set(void *out)
{
    *(int64_t *)out = 42;
}

/* A normal kernel, guarded, on the calling thread: it must work. */
static void assert_usable(void)
{
    int64_t out = 0;
    void *args[1] = {&out};
    otd_fault f = untouched(), before = untouched();

    assert_int_equal(otd_kernel_call_guarded((void *)k_set, args, 1, &f),
                     OTM_OK);
    assert_int_equal(out, 42);
    assert_memory_equal(&f, &before, sizeof(f));
}

static otm_status call1(void (*fn)(void *), void *arg, otd_fault *f)
{
    void *args[1] = {arg};

    return otd_kernel_call_guarded((void *)fn, args, 1, f);
}

static void *open_fixture(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

    if (h == NULL)
        fail_msg("dlopen %s: %s", path, dlerror());
    return h;
}

static void *fixture_symbol(void *h, const char *name)
{
    void *p = dlsym(h, name);

    assert_non_null(p);
    return p;
}

/* ------------------------------------------------------------------------ */
/* Kernels                                                                   */

/* noinline: a constant address folded in would be a compile-time warning
 * (gcc's -Warray-bounds on small addresses), not a run-time fault. */
__attribute__((noinline)) static void k_store(void *p)
{
    *(volatile int *)p = 1;
}

__attribute__((noinline)) static void k_divide(void *out, void *a, void *b)
{
    volatile int x = (int)(intptr_t)a, y = (int)(intptr_t)b;

    *(int *)out = x / y;
}

static void k_abort(void)
{
    abort();
}

static volatile int stop_recursing; /* never set: the recursion overflows */

/* Each frame hands its own array to the next, so the compiler can neither
 * reuse the frame nor turn the recursion into a loop. */
__attribute__((noinline)) static int recurse(volatile char *caller)
{
    volatile char frame[1024];

    frame[0] = (char)(caller[0] + 1);
    if (stop_recursing)
        return frame[0];
    return recurse(frame) + caller[1];
}

static void k_overflow(void *out)
{
    volatile char first[2] = {0, 0};

    *(int *)out = recurse(first);
}

static void *store_null(void *unused)
{
    k_store(NULL);
    return NULL;
}

/* A fault on a thread of the kernel's, as in an OpenMP parallel region. */
static void k_fault_in_thread(void)
{
    pthread_t t;

    if (pthread_create(&t, NULL, store_null, NULL) == 0)
        pthread_join(t, NULL);
}

static void k_kick_self(void *out)
{
    assert_int_equal(tgkill(getpid(), gettid(), otd_fault_signal()), 0);
    *(int64_t *)out = 7;
}

static void k_nested(void *out)
{
    int64_t inner_out = 0;
    void *args[1] = {&inner_out};
    otd_fault f;

    *(otm_status *)out = otd_kernel_call_guarded((void *)k_set, args, 1, &f);
}

/* ------------------------------------------------------------------------ */
/* Arguments                                                                 */

/* First in the list: before any install, guarded calls are refused. */
static void test_before_install(void **state)
{
    otd_fault f = untouched();
    int64_t out = 0;
    void *args[1] = {&out};

    assert_int_equal(otd_kernel_call_guarded((void *)k_set, args, 1, &f),
                     OTM_ERR_INVALID);
    assert_int_equal(out, 0);
}

static void test_bad_arguments(void **state)
{
    char longer[130];
    otd_fault f = untouched(), before = untouched();
    int64_t out = 0;
    void *args[1] = {&out};

    assert_int_equal(otd_fault_install(-1, PREFIX), OTM_ERR_INVALID);
    assert_int_equal(otd_fault_install(STDERR_FILENO, NULL), OTM_ERR_INVALID);
    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    assert_int_equal(otd_fault_install(STDERR_FILENO, longer),
                     OTM_ERR_INVALID);
    longer[120] = '\0';
    assert_int_equal(otd_fault_install(STDERR_FILENO, longer), OTM_OK);
    install();
    install(); /* idempotent */

    assert_int_equal(otd_kernel_call_guarded(NULL, args, 1, &f),
                     OTM_ERR_INVALID);
    assert_int_equal(otd_kernel_call_guarded((void *)k_set, args, 1, NULL),
                     OTM_ERR_INVALID);
    assert_int_equal(otd_kernel_call_guarded((void *)k_set, NULL, 1, &f),
                     OTM_ERR_INVALID);
    assert_int_equal(otd_kernel_call_guarded((void *)k_set, args, 5000, &f),
                     OTM_ERR_INVALID);
    assert_memory_equal(&f, &before, sizeof(f));
    assert_int_equal(otd_fault_hook_exit(NULL), OTM_ERR_INVALID);
    assert_true(otd_fault_signal() >= SIGRTMIN &&
                otd_fault_signal() <= SIGRTMAX);
    assert_usable();
}

/* ------------------------------------------------------------------------ */
/* Faults on the calling thread                                              */

static void test_returns(void **state)
{
    int64_t out = 0;
    otd_fault f = untouched(), before = untouched();

    install();
    assert_int_equal(call1(k_set, &out, &f), OTM_OK);
    assert_int_equal(out, 42);
    assert_memory_equal(&f, &before, sizeof(f));
    /* The signal mask is what it was. */
    {
        sigset_t set;

        assert_int_equal(pthread_sigmask(SIG_SETMASK, NULL, &set), 0);
        assert_false(sigismember(&set, SIGSEGV));
        assert_false(sigismember(&set, otd_fault_signal()));
    }
}

static void test_null(void **state)
{
    otd_fault f = untouched();

    install();
    assert_int_equal(call1(k_store, NULL, &f), OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.signo, SIGSEGV);
    assert_int_equal(f.code, SEGV_MAPERR);
    assert_int_equal(f.addr, 0);
    assert_int_equal(f.foreign, 0);
    assert_usable();
    /* And again: nothing of the first fault is left over. */
    f = untouched();
    assert_int_equal(call1(k_store, (void *)16, &f), OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.signo, SIGSEGV);
    assert_int_equal(f.addr, 16);
    assert_usable();
}

static void test_read_only_page(void **state)
{
    long page = sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    otd_fault f = untouched();

    install();
    assert_true(p != MAP_FAILED);
    assert_int_equal(call1(k_store, p, &f), OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.signo, SIGSEGV);
    assert_int_equal(f.code, SEGV_ACCERR);
    assert_int_equal(f.addr, (uint64_t)(uintptr_t)p);
    assert_int_equal(f.foreign, 0);
    assert_int_equal(munmap(p, (size_t)page), 0);
    assert_usable();
}

/* The retry hook: asked with the address and whether it was a write; its
 * yes lets the store run again (here: the page made writable), its no
 * reports the fault as before. */
typedef struct retry_log {
    uint64_t addr;
    int write, calls, fix;
    size_t len;
} retry_log;

static int retry_store(void *ctx, uint64_t addr, int write)
{
    retry_log *l = ctx;
    l->addr = addr, l->write = write, l->calls++;
    if (!l->fix)
        return 0;
    l->fix = 0;
    return mprotect((void *)(uintptr_t)(addr & ~(uint64_t)(l->len - 1)), l->len,
                    PROT_READ | PROT_WRITE) == 0;
}

static void test_retry_hook(void **state)
{
    long page = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    retry_log l = {.fix = 1, .len = (size_t)page};
    otd_fault f = untouched();

    (void)state;
    install();
    assert_true(p != MAP_FAILED);
    otd_fault_set_retry(retry_store, &l);
    assert_int_equal(call1(k_store, p + 8, &f), OTM_OK);
    assert_int_equal(l.calls, 1);
    assert_int_equal(l.addr, (uint64_t)(uintptr_t)(p + 8));
    assert_int_equal(l.write, 1);
    assert_int_equal(p[8], 1);
    /* Read-only again, and the hook says no: the fault is reported. */
    assert_int_equal(mprotect(p, (size_t)page, PROT_READ), 0);
    assert_int_equal(call1(k_store, p + 8, &f), OTM_ERR_KERNEL_FAULT);
    assert_int_equal(l.calls, 2);
    assert_int_equal(f.code, SEGV_ACCERR);
    /* A NULL store asks it as a read-or-unknown access (SEGV_MAPERR). */
    f = untouched();
    assert_int_equal(call1(k_store, NULL, &f), OTM_ERR_KERNEL_FAULT);
    assert_int_equal(l.calls, 3);
    assert_int_equal(l.write, 0);
    otd_fault_set_retry(NULL, NULL);
    assert_int_equal(call1(k_store, p, &f), OTM_ERR_KERNEL_FAULT);
    assert_int_equal(l.calls, 3);
    assert_int_equal(munmap(p, (size_t)page), 0);
    assert_usable();
}

static void test_divide_by_zero(void **state)
{
    int out = -1;
    void *args[3] = {&out, (void *)(intptr_t)1, (void *)(intptr_t)0};
    otd_fault f = untouched();

    install();
    assert_int_equal(otd_kernel_call_guarded((void *)k_divide, args, 3, &f),
                     OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.signo, SIGFPE);
    assert_int_equal(f.code, FPE_INTDIV);
    assert_true(f.addr != 0); /* the dividing instruction */
    assert_int_equal(out, -1);
    /* The same kernel with a divisor. */
    args[2] = (void *)(intptr_t)1;
    assert_int_equal(otd_kernel_call_guarded((void *)k_divide, args, 3, &f),
                     OTM_OK);
    assert_int_equal(out, 1);
    assert_usable();
}

static void test_abort(void **state)
{
    otd_fault f = untouched();

    install();
    assert_int_equal(otd_kernel_call_guarded((void *)k_abort, NULL, 0, &f),
                     OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.signo, SIGABRT);
    assert_true(f.code <= 0); /* sent by abort, not by the hardware */
    assert_int_equal(f.addr, 0);
    assert_int_equal(f.foreign, 0);
    assert_usable();
    /* abort() works again too. */
    assert_int_equal(otd_kernel_call_guarded((void *)k_abort, NULL, 0, &f),
                     OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.signo, SIGABRT);
    assert_usable();
}

typedef struct overflow_run {
    otm_status st, again;
    otd_fault f;
} overflow_run;

static void *overflow_thread(void *arg)
{
    overflow_run *r = arg;
    int out = 0;

    r->st = call1(k_overflow, &out, &r->f);
    r->again = call1(k_overflow, &out, &r->f);
    assert_usable();
    return NULL;
}

/* On a thread with a small stack of known size, so that the overflow does
 * not depend on the main thread's stack limit. */
static void test_stack_overflow(void **state)
{
    pthread_attr_t attr;
    pthread_t t;
    overflow_run r;

    install();
    memset(&r, 0, sizeof(r));
    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
    assert_int_equal(pthread_create(&t, &attr, overflow_thread, &r), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&attr);
    assert_int_equal(r.st, OTM_ERR_KERNEL_FAULT);
    assert_int_equal(r.again, OTM_ERR_KERNEL_FAULT);
    assert_int_equal(r.f.signo, SIGSEGV);
    assert_int_equal(r.f.foreign, 0);
    assert_true(r.f.addr != 0);
    assert_usable();
}

static void test_kick_ignored(void **state)
{
    int64_t out = 0;
    otd_fault f = untouched(), before = untouched();

    install();
    /* Outside a guarded call, and inside one that nothing was recorded
     * for: the internal signal does nothing. */
    assert_int_equal(tgkill(getpid(), gettid(), otd_fault_signal()), 0);
    assert_int_equal(call1(k_kick_self, &out, &f), OTM_OK);
    assert_int_equal(out, 7);
    assert_memory_equal(&f, &before, sizeof(f));
    assert_usable();
}

static void test_no_nesting(void **state)
{
    otm_status inner = OTM_OK;
    otd_fault f = untouched();

    install();
    assert_int_equal(call1(k_nested, &inner, &f), OTM_OK);
    assert_int_equal(inner, OTM_ERR_BUSY);
    assert_usable();
}

/* ------------------------------------------------------------------------ */
/* Exit functions of a hooked image                                          */

typedef struct exit_case {
    const char *symbol;
    intptr_t status;
    int32_t by;
} exit_case;

static const exit_case exit_cases[] = {
    {"fxf_exit", 7, OTM_FAULT_BY_EXIT},
    {"fxf__exit", 3, OTM_FAULT_BY__EXIT},
    {"fxf__Exit", 4, OTM_FAULT_BY__EXIT_C99},
    {"fxf_quick_exit", 5, OTM_FAULT_BY_QUICK_EXIT},
    {"fxf_exit_by_address", 6, OTM_FAULT_BY_EXIT},
    {"fxf_exit_by_table", 8, OTM_FAULT_BY_EXIT},
};

/* "start-end perms" of every mapping of the library at path. */
typedef struct mapping {
    uintptr_t start, end;
    char perms[5];
} mapping;

static size_t read_mappings(const char *path, mapping *out, size_t max)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    size_t n = 0;

    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long s, e;
        char perms[5];

        if (strstr(line, path) == NULL)
            continue;
        assert_int_equal(sscanf(line, "%lx-%lx %4s", &s, &e, perms), 3);
        assert_true(n < max);
        out[n].start = s;
        out[n].end = e;
        memcpy(out[n].perms, perms, sizeof(perms));
        n++;
    }
    fclose(f);
    return n;
}

static const char *perms_at(const mapping *m, size_t n, uintptr_t addr)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (addr >= m[i].start && addr < m[i].end)
            return m[i].perms;
    return "none";
}

/* Every page of the library keeps its protection across the hook (the
 * read-only slots are made read-only again). Returns the number of
 * read-only data pages seen, so that the caller can tell RELRO was there. */
static size_t assert_hook_keeps_protection(void *h, const char *path)
{
    mapping before[32], after[32];
    size_t nb, na, i, read_only = 0;
    uintptr_t a;
    long page = sysconf(_SC_PAGESIZE);

    nb = read_mappings(path, before, 32);
    assert_true(nb > 0);
    assert_int_equal(otd_fault_hook_exit(h), OTM_OK);
    na = read_mappings(path, after, 32);
    for (i = 0; i < nb; i++) {
        if (strcmp(before[i].perms, "r--p") == 0)
            read_only++;
        for (a = before[i].start; a < before[i].end; a += (uintptr_t)page)
            assert_string_equal(perms_at(after, na, a), before[i].perms);
    }
    return read_only;
}

static void check_exits(const char *path)
{
    void *h = open_fixture(path);
    size_t i;
    otd_fault f;
    int64_t out = 0;

    install();
    assert_true(assert_hook_keeps_protection(h, path) > 0);
    /* Hooking again changes nothing. */
    assert_int_equal(otd_fault_hook_exit(h), OTM_OK);
    for (i = 0; i < sizeof(exit_cases) / sizeof(exit_cases[0]); i++) {
        f = untouched();
        assert_int_equal(call1(fixture_symbol(h, exit_cases[i].symbol),
                               (void *)exit_cases[i].status, &f),
                         OTM_ERR_KERNEL_FAULT);
        assert_int_equal(f.signo, 0);
        assert_int_equal(f.code, exit_cases[i].by);
        assert_int_equal(f.exit_status, exit_cases[i].status);
        assert_int_equal(f.addr, 0);
        assert_int_equal(f.foreign, 0);
        assert_usable();
    }
    /* The image's other kernels are untouched. */
    assert_int_equal(call1(fixture_symbol(h, "fxf_set"), &out, &f), OTM_OK);
    assert_int_equal(out, 42);
    assert_int_equal(dlclose(h), 0);
}

static void test_exit_lazy(void **state)
{
    check_exits(FIXTURE_FAULT_PATH);
}

static void test_exit_now(void **state)
{
    check_exits(FIXTURE_FAULT_NOW_PATH);
}

/* A library that imports no exit function: nothing to do. */
static void test_exit_none(void **state)
{
    void *h = open_fixture(FIXTURE_PLAIN_PATH);

    assert_int_equal(otd_fault_hook_exit(h), OTM_OK);
    assert_int_equal(dlclose(h), 0);
}

/* ------------------------------------------------------------------------ */
/* Faults on other threads                                                   */

static void test_fault_in_kernel_thread(void **state)
{
    otd_fault f = untouched();

    install();
    assert_int_equal(
        otd_kernel_call_guarded((void *)k_fault_in_thread, NULL, 0, &f),
        OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.signo, SIGSEGV);
    assert_int_equal(f.code, SEGV_MAPERR);
    assert_int_equal(f.addr, 0);
    assert_int_equal(f.foreign, 1);
    assert_usable();
    /* A second one: the record of the first does not stand in for it. */
    f = untouched();
    assert_int_equal(
        otd_kernel_call_guarded((void *)k_fault_in_thread, NULL, 0, &f),
        OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.foreign, 1);
    assert_usable();
}

/* A fork's child knows its own thread: a fault on a thread its kernel
 * started interrupts the child's call, not a thread of the parent's (the
 * guard caches the thread's id). The parent's calls come first, so that
 * the child inherits a guard that knows the parent's id. */
static void test_fault_in_kernel_thread_after_fork(void **state)
{
    otd_fault f = untouched();
    int status = -1;
    pid_t pid;

    install();
    assert_int_equal(
        otd_kernel_call_guarded((void *)k_fault_in_thread, NULL, 0, &f),
        OTM_ERR_KERNEL_FAULT);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(60); /* a kick gone astray would leave the child waiting */
        f = untouched();
        _exit(otd_kernel_call_guarded((void *)k_fault_in_thread, NULL, 0,
                                      &f) == OTM_ERR_KERNEL_FAULT &&
                      f.foreign == 1 && f.signo == SIGSEGV
                  ? 0
                  : 1);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_usable();
}

/* The kernel blocks the internal signal and takes it itself, so its guarded
 * call is not interrupted: the fault recorded for it is still its result. */
static void k_fault_in_thread_unseen(void *done)
{
    sigset_t kick;
    pthread_t t;

    sigemptyset(&kick);
    sigaddset(&kick, otd_fault_signal());
    assert_int_equal(pthread_sigmask(SIG_BLOCK, &kick, NULL), 0);
    assert_int_equal(pthread_create(&t, NULL, store_null, NULL), 0);
    assert_int_equal(sigwaitinfo(&kick, NULL), otd_fault_signal());
    *(int *)done = 1; /* returns normally */
}

static void test_fault_recorded_after_kernel(void **state)
{
    otd_fault f = untouched();
    int done = 0;
    sigset_t mask;

    install();
    assert_int_equal(call1(k_fault_in_thread_unseen, &done, &f),
                     OTM_ERR_KERNEL_FAULT);
    assert_int_equal(done, 1);
    assert_int_equal(f.signo, SIGSEGV);
    assert_int_equal(f.addr, 0);
    assert_int_equal(f.foreign, 1);
    /* The kernel's change of the mask is undone. */
    assert_int_equal(pthread_sigmask(SIG_SETMASK, NULL, &mask), 0);
    assert_false(sigismember(&mask, otd_fault_signal()));
    assert_usable();
}

static void test_exit_in_kernel_thread(void **state)
{
    void *h = open_fixture(FIXTURE_FAULT_PATH);
    otd_fault f = untouched();

    install();
    assert_int_equal(otd_fault_hook_exit(h), OTM_OK);
    assert_int_equal(call1(fixture_symbol(h, "fxf_exit_in_thread"),
                           (void *)(intptr_t)9, &f),
                     OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.signo, 0);
    assert_int_equal(f.code, OTM_FAULT_BY_EXIT);
    assert_int_equal(f.exit_status, 9);
    assert_int_equal(f.foreign, 1);
    assert_usable();
    /* The parked thread still runs the image's code: keep it loaded. */
}

/* A kernel that faults while a thread of its own still runs: the thread
 * faults once the guarded call has returned (as the other threads of a
 * teams loop writing through the NULL its master wrote through first). */
static atomic_int team_go;
static atomic_long team_tid;

static void *team_member(void *unused)
{
    atomic_store(&team_tid, (long)gettid());
    while (!atomic_load(&team_go))
        sched_yield();
    k_store(NULL);
    return NULL;
}

static void k_fault_leaving_a_thread(void)
{
    pthread_t t;

    assert_int_equal(pthread_create(&t, NULL, team_member, NULL), 0);
    assert_int_equal(pthread_detach(t), 0);
    while (atomic_load(&team_tid) == 0)
        sched_yield();
    k_store(NULL);
}

/* 1 once thread `tid` of this process blocks SIGSEGV: parked (its
 * handler left it with every signal blocked). */
static int blocks_sigsegv(long tid)
{
    char path[64], line[256];
    unsigned long long blocked = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/task/%ld/status", tid);
    f = fopen(path, "r");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "SigBlk: %llx", &blocked) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return (blocked >> (SIGSEGV - 1)) & 1;
}

static void test_fault_after_its_kernel_ended(void **state)
{
    otd_fault f = untouched();

    install();
    assert_int_equal(
        otd_kernel_call_guarded((void *)k_fault_leaving_a_thread, NULL, 0, &f),
        OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.foreign, 0);
    atomic_store(&team_go, 1);
    /* Its fault parks it (it would kill the process): waited for. */
    for (int i = 0; !blocks_sigsegv(atomic_load(&team_tid)); i++) {
        assert_true(i < 10000);
        usleep(1000);
    }
    assert_usable();
}

#define THREADS 4

typedef struct group {
    pthread_barrier_t all_inside; /* every thread is in its guarded call */
    int faulty;                   /* the index of the thread that faults */
    int wait_for_kick;            /* the others wait until interrupted */
    atomic_int waiting;           /* how many of them are past the barrier */
} group;

typedef struct member {
    group *g;
    int index;
    otm_status st;
    otd_fault f;
    int64_t out;
} member;

/* Interrupted threads leave their kernel where they are; none may be
 * inside pthread_barrier_wait then (pthread_barrier_destroy would wait for
 * it for ever), so the foreign fault waits until the others are past it. */
static void k_member(void *arg)
{
    member *m = arg;
    group *g = m->g;

    pthread_barrier_wait(&g->all_inside);
    if (m->index != g->faulty && g->wait_for_kick) {
        atomic_fetch_add(&g->waiting, 1);
        for (;;)
            pause();
    }
    if (m->index == g->faulty && g->wait_for_kick) {
        while (atomic_load(&g->waiting) < THREADS - 1)
            sched_yield();
        k_fault_in_thread();
    } else if (m->index == g->faulty) {
        k_store(NULL);
    }
    m->out = 42;
}

static void *member_thread(void *arg)
{
    member *m = arg;

    m->f = untouched();
    m->st = call1(k_member, m, &m->f);
    assert_usable();
    return NULL;
}

static void run_group(group *g, member *m)
{
    pthread_t t[THREADS];
    int i;

    assert_int_equal(pthread_barrier_init(&g->all_inside, NULL, THREADS), 0);
    atomic_init(&g->waiting, 0);
    for (i = 0; i < THREADS; i++) {
        m[i].g = g;
        m[i].index = i;
        m[i].out = 0;
        assert_int_equal(pthread_create(&t[i], NULL, member_thread, &m[i]),
                         0);
    }
    for (i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&g->all_inside);
}

/* One of several guarded threads faults on its own thread: only its call
 * fails. */
static void test_several_threads(void **state)
{
    group g = {.faulty = 2, .wait_for_kick = 0};
    member m[THREADS];
    otd_fault before = untouched();
    int i;

    install();
    run_group(&g, m);
    for (i = 0; i < THREADS; i++) {
        if (i == g.faulty) {
            assert_int_equal(m[i].st, OTM_ERR_KERNEL_FAULT);
            assert_int_equal(m[i].f.signo, SIGSEGV);
            assert_int_equal(m[i].f.foreign, 0);
            assert_int_equal(m[i].out, 0);
        } else {
            assert_int_equal(m[i].st, OTM_OK);
            assert_int_equal(m[i].out, 42);
            assert_memory_equal(&m[i].f, &before, sizeof(before));
        }
    }
    assert_usable();
}

/* A thread started by one of several guarded kernels faults: nothing tells
 * whose it is, so every guarded call is interrupted with it. */
static void test_several_threads_foreign(void **state)
{
    group g = {.faulty = 1, .wait_for_kick = 1};
    member m[THREADS];
    int i;

    install();
    run_group(&g, m);
    for (i = 0; i < THREADS; i++) {
        assert_int_equal(m[i].st, OTM_ERR_KERNEL_FAULT);
        assert_int_equal(m[i].f.signo, SIGSEGV);
        assert_int_equal(m[i].f.addr, 0);
        assert_int_equal(m[i].f.foreign, 1);
    }
    assert_usable();
}

/* ------------------------------------------------------------------------ */
/* Descriptions                                                              */

static void assert_describes(otd_fault f, const char *want)
{
    char buf[256];

    assert_ptr_equal(otd_fault_describe(&f, buf, sizeof(buf)), buf);
    assert_string_equal(buf, want);
}

static otd_fault fault_of(int32_t signo, int32_t code, uint64_t addr)
{
    otd_fault f;

    memset(&f, 0, sizeof(f));
    f.signo = signo;
    f.code = code;
    f.addr = addr;
    return f;
}

static otd_fault exit_of(int32_t by, int32_t status)
{
    otd_fault f = fault_of(0, by, 0);

    f.exit_status = status;
    return f;
}

/* Every si_code the module names, with its phrase: the host builds its
 * message from these fields alone. */
static void test_describe_every_code(void **state)
{
    static const struct {
        int32_t signo, code;
        const char *phrase;
    } codes[] = {
        {SIGSEGV, SEGV_MAPERR, "address not mapped to object"},
        {SIGSEGV, SEGV_ACCERR, "invalid permissions for mapped object"},
        {SIGSEGV, SEGV_BNDERR, "failed address bound checks"},
        {SIGSEGV, SEGV_PKUERR, "failed protection key checks"},
        {SIGBUS, BUS_ADRALN, "invalid address alignment"},
        {SIGBUS, BUS_ADRERR, "nonexistent physical address"},
        {SIGBUS, BUS_OBJERR, "object-specific hardware error"},
        {SIGBUS, BUS_MCEERR_AR, "hardware memory error consumed"},
        {SIGBUS, BUS_MCEERR_AO, "hardware memory error detected"},
        {SIGFPE, FPE_INTDIV, "integer divide by zero"},
        {SIGFPE, FPE_INTOVF, "integer overflow"},
        {SIGFPE, FPE_FLTDIV, "floating-point divide by zero"},
        {SIGFPE, FPE_FLTOVF, "floating-point overflow"},
        {SIGFPE, FPE_FLTUND, "floating-point underflow"},
        {SIGFPE, FPE_FLTRES, "floating-point inexact result"},
        {SIGFPE, FPE_FLTINV, "floating-point invalid operation"},
        {SIGFPE, FPE_FLTSUB, "subscript out of range"},
        {SIGILL, ILL_ILLOPC, "illegal opcode"},
        {SIGILL, ILL_ILLOPN, "illegal operand"},
        {SIGILL, ILL_ILLADR, "illegal addressing mode"},
        {SIGILL, ILL_ILLTRP, "illegal trap"},
        {SIGILL, ILL_PRVOPC, "privileged opcode"},
        {SIGILL, ILL_PRVREG, "privileged register"},
        {SIGILL, ILL_COPROC, "coprocessor error"},
        {SIGILL, ILL_BADSTK, "internal stack error"},
        {SIGBUS, SI_TKILL, "sent by tkill or raise"},
        {SIGILL, SI_QUEUE, "sent by sigqueue"},
    };
    char buf[256];

    (void)state;
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        otd_fault f = fault_of(codes[i].signo, codes[i].code, 0x40);

        otd_fault_describe(&f, buf, sizeof(buf));
        if (strstr(buf, codes[i].phrase) == NULL)
            fail_msg("signal %d code %d: \"%s\" lacks \"%s\"", codes[i].signo,
                     codes[i].code, buf, codes[i].phrase);
    }
}

static void test_describe(void **state)
{
    otd_fault f;
    char buf[64];

    assert_describes(fault_of(SIGSEGV, SEGV_MAPERR, 0),
                     "SIGSEGV (address not mapped to object) at address 0x0");
    assert_describes(fault_of(SIGSEGV, SEGV_ACCERR, 0x7f00dead1000),
                     "SIGSEGV (invalid permissions for mapped object) at "
                     "address 0x7f00dead1000");
    assert_describes(fault_of(SIGFPE, FPE_INTDIV, 0x401234),
                     "SIGFPE (integer divide by zero) at address 0x401234");
    assert_describes(fault_of(SIGBUS, BUS_ADRALN, 0x11),
                     "SIGBUS (invalid address alignment) at address 0x11");
    assert_describes(fault_of(SIGILL, ILL_ILLOPN, 0x1000),
                     "SIGILL (illegal operand) at address 0x1000");
    assert_describes(fault_of(SIGABRT, SI_TKILL, 0), "SIGABRT (abort)");
    assert_describes(fault_of(SIGABRT, SI_USER, 0), "SIGABRT (sent by kill)");
    assert_describes(fault_of(SIGSEGV, SI_USER, 0x1234),
                     "SIGSEGV (sent by kill)");
    assert_describes(exit_of(OTM_FAULT_BY_EXIT, 7), "exit(7)");
    assert_describes(exit_of(OTM_FAULT_BY__EXIT, 3), "_exit(3)");
    assert_describes(exit_of(OTM_FAULT_BY__EXIT_C99, -1), "_Exit(-1)");
    assert_describes(exit_of(OTM_FAULT_BY_QUICK_EXIT, 0), "quick_exit(0)");
    assert_describes(exit_of(99, INT32_MIN), "exit(-2147483648)");
    /* Values no worker sends, as a peer might. */
    assert_describes(fault_of(40, 1, 5), "signal 40 (code 1)");
    assert_describes(fault_of(-3, INT32_MIN, 0),
                     "signal -3 (code -2147483648)");
    assert_describes(fault_of(SIGSEGV, 99, UINT64_MAX),
                     "SIGSEGV (code 99) at address 0xffffffffffffffff");
    assert_describes(fault_of(SIGBUS, 99, 0x8), "SIGBUS (code 99) at address 0x8");
    assert_describes(fault_of(SIGFPE, 99, 0x8), "SIGFPE (code 99) at address 0x8");
    assert_describes(fault_of(SIGILL, 99, 0x8), "SIGILL (code 99) at address 0x8");
    /* SIGABRT is sent, never raised by an instruction: no address. */
    assert_describes(fault_of(SIGABRT, 1, 0x8), "SIGABRT (abort)");
    f = fault_of(SIGSEGV, SEGV_MAPERR, 0x10);
    f.foreign = 1;
    assert_describes(f, "SIGSEGV (address not mapped to object) at address "
                        "0x10 in another thread of the region");
    f = exit_of(OTM_FAULT_BY_EXIT, 2);
    f.foreign = 1;
    assert_describes(f, "exit(2) in another thread of the region");

    assert_ptr_equal(otd_fault_describe(NULL, buf, sizeof(buf)), buf);
    assert_string_equal(buf, "no fault");
    /* Truncated, NUL-terminated; nothing written without room. */
    f = fault_of(SIGSEGV, SEGV_MAPERR, 0);
    assert_string_equal(otd_fault_describe(&f, buf, 8), "SIGSEGV");
    assert_string_equal(otd_fault_describe(&f, buf, 1), "");
    memset(buf, 'z', sizeof(buf));
    assert_ptr_equal(otd_fault_describe(&f, buf, 0), buf);
    assert_int_equal(buf[0], 'z');
    assert_null(otd_fault_describe(&f, NULL, 16));
}

/* ------------------------------------------------------------------------ */
/* Faults outside guarded calls, in a child                                  */

typedef enum outside_kind {
    OUTSIDE_NULL,        /* on the thread that installed */
    OUTSIDE_DIVIDE,
    OUTSIDE_THREAD,      /* on another thread, no guarded call active */
    OUTSIDE_EXIT,        /* a hooked image's exit() outside guarded calls */
    OUTSIDE__EXIT
} outside_kind;

typedef struct outcome {
    int status;     /* from waitpid */
    char line[512]; /* what the child wrote to the pipe */
} outcome;

static _Noreturn void run_outside(outside_kind kind, int fd)
{
    struct rlimit no_core = {0, 0};
    pthread_t t;
    void *h;
    int out;

    setrlimit(RLIMIT_CORE, &no_core); /* no core file in the build tree */
    if (otd_fault_install(fd, PREFIX) != OTM_OK)
        _exit(90);
    switch (kind) {
    case OUTSIDE_NULL:
        k_store(NULL);
        break;
    case OUTSIDE_DIVIDE: {
        /* A kernel called without a guard, as before this module. */
        void *args[3] = {&out, (void *)(intptr_t)1, (void *)(intptr_t)0};

        otd_kernel_call((void *)k_divide, args, 3);
        break;
    }
    case OUTSIDE_THREAD:
        if (pthread_create(&t, NULL, store_null, NULL) == 0)
            pthread_join(t, NULL);
        break;
    case OUTSIDE_EXIT:
    case OUTSIDE__EXIT:
        h = dlopen(FIXTURE_FAULT_NOW_PATH, RTLD_NOW | RTLD_LOCAL);
        if (h == NULL || otd_fault_hook_exit(h) != OTM_OK)
            _exit(91);
        ((void (*)(void *))dlsym(h, kind == OUTSIDE_EXIT
                                        ? "fxf_exit"
                                        : "fxf__exit"))((void *)(intptr_t)7);
        break;
    }
    _exit(92); /* not reached when the fault kills us */
}

static outcome run_child(outside_kind kind)
{
    outcome o;
    int fds[2];
    pid_t pid;
    size_t got = 0;
    ssize_t n;

    memset(&o, 0, sizeof(o));
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        run_outside(kind, fds[1]);
    }
    close(fds[1]);
    while ((n = read(fds[0], o.line + got, sizeof(o.line) - 1 - got)) > 0)
        got += (size_t)n;
    close(fds[0]);
    o.line[got] = '\0';
    assert_int_equal(waitpid(pid, &o.status, 0), pid);
    return o;
}

static void assert_died(const outcome *o, int signo, const char *line)
{
    assert_true(WIFSIGNALED(o->status));
    assert_int_equal(WTERMSIG(o->status), signo);
    assert_string_equal(o->line, line);
}

static void test_outside_guarded_calls(void **state)
{
    outcome o;
    const char *fpe = PREFIX "SIGFPE (integer divide by zero) at address 0x";

    o = run_child(OUTSIDE_NULL);
    assert_died(&o, SIGSEGV,
                PREFIX "SIGSEGV (address not mapped to object) at address "
                       "0x0" OUTSIDE);
    o = run_child(OUTSIDE_THREAD);
    assert_died(&o, SIGSEGV,
                PREFIX "SIGSEGV (address not mapped to object) at address "
                       "0x0" OUTSIDE);
    o = run_child(OUTSIDE_DIVIDE);
    assert_true(WIFSIGNALED(o.status));
    assert_int_equal(WTERMSIG(o.status), SIGFPE);
    assert_memory_equal(o.line, fpe, strlen(fpe));
    assert_non_null(strstr(o.line, OUTSIDE));
    /* Outside guarded calls, the image's exit functions are libc's. */
    o = run_child(OUTSIDE_EXIT);
    assert_true(WIFEXITED(o.status));
    assert_int_equal(WEXITSTATUS(o.status), 7);
    assert_string_equal(o.line, "");
    o = run_child(OUTSIDE__EXIT);
    assert_true(WIFEXITED(o.status));
    assert_int_equal(WEXITSTATUS(o.status), 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_before_install),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_returns),
        cmocka_unit_test(test_null),
        cmocka_unit_test(test_read_only_page),
        cmocka_unit_test(test_retry_hook),
        cmocka_unit_test(test_divide_by_zero),
        cmocka_unit_test(test_abort),
        cmocka_unit_test(test_stack_overflow),
        cmocka_unit_test(test_kick_ignored),
        cmocka_unit_test(test_no_nesting),
        cmocka_unit_test(test_exit_lazy),
        cmocka_unit_test(test_exit_now),
        cmocka_unit_test(test_exit_none),
        cmocka_unit_test(test_fault_in_kernel_thread),
        cmocka_unit_test(test_fault_in_kernel_thread_after_fork),
        cmocka_unit_test(test_fault_recorded_after_kernel),
        cmocka_unit_test(test_exit_in_kernel_thread),
        cmocka_unit_test(test_several_threads),
        cmocka_unit_test(test_several_threads_foreign),
        cmocka_unit_test(test_fault_after_its_kernel_ended),
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_describe_every_code),
        cmocka_unit_test(test_outside_guarded_calls),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
