/*
 * otm/fault.h - faults inside a kernel become error values.
 *
 * A target region runs the image's code in the worker's process: a NULL
 * dereference, a division by zero, abort(), a stack overflow or a call of
 * exit() in it would otherwise end the worker, and the host would only learn
 * that a rank vanished. With this module the worker gets OTM_ERR_KERNEL_FAULT
 * and an otd_fault saying what happened, sends that to the host, and stays
 * alive to say so.
 *
 * The module owns, in a worker process, the signals SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL and SIGABRT, and uses one real-time signal of its own,
 * otd_fault_signal() (SIGRTMAX - 7, 57 with glibc on Linux), to interrupt
 * kernel threads; it does not keep or chain to the previous handlers, and
 * nothing else in the process may handle or block these signals.
 *
 * What a caught fault leaves behind: the kernel is abandoned where it
 * faulted (siglongjmp), so locks it held stay held, memory it allocated
 * leaks, and a parallel region inside it is left without its master (its
 * OpenMP team is unusable). The process can report the fault and go on with
 * other work, but whatever the kernel shared with the runtime (libomp's
 * state, the heap if it faulted inside malloc) is in an unknown state.
 *
 * Faults are told apart by the thread they happen on:
 *  - on the thread of an active guarded call: that call returns
 *    OTM_ERR_KERNEL_FAULT with the fault (foreign = 0);
 *  - on another thread while guarded calls are active (an OpenMP thread of
 *    a parallel region inside the kernel): every active guarded call returns
 *    OTM_ERR_KERNEL_FAULT with that fault and foreign = 1, since nothing
 *    tells which kernel the thread works for; the faulting thread is parked
 *    for ever (all signals blocked). This includes the worker's own threads
 *    (its MPI or progress threads): a fault there while a kernel runs is
 *    reported as the kernel's;
 *  - on another thread once a guarded call has returned a fault (since
 *    otd_fault_install): its kernel was abandoned where it was, and the
 *    other threads of a parallel region inside it may still run its code
 *    (the rest of a loop through the same NULL pointer): the thread is
 *    parked, and nothing more is said (the call reported its fault);
 *  - anywhere else: one line "<prefix><description> outside any target
 *    region (...); the worker stops" is written to the fd given to
 *    otd_fault_install and the signal kills the process as it would have
 *    without this module.
 *
 * Not caught: a stack overflow on a thread that has no alternate signal
 * stack (threads other than those that made a guarded call), SIGKILL, and
 * exit() called by code outside the images hooked with otd_fault_hook_exit
 * (libomp's own fatal errors, for instance). A kernel that blocks the
 * signals above is not interrupted by them.
 */
#ifndef OTM_FAULT_H
#define OTM_FAULT_H

#include <stddef.h>
#include <stdint.h>

#include "otm/status.h"

#ifndef OTM_ERR_KERNEL_FAULT
#define OTM_ERR_KERNEL_FAULT ((otm_status)17)
#endif

/* Values of otd_fault.code when signo == 0: the function the kernel called.
 * They travel on the wire: fixed. */
enum {
    OTM_FAULT_BY_EXIT = 0,       /* exit() */
    OTM_FAULT_BY__EXIT = 1,      /* _exit() */
    OTM_FAULT_BY__EXIT_C99 = 2,  /* _Exit() */
    OTM_FAULT_BY_QUICK_EXIT = 3  /* quick_exit() */
};

/* What made a kernel stop. Plain integers with Linux's numbering (signal
 * numbers, si_code values), so that the host can describe a fault it
 * received from a worker. */
typedef struct otd_fault {
    int32_t signo;       /* SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT; 0 when
                            the kernel called an exit function */
    int32_t code;        /* si_code of the signal; when signo == 0, one of
                            OTM_FAULT_BY_* */
    uint64_t addr;       /* si_addr: the faulting address (SIGSEGV, SIGBUS)
                            or instruction (SIGFPE, SIGILL); 0 for a signal
                            sent by kill/raise/abort (si_code <= 0) */
    int32_t exit_status; /* the argument of the exit function, signo == 0 */
    int32_t foreign;     /* 1 when the fault happened on a thread other than
                            the one that called the kernel */
} otd_fault;

/* Installs the handlers of SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT and
 * otd_fault_signal() (SA_SIGINFO | SA_ONSTACK, every signal blocked while
 * one runs). `prefix` (copied, at most 120 bytes, for instance
 * "omptarget-mpi: rank 1 (device 0): ") starts the line written with one
 * write(2) to `fd` for a fault outside any guarded call.
 *
 * Idempotent: every call installs the handlers again (so it also restores
 * them if something replaced them) and replaces fd and prefix; do not call
 * it while another thread may fault. OTM_ERR_INVALID when fd < 0, prefix is
 * NULL or longer than 120 bytes; OTM_ERR_KERNEL when sigaction fails,
 * OTM_ERR_NOMEM when no thread-specific key is left. */
otm_status otd_fault_install(int fd, const char *prefix);

/* Asked by the SIGSEGV handler, for an access fault (SEGV_MAPERR, or
 * SEGV_ACCERR: `write` then) at addr in any thread, before it reports
 * anything: non-zero makes the handler return, so that the instruction
 * runs again (unified shared memory: a host range new since the device
 * last learned them, reserved meanwhile). It runs in the handler: only
 * async-signal-safe calls, and it must not answer non-zero twice for one
 * unchanged cause. NULL (the default) asks nothing. */
typedef int (*otd_fault_retry_fn)(void *ctx, uint64_t addr, int write);
void otd_fault_set_retry(otd_fault_retry_fn fn, void *ctx);

/* The real-time signal used to interrupt threads in guarded calls,
 * SIGRTMAX - 7. Reaching a thread that is not in a guarded call, or one that
 * nothing was recorded for, it does nothing. */
int otd_fault_signal(void);

/* otd_kernel_call (otm/device.h) guarded: a fault signal raised on this
 * thread while the call runs, a fault of another thread (see the top of this
 * file), or an exit function called by the code of a hooked image (see
 * otd_fault_hook_exit) makes it return OTM_ERR_KERNEL_FAULT with *fault
 * filled, instead of ending the process. When the kernel returns, the
 * result is otd_kernel_call's and *fault is not touched, except when a
 * fault of another thread was recorded for the call before it ended (the
 * kernel blocked otd_fault_signal(), or returned before the signal came):
 * that is still the call's OTM_ERR_KERNEL_FAULT, since the faulting thread
 * is parked and nothing else would report it.
 *
 * The first guarded call of a thread gives it an alternate signal stack
 * (64 KiB + MINSIGSTKSZ, kept until the thread exits; a stack the thread
 * already has is used instead), so that a stack overflow is caught too. The
 * signal mask is restored on return; the fault signals and
 * otd_fault_signal() are unblocked during the call. A thread whose last
 * call returned with them unblocked is taken to still have that mask (the
 * caller does not change it between calls), which saves a system call per
 * call.
 *
 * Several threads may be in guarded calls at once, up to 64; calls do not
 * nest: a guarded call from inside a kernel that runs guarded, or a 65th
 * concurrent one, is OTM_ERR_BUSY. OTM_ERR_INVALID when otd_fault_install
 * has not succeeded, when fault is NULL, and for otd_kernel_call's bad
 * arguments (NULL fn); OTM_ERR_NOMEM when the thread's state or stack cannot
 * be allocated, OTM_ERR_KERNEL when sigaltstack fails. */
otm_status otd_kernel_call_guarded(void *fn, void **args, uint32_t nargs,
                                   otd_fault *fault);

/* Makes the image loaded as `dl_handle` (a dlopen handle) call this
 * module's exit functions instead of libc's: the slots of the image that
 * hold exit, _exit, _Exit or quick_exit (relocations R_X86_64_JUMP_SLOT,
 * R_X86_64_GLOB_DAT and R_X86_64_64 without addend, in DT_JMPREL and DT_RELA)
 * are rewritten; a slot in the read-only part (PT_GNU_RELRO) is made
 * writable for the write and read-only again after it. Only the image's own
 * references change, not those of the libraries it links.
 *
 * The replacement, called by the image's code: on a thread in a guarded
 * call, that call returns OTM_ERR_KERNEL_FAULT with signo 0, code
 * OTM_FAULT_BY_* and exit_status (atexit handlers do not run); on another
 * thread while guarded calls are active, it is a fault of another thread
 * (parked, foreign = 1); otherwise libc's function runs.
 *
 * OTM_OK also when the image imports none of them, and when called again
 * for the same image. OTM_ERR_INVALID for a NULL handle or an image whose
 * dynamic section is not the x86_64 one (no RELA, entries of another size)
 * or whose relocation names a slot outside its segments; OTM_ERR_KERNEL when dlinfo or mprotect fails (the error is in errno). */
otm_status otd_fault_hook_exit(void *dl_handle);

/* Writes a sentence for *f into buf and returns buf:
 * "SIGSEGV (address not mapped to object) at address 0x0",
 * "SIGFPE (integer divide by zero) at address 0x401234", "SIGABRT (abort)",
 * "SIGSEGV (sent by kill)", "exit(7)", "_exit(3)", "signal 40 (code 1)";
 * " in another thread of the region" is appended for a foreign fault. It
 * reads only *f (the host describes faults it received from a worker), any
 * field values are accepted, and it is async-signal-safe. Truncated to fit,
 * always NUL-terminated when len > 0; nothing is written when buf is NULL or
 * len is 0. A NULL f is "no fault". */
const char *otd_fault_describe(const otd_fault *f, char *buf, size_t len);

#endif
