/*
 * test_fault_failures.c - guarded kernel calls (otm/fault.h) when the
 * system refuses and at their limits: no thread-specific key left at the
 * first install, a handler that cannot be installed, each call that makes
 * a thread's state and alternate stack failing in turn (failpoints.h), the
 * 65th concurrent guarded call; a thread that has an alternate stack of
 * its own, or takes one after its first call; a caller that blocks the
 * fault signals; the kick reaching a thread that never made a guarded
 * call; a fork from a thread that never made one. And otd_fault_hook_exit
 * when dlinfo or mprotect fails, for images whose dynamic section is not
 * what it should be (the loader's answer replaced, failpoints.h), and the
 * hooked exit functions called outside any guarded call, which must end
 * the process as libc's would (in children).
 *
 * cmocka replaces the handlers of SIGSEGV, SIGBUS, SIGFPE and SIGILL around
 * each test, so every test installs ours again first.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "failpoints.h"
#include "otm/fault.h"

#define PREFIX "omptarget-mpi: rank 1 (device 0): "
#define SLOTS 64    /* concurrent guarded calls (otm/fault.h) */

static void install(void)
{
    assert_int_equal(otd_fault_install(STDERR_FILENO, PREFIX), OTM_OK);
}

static void k_set(void *out)
{
    *(int64_t *)out = 42;
}

__attribute__((noinline)) static void k_store(void *p)
{
    *(volatile int *)p = 1;
}

static otm_status call1(void (*fn)(void *), void *arg, otd_fault *f)
{
    void *args[1] = {arg};

    return otd_kernel_call_guarded((void *)fn, args, 1, f);
}

/* A guarded k_set on the calling thread works. */
static void assert_usable(void)
{
    int64_t out = 0;
    otd_fault f;

    assert_int_equal(call1(k_set, &out, &f), OTM_OK);
    assert_int_equal(out, 42);
}

/* Runs fn on a new thread and returns what it returned. */
static void *on_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    void *ret = NULL;

    assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
    assert_int_equal(pthread_join(t, &ret), 0);
    return ret;
}

#ifdef OTM_COVERAGE
void __gcov_dump(void);
#endif

/* Runs fn in a forked child; returns its wait status. */
static int in_child(void (*fn)(void))
{
    int status = 0;

    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        fn();
#ifdef OTM_COVERAGE
        __gcov_dump();
#endif
        _exit(0);
    }
    while (waitpid(pid, &status, 0) < 0)
        assert_int_equal(errno, EINTR);
    return status;
}

static void child_check(int ok, int line)
{
    if (!ok) {
        fprintf(stderr, "test_fault_failures.c:%d: check failed\n", line);
        fflush(stderr);
        _exit(1);
    }
}
#define CHECK(c) child_check(!!(c), __LINE__)

/* ------------------------------------------------------------------------ */
/* Installing                                                                */

/* The first install finds no thread-specific key left: refused for lack
 * of memory, and guarded calls stay refused. In a child, first of all:
 * the key is made once per process. */
static void child_no_key(void)
{
    int64_t out = 0;
    otd_fault f;

    fp_fail(FP_PTHREAD_KEY_CREATE, 1, EAGAIN);
    CHECK(otd_fault_install(STDERR_FILENO, PREFIX) == OTM_ERR_NOMEM);
    CHECK(fp_fired(FP_PTHREAD_KEY_CREATE));
    CHECK(call1(k_set, &out, &f) == OTM_ERR_INVALID);
    CHECK(out == 0);
}

static void test_no_key(void **state)
{
    FP_NEEDED();
    (void)state;
    int status = in_child(child_no_key);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Each of the six handlers (five fault signals and the kick) failing to
 * install in turn: OTM_ERR_KERNEL, and before any install succeeded
 * guarded calls stay refused; the next install works. In a child, so
 * that "no install succeeded yet" holds. */
static void child_handler_refused(void)
{
    int64_t out = 0;
    otd_fault f;
    unsigned failures = 0;

    for (unsigned long n = 1; n < 16; n++) {
        fp_fail(FP_SIGACTION, n, EINVAL);
        otm_status st = otd_fault_install(STDERR_FILENO, PREFIX);
        int fired = fp_fired(FP_SIGACTION);
        fp_clear();
        if (!fired) {
            CHECK(st == OTM_OK);
            break;
        }
        failures++;
        CHECK(st == OTM_ERR_KERNEL);
        CHECK(call1(k_set, &out, &f) == OTM_ERR_INVALID);
        CHECK(out == 0);
    }
    CHECK(failures == 6);
    CHECK(call1(k_set, &out, &f) == OTM_OK && out == 42);
    /* A fault is caught once installed. */
    CHECK(call1(k_store, NULL, &f) == OTM_ERR_KERNEL_FAULT && f.signo == SIGSEGV);
}

static void test_handler_refused(void **state)
{
    FP_NEEDED();
    (void)state;
    int status = in_child(child_handler_refused);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* ------------------------------------------------------------------------ */
/* A thread's state and alternate stack                                      */

typedef struct refusal {
    fp_fn fn;
    unsigned long n;
    otm_status st;
} refusal;

/* On a new thread: its first guarded call with r's call failing is
 * refused without running the kernel; the next one works. */
static void *refused_then_works(void *arg)
{
    const refusal *r = arg;
    int64_t out = 0;
    otd_fault f;

    fp_fail(r->fn, r->n, ENOMEM);
    otm_status st = call1(k_set, &out, &f);
    int fired = fp_fired(r->fn);
    fp_clear();
    if (st != r->st || !fired || out != 0)
        return (void *)"refused wrongly";
    if (call1(k_set, &out, &f) != OTM_OK || out != 42)
        return (void *)"not usable after";
    if (call1(k_store, NULL, &f) != OTM_ERR_KERNEL_FAULT || f.signo != SIGSEGV)
        return (void *)"a fault not caught after";
    return NULL;
}

static void test_thread_state_refused(void **state)
{
    FP_NEEDED();
    (void)state;
    static const refusal refusals[] = {
        {FP_CALLOC, 1, OTM_ERR_NOMEM},           /* the thread's record */
        {FP_SIGALTSTACK, 1, OTM_ERR_KERNEL},     /* asking for its stack */
        {FP_MMAP, 1, OTM_ERR_NOMEM},             /* the new stack */
        {FP_MPROTECT, 1, OTM_ERR_NOMEM},         /* its guard page */
        {FP_SIGALTSTACK, 2, OTM_ERR_KERNEL},     /* setting it */
        {FP_PTHREAD_SETSPECIFIC, 1, OTM_ERR_NOMEM},
    };

    install();
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        const char *why = on_thread(refused_then_works, (void *)&refusals[i]);
        if (why)
            fail_msg("%s #%lu: %s", fp_name(refusals[i].fn), refusals[i].n, why);
    }
    assert_usable();
}

/* A thread with an alternate stack of its own keeps it: guarded calls run
 * with it, a fault is handled on it. */
static void *own_stack(void *arg)
{
    (void)arg;
    static char mem[256 * 1024];
    stack_t ss = {.ss_sp = mem, .ss_size = sizeof mem, .ss_flags = 0}, cur;
    int64_t out = 0;
    otd_fault f;

    if (sigaltstack(&ss, NULL) != 0)
        return (void *)"sigaltstack";
    if (call1(k_set, &out, &f) != OTM_OK || out != 42)
        return (void *)"a call failed";
    if (call1(k_store, NULL, &f) != OTM_ERR_KERNEL_FAULT || f.signo != SIGSEGV)
        return (void *)"a fault not caught";
    if (sigaltstack(NULL, &cur) != 0 || cur.ss_sp != mem || (cur.ss_flags & SS_DISABLE))
        return (void *)"its stack was replaced";
    return NULL;
}

static void test_thread_keeps_its_stack(void **state)
{
    (void)state;
    install();
    const char *why = on_thread(own_stack, NULL);
    if (why)
        fail_msg("%s", why);
}

/* A thread that takes a stack of its own after its first guarded call
 * keeps it: calls go on, and its end does not take the stack away. Its
 * last look at the stack, at its end, may fail: nothing is taken then. */
static void *stack_after(void *arg)
{
    static char mem[2][256 * 1024];
    int which = arg != NULL;
    stack_t ss = {.ss_sp = mem[which], .ss_size = sizeof mem[which], .ss_flags = 0}, cur;
    int64_t out = 0;
    otd_fault f;

    if (call1(k_set, &out, &f) != OTM_OK || out != 42)
        return (void *)"first call";
    if (sigaltstack(&ss, NULL) != 0)
        return (void *)"sigaltstack";
    out = 0;
    if (call1(k_set, &out, &f) != OTM_OK || out != 42)
        return (void *)"a call after";
    if (call1(k_store, NULL, &f) != OTM_ERR_KERNEL_FAULT || f.signo != SIGSEGV)
        return (void *)"a fault not caught";
    if (sigaltstack(NULL, &cur) != 0 || cur.ss_sp != mem[which])
        return (void *)"its stack was replaced";
    if (which)
        fp_fail(FP_SIGALTSTACK, 1, EINVAL);     /* at the thread's end */
    return NULL;
}

static void test_thread_takes_a_stack_later(void **state)
{
    FP_NEEDED();
    (void)state;
    install();
    for (int which = 0; which < 2; which++) {
        const char *why = on_thread(stack_after, which ? (void *)1 : NULL);
        if (why)
            fail_msg("%s", why);
    }
    assert_true(fp_fired(FP_SIGALTSTACK));
    fp_clear();
    assert_usable();
}

/* A caller that blocks SIGSEGV: the kernel's fault is still caught (the
 * call lets the fault signals in), and the caller's mask comes back with
 * SIGSEGV blocked, call after call. */
static void *blocks_segv(void *arg)
{
    (void)arg;
    sigset_t set, now;
    int64_t out = 0;
    otd_fault f;

    sigemptyset(&set);
    sigaddset(&set, SIGSEGV);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    for (int i = 0; i < 3; i++) {
        if (call1(k_store, NULL, &f) != OTM_ERR_KERNEL_FAULT || f.signo != SIGSEGV)
            return (void *)"a fault not caught";
        pthread_sigmask(SIG_BLOCK, NULL, &now);
        if (sigismember(&now, SIGSEGV) != 1)
            return (void *)"the caller's mask was not restored";
        out = 0;
        if (call1(k_set, &out, &f) != OTM_OK || out != 42)
            return (void *)"a call failed";
    }
    return NULL;
}

static void test_caller_blocks_faults(void **state)
{
    (void)state;
    install();
    const char *why = on_thread(blocks_segv, NULL);
    if (why)
        fail_msg("%s", why);
}

/* The kick signal on a thread that never made a guarded call does
 * nothing: the thread goes on. */
static void *kicked(void *arg)
{
    (void)arg;
    raise(otd_fault_signal());
    return (void *)"went on";
}

static void test_kick_without_a_call(void **state)
{
    (void)state;
    install();
    assert_string_equal(on_thread(kicked, NULL), "went on");
    assert_usable();
}

/* A fork from a thread that never made a guarded call: the child has no
 * guard to forget, and runs on. */
static void *forks(void *arg)
{
    (void)arg;
    int status = 0;
    pid_t pid = fork();
    if (pid == 0) {
#ifdef OTM_COVERAGE
        __gcov_dump();
#endif
        _exit(3);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return (void *)"fork";
    return WIFEXITED(status) && WEXITSTATUS(status) == 3 ? NULL : (void *)"the child";
}

static void test_fork_without_a_guard(void **state)
{
    (void)state;
    install();
    const char *why = on_thread(forks, NULL);
    if (why)
        fail_msg("%s", why);
    assert_usable();
}

/* ------------------------------------------------------------------------ */
/* 65 at once                                                                */

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cond = PTHREAD_COND_INITIALIZER;
static atomic_int holding;
static int released;

static void k_hold(void *unused)
{
    (void)unused;
    atomic_fetch_add(&holding, 1);
    pthread_mutex_lock(&hold_lock);
    while (!released)
        pthread_cond_wait(&hold_cond, &hold_lock);
    pthread_mutex_unlock(&hold_lock);
}

static void *hold(void *arg)
{
    otd_fault f;

    *(otm_status *)arg = call1(k_hold, NULL, &f);
    return NULL;
}

/* 64 guarded calls in their kernels at once: a 65th is OTM_ERR_BUSY and
 * its kernel does not run; once one ends, calls work again. */
static void test_65th_call_is_busy(void **state)
{
    (void)state;
    pthread_t t[SLOTS];
    otm_status st[SLOTS];
    int64_t out = 0;
    otd_fault f;

    install();
    atomic_store(&holding, 0);
    released = 0;
    for (int i = 0; i < SLOTS; i++) {
        st[i] = (otm_status)-1;
        assert_int_equal(pthread_create(&t[i], NULL, hold, &st[i]), 0);
    }
    /* Bounded: every thread reaches its kernel within a minute. */
    for (int ms = 0; atomic_load(&holding) < SLOTS; ms++) {
        assert_true(ms < 60000);
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    assert_int_equal(call1(k_set, &out, &f), OTM_ERR_BUSY);
    assert_int_equal(out, 0);
    pthread_mutex_lock(&hold_lock);
    released = 1;
    pthread_cond_broadcast(&hold_cond);
    pthread_mutex_unlock(&hold_lock);
    for (int i = 0; i < SLOTS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(st[i], OTM_OK);
    }
    assert_usable();
}

/* ------------------------------------------------------------------------ */
/* Exit functions                                                            */

static void *open_fixture(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

    if (h == NULL)
        fail_msg("dlopen %s: %s", path, dlerror());
    return h;
}

/* dlinfo failing, then each of the two mprotect calls around a read-only
 * slot (-z now -z relro): OTM_ERR_KERNEL; hooking again works, and the
 * image's exit() is then a fault of the guarded call. */
static void test_hook_exit_refused(void **state)
{
    FP_NEEDED();
    (void)state;
    void *h = open_fixture(FIXTURE_FAULT_NOW_PATH);
    void (*fxf_exit)(void *) = (void (*)(void *))dlsym(h, "fxf_exit");
    otd_fault f;

    assert_non_null(fxf_exit);
    install();
    fp_fail(FP_DLINFO, 1, 0);
    assert_int_equal(otd_fault_hook_exit(h), OTM_ERR_KERNEL);
    assert_true(fp_fired(FP_DLINFO));
    for (unsigned long n = 1; n <= 2; n++) {
        fp_fail(FP_MPROTECT, n, EACCES);
        assert_int_equal(otd_fault_hook_exit(h), OTM_ERR_KERNEL);
        assert_true(fp_fired(FP_MPROTECT));
    }
    fp_clear();
    assert_int_equal(otd_fault_hook_exit(h), OTM_OK);
    assert_int_equal(call1(fxf_exit, (void *)(intptr_t)7, &f), OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.signo, 0);
    assert_int_equal(f.code, OTM_FAULT_BY_EXIT);
    assert_int_equal(f.exit_status, 7);
    assert_int_equal(dlclose(h), 0);
}

/* Images whose dynamic section is not the x86_64 one, or that the loader
 * does not know, as dlinfo describes them: OTM_ERR_INVALID, nothing
 * written. The link map is the test's: no dynamic section; relocations of
 * another size; REL rather than RELA; relocations without a symbol table;
 * a dynamic section of no loaded object (its pointers relative to the
 * base, as in a read-only dynamic section). And the fixture's own dynamic
 * section at a base one byte off: every slot it names is misaligned,
 * refused before anything is written. */
static void test_hook_exit_malformed(void **state)
{
    FP_NEEDED();
    (void)state;
    static Elf64_Sym syms[2];
    static char strs[] = "\0exit";
    static Elf64_Rela rela[1];
    struct link_map fake;
    memset(&fake, 0, sizeof fake);
    fake.l_name = (char *)"fake";
    struct {
        const char *what;
        Elf64_Dyn dyn[5];
    } cases[] = {
        {"relocations of 16 bytes", {{DT_RELAENT, {16}}, {DT_NULL, {0}}}},
        {"REL relocations", {{DT_PLTREL, {DT_REL}}, {DT_NULL, {0}}}},
        {"RELA without symbols",
         {{DT_RELA, {(Elf64_Xword)(uintptr_t)rela}}, {DT_RELASZ, {sizeof rela}},
          {DT_NULL, {0}}}},
        {"PLT relocations without strings",
         {{DT_JMPREL, {(Elf64_Xword)(uintptr_t)rela}},
          {DT_SYMTAB, {(Elf64_Xword)(uintptr_t)syms}}, {DT_NULL, {0}}}},
        {"no loaded object's",
         {{DT_SYMTAB, {0x100}}, {DT_STRTAB, {0x200}}, {DT_STRSZ, {sizeof strs}},
          {DT_NULL, {0}}}},
    };
    void *h = open_fixture(FIXTURE_FAULT_PATH);
    struct link_map *real = NULL;
    assert_int_equal(dlinfo(h, RTLD_DI_LINKMAP, &real), 0);
    assert_non_null(real);

    fake.l_addr = real->l_addr;
    fake.l_ld = NULL;
    fp_dlinfo_answer(&fake);
    assert_int_equal(otd_fault_hook_exit(h), OTM_ERR_INVALID);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fake.l_ld = cases[i].dyn;
        fake.l_addr = 0x10000;      /* 0x100 and 0x200 are relative to it */
        if (otd_fault_hook_exit(h) != OTM_ERR_INVALID) {
            fp_dlinfo_answer(NULL);
            fail_msg("hooked an image with %s", cases[i].what);
        }
    }
    fake = *real;
    fake.l_addr = real->l_addr + 1;
    assert_int_equal(otd_fault_hook_exit(h), OTM_ERR_INVALID);
    fp_dlinfo_answer(NULL);
    /* The image itself is untouched, and hooked as usual. */
    otd_fault f;
    install();
    void (*fxf_exit)(void *) = (void (*)(void *))dlsym(h, "fxf_exit");
    assert_non_null(fxf_exit);
    assert_int_equal(otd_fault_hook_exit(h), OTM_OK);
    assert_int_equal(call1(fxf_exit, (void *)(intptr_t)6, &f), OTM_ERR_KERNEL_FAULT);
    assert_int_equal(f.code, OTM_FAULT_BY_EXIT);
    assert_int_equal(f.exit_status, 6);
    assert_int_equal(dlclose(h), 0);
}

static const char *exit_symbol;
static int exit_status;

/* In a child: the hooked image's exit function called outside any guarded
 * call ends the process as libc's would, with its status. */
static void child_exit_outside(void)
{
    void *h = dlopen(FIXTURE_FAULT_PATH, RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    CHECK(otd_fault_install(STDERR_FILENO, PREFIX) == OTM_OK);
    CHECK(otd_fault_hook_exit(h) == OTM_OK);
    void (*fn)(void *) = (void (*)(void *))dlsym(h, exit_symbol);
    CHECK(fn != NULL);
    fn((void *)(intptr_t)exit_status);
    CHECK(0); /* not reached */
}

static void test_exit_outside_a_call(void **state)
{
    (void)state;
    static const struct {
        const char *symbol;
        int status;
    } cases[] = {{"fxf_exit", 7}, {"fxf__exit", 3}, {"fxf__Exit", 4}, {"fxf_quick_exit", 5}};

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        exit_symbol = cases[i].symbol;
        exit_status = cases[i].status;
        int status = in_child(child_exit_outside);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != cases[i].status)
            fail_msg("%s: wait status %#x", cases[i].symbol, status);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* First: the children must be the first to install. */
        cmocka_unit_test(test_no_key),
        cmocka_unit_test(test_handler_refused),
        cmocka_unit_test(test_thread_state_refused),
        cmocka_unit_test(test_thread_keeps_its_stack),
        cmocka_unit_test(test_thread_takes_a_stack_later),
        cmocka_unit_test(test_caller_blocks_faults),
        cmocka_unit_test(test_kick_without_a_call),
        cmocka_unit_test(test_65th_call_is_busy),
        cmocka_unit_test(test_fork_without_a_guard),
        cmocka_unit_test(test_hook_exit_refused),
        cmocka_unit_test(test_hook_exit_malformed),
        cmocka_unit_test(test_exit_outside_a_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
