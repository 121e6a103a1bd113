/*
 * fixture_fault.c - a shared library standing in for a device image whose
 * kernels end the process, for test_fault (otd_fault_hook_exit). Built twice:
 * as otm_fixture_fault (the linker's defaults: lazy binding, so the PLT slots
 * stay writable) and, linked -z now -z relro, as otm_fixture_fault_now
 * (every slot read-only after loading).
 *
 * Each exit function is reached the ways a compiler reaches a libc function:
 * through the PLT (R_X86_64_JUMP_SLOT), by taking its address
 * (R_X86_64_GLOB_DAT, in PT_GNU_RELRO) and from a table of pointers
 * (R_X86_64_64). Kernels take every argument as a pointer-sized value.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define STATUS(v) ((int)(intptr_t)(v))

void fxf_exit(void *status);
void fxf__exit(void *status);
void fxf__Exit(void *status);
void fxf_quick_exit(void *status);
void fxf_exit_by_address(void *status);
void fxf_exit_by_table(void *status);
void fxf_exit_in_thread(void *status);
void fxf_set(void *out);

void fxf_exit(void *status)
{
    exit(STATUS(status));
}

void fxf__exit(void *status)
{
    _exit(STATUS(status));
}

void fxf__Exit(void *status)
{
    _Exit(STATUS(status));
}

void fxf_quick_exit(void *status)
{
    quick_exit(STATUS(status));
}

void fxf_exit_by_address(void *status)
{
    /* volatile: the call must go through the address, not be folded into a
     * call of exit. */
    void (*volatile fn)(int) = exit;

    fn(STATUS(status));
}

/* Initialized with exit's address at load time: an R_X86_64_64 relocation
 * (volatile keeps the compiler from calling exit directly; it also puts the
 * table in .data, outside PT_GNU_RELRO). */
static void (*const volatile exit_table[1])(int) = {exit};

void fxf_exit_by_table(void *status)
{
    exit_table[0](STATUS(status));
}

static void *exit_thread(void *status)
{
    exit(STATUS(status));
}

/* exit() on a thread the kernel starts, as an OpenMP thread would. */
void fxf_exit_in_thread(void *status)
{
    pthread_t t;

    if (pthread_create(&t, NULL, exit_thread, status) == 0)
        pthread_join(t, NULL);
}

void fxf_set(void *out)
{
    *(int64_t *)out = 42;
}
