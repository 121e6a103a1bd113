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

static void nap(otm_idle *idle)
{
    idle->sleep_ns = idle->sleep_ns ? idle->sleep_ns * 2 : 1000;
    if (idle->sleep_ns > idle->sleep_max_ns)
        idle->sleep_ns = idle->sleep_max_ns;
    struct timespec ts = {(time_t)(idle->sleep_ns / 1000000000u),
                          (long)(idle->sleep_ns % 1000000000u)};
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
    nap(idle);
}
