/* idle.c - the idle policy of the shell's polling loops. */
#include "idle.h"

#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The kernel's struct sched_attr (linux/sched/types.h, which cannot be
 * included beside <sched.h>), its first version: the size field says so. */
struct sched_attr {
    uint32_t size, sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period;
};
#define SCHED_FLAG_RESET_ON_FORK 0x01

uint64_t ots_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ots_clock_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ots_idle_init(ots_idle *idle, const otm_settings *s)
{
    idle->policy = s->idle;
    idle->spin_ns = s->spin_ns;
    idle->sleep_max_ns = s->sleep_max_ns ? s->sleep_max_ns : 1;
    idle->slice_ns = s->slice_ns;
    idle->idle_since = 0;
    idle->sleep_ns = 0;
    idle->polls = 0;
    /* Once per thread: the call is a system call, and waits are many. */
    static _Thread_local int slack_set;
    if (!slack_set) {
        prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
        slack_set = 1;
    }
}

/* The calling thread's scheduling slice. Linux 6.12's EEVDF scheduler
 * lets a SCHED_OTHER thread ask for a shorter slice (sched_runtime):
 * woken, it then preempts the thread running on its core instead of
 * waiting for that thread's slice to end (by default 0.7 ms times 1 +
 * log2 of the CPUs: 1.4 ms on 2). A thread that waits for a reply from a
 * rank sharing its cores with busy threads (the program's OpenMP threads
 * spinning in taskwait, say) otherwise answers late by about a slice at
 * every message. The thread keeps it: a helper thread of libomp's then
 * also wakes at once for its next task. Threads it creates start with
 * the default (RESET_ON_FORK, which also gives them nice 0 if the
 * thread's is below): a kernel's team is as the program's would be.
 * Older kernels accept the value and ignore it. */
static _Thread_local int slice_on;          /* asked for and given */
static _Thread_local int slice_refused;     /* the kernel said no: stop asking */

static int sched_get(struct sched_attr *a)
{
    memset(a, 0, sizeof *a);
    return syscall(SYS_sched_getattr, 0, a, sizeof *a, 0) ? -1 : 0;
}

void ots_slice_take(uint64_t ns)
{
    struct sched_attr a;
    if (!ns || slice_on || slice_refused)
        return;
    if (sched_get(&a) || (a.sched_policy != SCHED_OTHER && a.sched_policy != SCHED_BATCH)) {
        slice_refused = 1;      /* a real-time thread keeps what it has */
        return;
    }
    a.size = sizeof a;
    a.sched_runtime = ns;
    a.sched_flags |= SCHED_FLAG_RESET_ON_FORK;
    if (syscall(SYS_sched_setattr, 0, &a, 0))
        slice_refused = 1;
    else
        slice_on = 1;
}

uint64_t ots_sched_slice_ns(void)
{
    struct sched_attr a;
    return sched_get(&a) ? 0 : a.sched_runtime;
}

uint64_t ots_idle_nap_ns(uint64_t idle_ns, uint64_t sleep_max_ns)
{
    uint64_t ns = idle_ns / 8;
    if (ns < 1000)
        ns = 1000;
    return ns < sleep_max_ns ? ns : sleep_max_ns;
}

static void nap(ots_idle *idle, uint64_t idle_ns)
{
    uint64_t ns = ots_idle_nap_ns(idle_ns, idle->sleep_max_ns);
    idle->sleep_ns = ns;
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

void ots_idle_after(ots_idle *idle, int moved, int streaming)
{
    if (moved) {
        idle->idle_since = 0;
        idle->sleep_ns = 0;
        return;
    }
    if (idle->policy == OTM_IDLE_SPIN)
        return;
    /* Reading the clock costs about as much as a poll: while spinning,
     * look at it every 16th poll only. */
    if (idle->idle_since && idle->sleep_ns == 0 && (++idle->polls & 15u))
        return;
    uint64_t now = ots_clock_ns();
    if (!idle->idle_since)
        idle->idle_since = now;
    if (now - idle->idle_since < idle->spin_ns)
        return;
    ots_slice_take(idle->slice_ns);
    /* Yield for as long again as we spun, then sleep. */
    if (idle->policy == OTM_IDLE_YIELD || streaming ||
        now - idle->idle_since < 2 * idle->spin_ns + 10000) {
        sched_yield();
        return;
    }
    nap(idle, now - idle->idle_since);
}
