/*
 * fault.c - faults inside a kernel become error values (otm/fault.h).
 *
 * A guarded call sets a sigjmp_buf and marks its thread active; the fault
 * handlers, running on the thread's alternate stack, fill the thread's
 * otd_fault and siglongjmp back. Faults on other threads reach the guarded
 * threads through a table of the active calls: the faulting thread writes
 * the fault into the slot of each call and sends it otd_fault_signal().
 * An exit function called by a hooked image (exit_hooks.c) arrives the
 * same way, through otd_fault_on_exit (device_internal.h).
 *
 * Everything a handler touches is async-signal-safe: one initial-exec
 * thread-local pointer (no allocation on first access, unlike a TLS variable
 * of a dlopened library in the general-dynamic model), lock-free atomics on
 * static memory, write(2), tgkill(2), and the formatting of
 * fault_describe.h.
 */
#include "otm/fault.h"

#include "otm/device.h"
#include "otm/host_code.h"
#include "fault_describe.h"
#include "device_internal.h"

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define OTM_FAULT_PREFIX_MAX 120u
#define OTM_FAULT_SLOTS 64u
#define OTM_FAULT_ALTSTACK (64u * 1024u)

/* The call id of a slot being claimed: taken, but not yet a call. */
#define CLAIMING UINT64_MAX

/* The signals a kernel's faults arrive as. */
static const int fault_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

/* ------------------------------------------------------------------------ */
/* State                                                                     */

/* One thread's guarded-call state, allocated at its first guarded call and
 * freed when it exits. Only this thread and its handlers touch it. */
typedef struct guard {
    sigjmp_buf jump;
    otd_fault fault;            /* what the handler leaves for the call */
    volatile sig_atomic_t active; /* inside a guarded call, jump is set */
    unsigned slot;              /* the call's slot in `calls` */
    uint64_t call;              /* the call's id */
    void *stack;                /* our alternate stack (mmap), or NULL */
    size_t stack_size;          /* including the guard page below it */
    sigset_t mask;              /* the mask the last call returned with */
    int mask_known;             /* ... and it lets the fault signals in */
    pid_t tid;                  /* gettid(), 0 until asked: one system call
                                 * less per region (a fork's child forgets) */
} guard;

static __thread guard *my_guard __attribute__((tls_model("initial-exec")));

/* The active guarded calls, for faults of other threads. A slot's `call` is
 * 0 when free, CLAIMING while being taken or given back, else the id of the
 * call (ids are never reused). `kick` is the id of the call that `fault` was
 * written for; `busy` is held by the thread writing `fault`, so two faulting
 * threads never write one slot at once (the second finds the first's fault
 * there and leaves it: the first one wins), and by the call's own thread
 * when it gives the slot back. */
typedef struct call_slot {
    _Atomic uint64_t call;
    _Atomic pid_t tid;
    _Atomic uint64_t kick;
    atomic_flag busy;
    otd_fault fault;
} call_slot;

static call_slot calls[OTM_FAULT_SLOTS];
static _Atomic uint64_t next_call = 1;

/* The line for faults outside guarded calls: two copies, so that a new
 * install never rewrites the one a handler may be reading. */
typedef struct report_to {
    int fd;
    size_t len;
    char prefix[OTM_FAULT_PREFIX_MAX + 1];
} report_to;

static report_to reports[2];
static _Atomic(report_to *) report;

/* otd_fault_set_retry's: ctx first, so that a handler that sees fn sees it. */
static void *_Atomic retry_ctx;
static _Atomic(otd_fault_retry_fn) retry_fn;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t guard_key;
static int once_failed;
static int kick_signo;
static atomic_int installed;

/* ------------------------------------------------------------------------ */
/* The table of active calls                                                 */

static otm_status claim_slot(guard *g)
{
    unsigned i;
    uint64_t expected;

    for (i = 0; i < OTM_FAULT_SLOTS; i++) {
        expected = 0;
        if (atomic_compare_exchange_strong(&calls[i].call, &expected,
                                           CLAIMING)) {
            if (g->tid == 0)
                g->tid = gettid();
            atomic_store(&calls[i].tid, g->tid);
            g->slot = i;
            g->call = atomic_fetch_add(&next_call, 1);
            /* Published last: a faulting thread that sees the id also sees
             * the tid (sequentially consistent stores). */
            atomic_store(&calls[i].call, g->call);
            return OTM_OK;
        }
    }
    return OTM_ERR_BUSY;
}

/* Ends the call's use of its slot; the call must no longer be active (no
 * kick may interrupt this). A thread that faulted while the call was active
 * may have written the slot for it: once the slot is closed nobody else
 * will, and a fault written is the call's result even if its kernel
 * returned, since the faulting thread is parked and counts on it. Returns 1
 * with *f filled then. */
static int release_slot(const guard *g, otd_fault *f)
{
    call_slot *s = &calls[g->slot];
    int faulted = 0;

    atomic_store(&s->call, CLAIMING); /* no new writer for this call */
    while (atomic_flag_test_and_set(&s->busy))
        sched_yield(); /* one that came before is finishing its write */
    if (atomic_load(&s->kick) == g->call) {
        *f = s->fault;
        faulted = 1;
    }
    atomic_flag_clear(&s->busy);
    atomic_store(&s->call, 0);
    return faulted;
}

/* Writes f into the slot of call c, unless a fault was already written for
 * it (the first one wins), then signals the call's thread. Returns 1 when
 * the call has been told (by us or before), 0 when it left or could not be
 * signalled. Others hold `busy` for a few instructions only, and no handler
 * of ours waits for it on a thread that holds it (writers block every
 * signal, a slot being given back is CLAIMING and skipped), so waiting for
 * it cannot deadlock. */
static int kick_slot(call_slot *s, uint64_t c, const otd_fault *f)
{
    pid_t tid;
    int told = 1;

    while (atomic_flag_test_and_set(&s->busy))
        sched_yield();
    if (atomic_load(&s->call) != c) {
        told = 0; /* the call left while we looked */
    } else if (atomic_load(&s->kick) != c) {
        tid = atomic_load(&s->tid);
        s->fault = *f;
        atomic_store(&s->kick, c);
        told = tgkill(getpid(), tid, kick_signo) == 0;
    }
    atomic_flag_clear(&s->busy);
    return told;
}

/* A guarded call returned a fault since the last install: its kernel was
 * abandoned, and threads of it may still run its code (on_fault). */
static atomic_int abandoned;

/* A fault of a thread outside guarded calls: tells every active call.
 * Returns how many were told. */
static unsigned kick_all(const otd_fault *f)
{
    unsigned i, told = 0;
    uint64_t c;

    for (i = 0; i < OTM_FAULT_SLOTS; i++) {
        c = atomic_load(&calls[i].call);
        if (c != 0 && c != CLAIMING)
            told += (unsigned)kick_slot(&calls[i], c, f);
    }
    return told;
}

/* ------------------------------------------------------------------------ */
/* Leaving a fault                                                           */

/* Back to the guarded call of this thread, with f. */
static _Noreturn void unwind(guard *g, const otd_fault *f)
{
    g->fault = *f;
    g->active = 0;
    siglongjmp(g->jump, 1);
}

/* The thread of a foreign fault stops here: its kernel has been abandoned
 * by the guarded calls, which are told; it must not run on, and with every
 * signal blocked it takes none meant for the process. */
static _Noreturn void park(void)
{
    sigset_t all;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    for (;;)
        sigsuspend(&all);
}

#ifdef OTM_COVERAGE
/* libgcov: writes the .gcda files (coverage builds only). */
void __gcov_dump(void);
#endif

/* A fault nobody waits for: one line, then the default action of the signal,
 * as if this module were not there. */
static void die(const otd_fault *f)
{
    report_to *r = atomic_load(&report);
    char line[512];
    otd_text t = {line, sizeof(line), 0};
    struct sigaction dfl;
    sigset_t set;

    line[0] = '\0';
    if (r != NULL)
        otd_text_put(&t, r->prefix);
    otd_text_put_fault(&t, f);
    otd_text_put(&t, " outside any target region (the plugin's own code or "
                     "the runtime's); the worker stops\n");
    if (r != NULL && write(r->fd, line, t.pos) < 0) {
        /* Nothing left to tell it to. */
    }
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(f->signo, &dfl, NULL);
    /* Raised while blocked (we are its handler), delivered at the unblock:
     * also for a signal that was sent, which would not come back by
     * returning the way a faulting instruction does. */
    raise(f->signo);
    sigemptyset(&set);
    sigaddset(&set, f->signo);
#ifdef OTM_COVERAGE
    __gcov_dump();          /* the process dies at the unblock, unflushed */
#endif
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/* ------------------------------------------------------------------------ */
/* Handlers                                                                  */

/* A call into rank 0's code (otm/host_code.h): the instruction fetched
 * faulted at its own address, which lies in a placed object's code. It
 * resumes at the same instruction of this process's copy. */
static int redirected(int signo, const siginfo_t *si, void *uc)
{
#if defined(__x86_64__)
    ucontext_t *ctx = uc;
    uint64_t pc = (uint64_t)ctx->uc_mcontext.gregs[REG_RIP], to;
    if (signo != SIGSEGV || si->si_code <= 0 || (uint64_t)(uintptr_t)si->si_addr != pc ||
        !(to = otd_host_code_redirect(pc)))
        return 0;
    ctx->uc_mcontext.gregs[REG_RIP] = (greg_t)to;
    return 1;
#else
    (void)signo, (void)si, (void)uc;
    return 0;
#endif
}

/* Whether the retry hook lets an access fault run again. */
static int retried(int signo, const siginfo_t *si)
{
    otd_fault_retry_fn fn = atomic_load(&retry_fn);
    if (!fn || signo != SIGSEGV || (si->si_code != SEGV_MAPERR && si->si_code != SEGV_ACCERR))
        return 0;
    return fn(atomic_load(&retry_ctx), (uint64_t)(uintptr_t)si->si_addr,
              si->si_code == SEGV_ACCERR);
}

void otd_fault_set_retry(otd_fault_retry_fn fn, void *ctx)
{
    atomic_store(&retry_ctx, ctx);
    atomic_store(&retry_fn, fn);
}

static void on_fault(int signo, siginfo_t *si, void *uc)
{
    guard *g = my_guard;
    otd_fault f;

    if (redirected(signo, si, uc) || retried(signo, si))
        return;
    memset(&f, 0, sizeof(f));
    f.signo = signo;
    f.code = si->si_code;
    if (si->si_code > 0 && signo != SIGABRT)
        f.addr = (uint64_t)(uintptr_t)si->si_addr;
    if (g != NULL && g->active)
        unwind(g, &f);
    f.foreign = 1;
    if (kick_all(&f) > 0 || atomic_load(&abandoned))
        park();
    f.foreign = 0;
    die(&f);
}

static void on_kick(int signo, siginfo_t *si, void *uc)
{
    guard *g = my_guard;
    call_slot *s;

    if (g == NULL || !g->active)
        return;
    s = &calls[g->slot];
    if (atomic_load(&s->kick) != g->call)
        return; /* a late signal for an earlier call */
    unwind(g, &s->fault);
}

/* The third way a fault arrives: an exit function called by a hooked
 * image (exit_hooks.c), taken like a signal of on_fault. */
void otd_fault_on_exit(int32_t by, int status)
{
    guard *g = my_guard;
    otd_fault f;
    sigset_t all, old;

    memset(&f, 0, sizeof(f));
    f.code = by;
    f.exit_status = status;
    if (g != NULL && g->active)
        unwind(g, &f);
    /* No handler of ours may run on this thread in the middle of kick_all. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    f.foreign = 1;
    if (kick_all(&f) > 0 || atomic_load(&abandoned))
        park();
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ------------------------------------------------------------------------ */
/* Installing                                                                */

static void free_guard(void *p)
{
    guard *g = p;
    stack_t cur, off;

    my_guard = NULL;
    atomic_signal_fence(memory_order_seq_cst);
    if (g->stack != NULL) {
        /* Only our own stack is taken away from the thread. */
        if (sigaltstack(NULL, &cur) == 0 &&
            (char *)cur.ss_sp >= (char *)g->stack &&
            (char *)cur.ss_sp < (char *)g->stack + g->stack_size) {
            memset(&off, 0, sizeof(off));
            off.ss_flags = SS_DISABLE;
            sigaltstack(&off, NULL);
        }
        munmap(g->stack, g->stack_size);
    }
    free(g);
}

/* A fork's child runs on a thread of its own id; its copy of the parent's
 * guard must not kick the parent's thread. */
static void forget_tid(void)
{
    if (my_guard != NULL)
        my_guard->tid = 0;
}

static void init_once(void)
{
    kick_signo = SIGRTMAX - 7;
    once_failed = pthread_key_create(&guard_key, free_guard) != 0 ||
                  pthread_atfork(NULL, NULL, forget_tid) != 0;
}

static otm_status set_handler(int signo,
                              void (*fn)(int, siginfo_t *, void *))
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    if (fn == on_kick)
        sa.sa_flags |= SA_RESTART; /* ignored kicks must not break syscalls */
    sigfillset(&sa.sa_mask); /* handlers never nest on a thread */
    return sigaction(signo, &sa, NULL) == 0 ? OTM_OK : OTM_ERR_KERNEL;
}

otm_status otd_fault_install(int fd, const char *prefix)
{
    report_to *r;
    size_t len, i;
    otm_status st = OTM_OK;

    if (fd < 0 || prefix == NULL)
        return OTM_ERR_INVALID;
    len = strlen(prefix);
    if (len > OTM_FAULT_PREFIX_MAX)
        return OTM_ERR_INVALID;
    pthread_once(&once, init_once);
    if (once_failed)
        return OTM_ERR_NOMEM;
    r = atomic_load(&report) == &reports[0] ? &reports[1] : &reports[0];
    r->fd = fd;
    r->len = len;
    memcpy(r->prefix, prefix, len + 1);
    atomic_store(&report, r);
    for (i = 0; i < sizeof(fault_signals) / sizeof(fault_signals[0]); i++)
        if (st == OTM_OK)
            st = set_handler(fault_signals[i], on_fault);
    if (st == OTM_OK)
        st = set_handler(kick_signo, on_kick);
    if (st == OTM_OK)
        atomic_store(&installed, 1);
    atomic_store(&abandoned, 0);
    return st;
}

int otd_fault_signal(void)
{
    return SIGRTMAX - 7;
}

/* ------------------------------------------------------------------------ */
/* Guarded calls                                                             */

/* An alternate stack for this thread, with an inaccessible page below it so
 * that a handler overflowing it faults instead of writing past it. A stack
 * the thread already has (a sanitizer's, the caller's) is left in place. */
static otm_status give_stack(guard *g)
{
    stack_t cur, ss;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = OTM_FAULT_ALTSTACK + (size_t)MINSIGSTKSZ;
    void *p;

    if (sigaltstack(NULL, &cur) != 0)
        return OTM_ERR_KERNEL;
    if (!(cur.ss_flags & SS_DISABLE))
        return OTM_OK;
    size = (size + page - 1) / page * page;
    p = mmap(NULL, size + page, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return OTM_ERR_NOMEM;
    if (mprotect(p, page, PROT_NONE) != 0) {
        munmap(p, size + page);
        return OTM_ERR_NOMEM;
    }
    memset(&ss, 0, sizeof(ss));
    ss.ss_sp = (char *)p + page;
    ss.ss_size = size;
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(p, size + page);
        return OTM_ERR_KERNEL;
    }
    g->stack = p;
    g->stack_size = size + page;
    return OTM_OK;
}

/* This thread's guard, made at its first guarded call. */
static otm_status thread_guard(guard **out)
{
    guard *g = my_guard;
    otm_status st;

    if (g == NULL) {
        g = calloc(1, sizeof(*g));
        if (g == NULL)
            return OTM_ERR_NOMEM;
        st = give_stack(g);
        if (st == OTM_OK && pthread_setspecific(guard_key, g) != 0)
            st = OTM_ERR_NOMEM;
        if (st != OTM_OK) {
            free_guard(g);
            return st;
        }
        my_guard = g;
    }
    *out = g;
    return OTM_OK;
}

/* The signals a kernel must not have blocked for its faults to be caught. */
static void guarded_signals(sigset_t *set)
{
    size_t i;

    sigemptyset(set);
    for (i = 0; i < sizeof(fault_signals) / sizeof(fault_signals[0]); i++)
        sigaddset(set, fault_signals[i]);
    sigaddset(set, kick_signo);
}

/* 1 when no fault signal (nor the kick) is blocked in `mask`. */
static int lets_faults_in(const sigset_t *mask)
{
    for (size_t i = 0; i < sizeof(fault_signals) / sizeof(fault_signals[0]); i++)
        if (sigismember(mask, fault_signals[i]) == 1)
            return 0;
    return sigismember(mask, kick_signo) != 1;
}

/* Runs the call between sigsetjmp and the handlers' siglongjmp. Kept apart
 * so that nothing it changes after sigsetjmp is read after the jump. */
static otm_status run(guard *g, void *fn, void **args, uint32_t nargs,
                      otd_fault *fault)
{
    otm_status st;

    /* The mask is not saved here: the call puts it back itself, on both
     * ways out (one system call less per region). */
    if (sigsetjmp(g->jump, 0) != 0) {
        /* Before the slot goes: a thread of the kernel faulting from here
         * on is parked, not taken for a fault outside any region. */
        atomic_store(&abandoned, 1);
        *fault = g->fault;
        return OTM_ERR_KERNEL_FAULT;
    }
    g->active = 1;
    atomic_signal_fence(memory_order_seq_cst);
    st = otd_kernel_call(fn, args, nargs);
    atomic_signal_fence(memory_order_seq_cst);
    g->active = 0;
    return st;
}

otm_status otd_kernel_call_guarded(void *fn, void **args, uint32_t nargs,
                                   otd_fault *fault)
{
    guard *g;
    sigset_t unblock, old;
    otd_fault late;
    otm_status st;

    if (fn == NULL || fault == NULL || !atomic_load(&installed))
        return OTM_ERR_INVALID;
    st = thread_guard(&g);
    if (st != OTM_OK)
        return st;
    if (g->active)
        return OTM_ERR_BUSY; /* called from a guarded kernel */
    st = claim_slot(g);
    if (st != OTM_OK)
        return st;
    /* A thread whose last call returned with the fault signals let in
     * (the worker's threads: they never block them) needs no change now;
     * the mask the kernel leaves is put back on return in any case. */
    if (g->mask_known) {
        old = g->mask;
    } else {
        guarded_signals(&unblock);
        pthread_sigmask(SIG_UNBLOCK, &unblock, &old);
    }
    st = run(g, fn, args, nargs, fault);
    if (release_slot(g, &late) && st == OTM_OK) {
        *fault = late;
        st = OTM_ERR_KERNEL_FAULT;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    g->mask = old;
    g->mask_known = lets_faults_in(&old);
    return st;
}
