/*
 * test_idle.c - the idle policy of the shell's polling loops
 * (src/shell/idle.c): how long a nap is after a given time idle, what
 * ots_idle_after does with progress and with data in flight, and the
 * scheduling slice a thread takes once spinning is over; the spin policy,
 * and a slice refused (a thread of another scheduling class, the
 * kernel's sched_getattr or sched_setattr failing: syscall is wrapped,
 * ld --wrap, tests/shell/CMakeLists.txt).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "idle.h"

/* ---- the kernel's answers failing on demand ----------------------------------- */
static _Thread_local long fail_nr;   /* this system call fails (EPERM) on this thread */

long __real_syscall(long nr, ...);
long __wrap_syscall(long nr, ...);

long __wrap_syscall(long nr, ...)
{
    va_list ap;
    long a[6];
    va_start(ap, nr);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (fail_nr && nr == fail_nr) {
        errno = EPERM;
        return -1;
    }
    return __real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

#define US 1000ull
#define MS 1000000ull

/* A nap is an eighth of the time idle: what arrives during it waits at
 * most 12.5% longer than it would have. */
static void test_nap_is_an_eighth(void **state)
{
    (void)state;
    assert_int_equal(ots_idle_nap_ns(800 * US, 1 * MS), 100 * US);
    assert_int_equal(ots_idle_nap_ns(4 * MS, 1 * MS), 500 * US);
    for (uint64_t idle = 8 * US; idle <= 8 * MS; idle += 8 * US)
        assert_true(ots_idle_nap_ns(idle, 1 * MS) * 8 <= idle);
}

/* At least 1 us (a shorter nanosleep costs the same system call), at
 * most OMPTARGET_MPI_SLEEP_MAX, and a SLEEP_MAX below 1 us wins. */
static void test_nap_bounds(void **state)
{
    (void)state;
    assert_int_equal(ots_idle_nap_ns(0, 1 * MS), 1 * US);
    assert_int_equal(ots_idle_nap_ns(7 * US, 1 * MS), 1 * US);
    assert_int_equal(ots_idle_nap_ns(9 * MS, 1 * MS), 1 * MS);
    assert_int_equal(ots_idle_nap_ns(UINT64_MAX, 1 * MS), 1 * MS);
    assert_int_equal(ots_idle_nap_ns(1 * MS, 500), 500);
}

static ots_idle sleeping_idle(void)
{
    otm_settings s = otm_settings_default();
    s.idle = OTM_IDLE_SLEEP;
    s.spin_ns = 0;
    ots_idle idle;
    ots_idle_init(&idle, &s);
    return idle;
}

/* A thread whose data is in flight yields at most: however long it
 * waits, it never naps. */
static void test_streaming_never_naps(void **state)
{
    (void)state;
    ots_idle idle = sleeping_idle();
    uint64_t t0 = ots_clock_ns();
    while (ots_clock_ns() - t0 < 2 * MS)
        ots_idle_after(&idle, 0, 1);
    assert_int_equal(idle.sleep_ns, 0);
    assert_int_not_equal(idle.idle_since, 0);
}

/* Without data in flight it naps once the yield window is over, and any
 * progress starts it over. */
static void test_naps_then_progress_resets(void **state)
{
    (void)state;
    ots_idle idle = sleeping_idle();
    uint64_t t0 = ots_clock_ns();
    while (idle.sleep_ns == 0 && ots_clock_ns() - t0 < 1000 * MS)
        ots_idle_after(&idle, 0, 0);
    assert_int_not_equal(idle.sleep_ns, 0);
    assert_true(idle.sleep_ns <= idle.sleep_max_ns);
    ots_idle_after(&idle, 1, 0);
    assert_int_equal(idle.sleep_ns, 0);
    assert_int_equal(idle.idle_since, 0);
}

/* Whether this kernel keeps a SCHED_OTHER thread's slice (Linux 6.12). */
static int kernel_has_slices(void)
{
    struct utsname u;
    int major = 0, minor = 0;
    if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
        return 0;
    return major > 6 || (major == 6 && minor >= 12);
}

static void *slice_of_new_thread(void *arg)
{
    *(uint64_t *)arg = ots_sched_slice_ns();
    return NULL;
}

static void *slice_thread(void *arg)
{
    uint64_t *seen = arg;
    otm_settings s = otm_settings_default();
    s.idle = OTM_IDLE_YIELD;
    s.spin_ns = 0;
    s.slice_ns = 300 * US;
    ots_idle idle;
    ots_idle_init(&idle, &s);
    seen[0] = ots_sched_slice_ns();     /* before: the default */
    ots_idle_after(&idle, 0, 0);        /* spinning is over at once */
    seen[1] = ots_sched_slice_ns();
    pthread_t t;
    if (pthread_create(&t, NULL, slice_of_new_thread, &seen[2]) == 0)
        pthread_join(t, NULL);
    else
        seen[2] = UINT64_MAX;
    ots_idle_after(&idle, 1, 0);        /* progress keeps it */
    seen[3] = ots_sched_slice_ns();
    return NULL;
}

/* Past SPIN, a thread asks for SLICE and keeps it; a thread it creates
 * starts with the kernel's default (what a fresh thread reports). A
 * kernel before 6.12 ignores it and reports 0 throughout. */
static void test_slice_after_spinning(void **state)
{
    (void)state;
    uint64_t seen[4] = {1, 1, 1, 1};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, slice_thread, seen), 0);
    pthread_join(t, NULL);
    uint64_t want = kernel_has_slices() ? 300 * US : 0;
    if (!want)
        print_message("this kernel keeps no slices: checked that none is reported\n");
    assert_true(want ? seen[0] != want : seen[0] == 0);
    assert_int_equal(seen[1], want);
    assert_int_equal(seen[2], seen[0]);
    assert_int_equal(seen[3], want);
}

/* SLICE=0 asks for nothing. */
static void *no_slice_thread(void *arg)
{
    otm_settings s = otm_settings_default();
    s.spin_ns = 0;
    s.slice_ns = 0;
    ots_idle idle;
    ots_idle_init(&idle, &s);
    ots_idle_after(&idle, 0, 0);
    *(uint64_t *)arg = ots_sched_slice_ns();
    return NULL;
}

static void test_no_slice_when_off(void **state)
{
    (void)state;
    uint64_t seen = 1, fresh = 2;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, no_slice_thread, &seen), 0);
    pthread_join(t, NULL);
    assert_int_equal(pthread_create(&t, NULL, slice_of_new_thread, &fresh), 0);
    pthread_join(t, NULL);
    assert_int_equal(seen, fresh);
}

/* The spin policy never waits nor reads the clock; a SLEEP_MAX of 0 is
 * taken for the shortest nap. */
static void test_spin_never_waits(void **state)
{
    (void)state;
    otm_settings s = otm_settings_default();
    s.idle = OTM_IDLE_SPIN;
    s.spin_ns = 0;
    s.sleep_max_ns = 0;
    ots_idle idle;
    ots_idle_init(&idle, &s);
    assert_int_equal(idle.sleep_max_ns, 1);
    for (int i = 0; i < 1000; i++)
        ots_idle_after(&idle, 0, 0);
    assert_int_equal(idle.idle_since, 0);
    assert_int_equal(idle.sleep_ns, 0);
}

/* A thread that is refused a slice (seen[1]: how) keeps the slice it had,
 * and does not ask again: a later ots_slice_take, the kernel willing,
 * changes nothing. */
static void *refused_thread(void *arg)
{
    uint64_t *seen = arg;
    seen[0] = ots_sched_slice_ns();
    if (seen[1] == 1) {
        struct sched_param p = {0};
        if (sched_setscheduler(0, SCHED_IDLE, &p) != 0) {
            seen[1] = UINT64_MAX;
            return NULL;
        }
    } else {
        fail_nr = seen[1] == 2 ? SYS_sched_getattr : SYS_sched_setattr;
    }
    ots_slice_take(300 * US);
    seen[2] = ots_sched_slice_ns();     /* 0 when sched_getattr fails */
    fail_nr = 0;
    ots_slice_take(300 * US);
    seen[3] = ots_sched_slice_ns();
    return NULL;
}

static void test_slice_refused(void **state)
{
    (void)state;
    for (uint64_t how = 1; how <= 3; how++) {
        uint64_t seen[4] = {7, how, 7, 7};
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, refused_thread, seen), 0);
        pthread_join(t, NULL);
        assert_true(seen[1] != UINT64_MAX);   /* SCHED_IDLE needs no privilege */
        assert_int_equal(seen[2], how == 2 ? 0 : seen[0]);
        assert_int_equal(seen[3], seen[0]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nap_is_an_eighth),
        cmocka_unit_test(test_nap_bounds),
        cmocka_unit_test(test_streaming_never_naps),
        cmocka_unit_test(test_naps_then_progress_resets),
        cmocka_unit_test(test_slice_after_spinning),
        cmocka_unit_test(test_no_slice_when_off),
        cmocka_unit_test(test_spin_never_waits),
        cmocka_unit_test(test_slice_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
