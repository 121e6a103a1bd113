/* idle.c - the idle policy of the shell's polling loops. */
#include "idle.h"

#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

uint64_t otm_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t otm_clock_coarse_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void otm_idle_init(otm_idle *idle, const otm_settings *s)
{
    idle->policy = s->idle;
    idle->spin_ns = s->spin_ns;
    idle->sleep_max_ns = s->sleep_max_ns ? s->sleep_max_ns : 1;
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

uint64_t otm_idle_nap_ns(uint64_t idle_ns, uint64_t sleep_max_ns)
{
    uint64_t ns = idle_ns / 8;
    if (ns < 1000)
        ns = 1000;
    return ns < sleep_max_ns ? ns : sleep_max_ns;
}

static void nap(otm_idle *idle, uint64_t idle_ns)
{
    uint64_t ns = otm_idle_nap_ns(idle_ns, idle->sleep_max_ns);
    idle->sleep_ns = ns;
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

void otm_idle_after(otm_idle *idle, int moved, int streaming)
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
    uint64_t now = otm_clock_ns();
    if (!idle->idle_since)
        idle->idle_since = now;
    if (now - idle->idle_since < idle->spin_ns)
        return;
    /* Yield for as long again as we spun, then sleep. */
    if (idle->policy == OTM_IDLE_YIELD || streaming ||
        now - idle->idle_since < 2 * idle->spin_ns + 10000) {
        sched_yield();
        return;
    }
    nap(idle, now - idle->idle_since);
}
