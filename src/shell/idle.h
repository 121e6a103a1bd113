/*
 * idle.h - what a polling thread does when there was nothing to do.
 *
 * The core never blocks, so every thread of the shell is a loop around a
 * core step function. The idle policy decides how such a loop waits when a
 * step made no progress: spin for `spin_ns`, then yield, then (policy
 * SLEEP) sleep, each nap an eighth of the time idle so far, up to
 * `sleep_max_ns`, except while data is in flight. Any progress resets it.
 * The thread's timer slack is lowered to 1 ns first: Linux's default of
 * 50 us turns every short sleep into a long one. Once spinning is over,
 * the thread asks for a short scheduling slice (`slice_ns`: the host's
 * waits take OMPTARGET_MPI_SLICE, the worker's loop none), so that a reply
 * wakes it at once on a core that busy threads share, and keeps it.
 */
#ifndef OTM_IDLE_H
#define OTM_IDLE_H

#include <stdint.h>
#include <time.h>

#include "otm/settings.h"

typedef struct ots_idle {
    otm_idle_policy policy;
    uint64_t spin_ns, sleep_max_ns;
    uint64_t slice_ns;      /* scheduling slice once spinning is over, 0: none */
    uint64_t idle_since;    /* 0: last step made progress */
    uint64_t sleep_ns;      /* the last nap, 0: none since the reset */
    unsigned polls;         /* idle polls since the clock was last read */
} ots_idle;

void ots_idle_init(ots_idle *idle, const otm_settings *s);
/* Call after every step with whether it moved, and whether data is in
 * flight (a transfer advances only while its thread polls MPI, so then the
 * thread yields at most and never sleeps). */
void ots_idle_after(ots_idle *idle, int moved, int streaming);
/* Asks for a scheduling slice of ns for the calling thread (none when ns
 * is 0, the thread has one already, or the kernel refused it before, as
 * for a real-time thread); ots_idle_after does once spinning is over. */
void ots_slice_take(uint64_t ns);
/* The calling thread's scheduling slice in ns as the kernel reports it:
 * the one asked for, else the kernel's default; 0 before Linux 6.12. */
uint64_t ots_sched_slice_ns(void);
/* The nap after idle_ns without progress: idle_ns / 8, at least 1 us, at
 * most sleep_max_ns. Whatever arrives during a nap waits at most an eighth
 * of the wait the nap is part of. A back-off that doubled per nap slept
 * about as long as it had waited, and two ranks waiting on each other
 * settled at sleep_max_ns per message. */
uint64_t ots_idle_nap_ns(uint64_t idle_ns, uint64_t sleep_max_ns);
/* Monotonic clock in ns. */
uint64_t ots_clock_ns(void);
/* The same clock at the kernel's tick resolution (ms), much cheaper. */
uint64_t ots_clock_coarse_ns(void);
/* CLOCK_REALTIME ns from now, as pthread_cond_timedwait takes it. */
static inline struct timespec otm_deadline_in(uint64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t nsec = (uint64_t)ts.tv_nsec + ns;
    ts.tv_sec += (time_t)(nsec / 1000000000u);
    ts.tv_nsec = (long)(nsec % 1000000000u);
    return ts;
}

#endif
