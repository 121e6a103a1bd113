/*
 * alloc.c - the plugin's own memory: every allocation of src/plugin goes
 * through here, so that a test can make any one of them fail.
 *
 * The core's allocations already can (otm_hooks.alloc, failed by the
 * simulator); the plugin's live in a real MPI job, where only a process of
 * that job can fail them. The test hook is two environment variables, read
 * here and nowhere else (docs/testing.md, "The plugin's allocations"):
 *
 *   OTM_TEST_FAIL_ALLOC=N       the Nth allocation of the process returns
 *                               NULL, once (N >= 1), with a line on stderr;
 *                               0 only counts. Either way the process says
 *                               at its end how many it made.
 *   OTM_TEST_FAIL_ALLOC_RANK=R  only in the process of rank R (the rank its
 *                               launcher gives it; 0 without a launcher).
 *
 * Why an environment variable rather than a build option: the sweep then
 * runs on the very plugin that is installed, in every tree (MPICH, Open
 * MPI, memcheck, coverage) without a build of its own, and the cost is one
 * pthread_once check and one predictable branch per allocation; the plugin
 * allocates per call, never per byte moved. It is not a setting
 * (src/settings/ holds those, and docs/settings.md's table): nothing a user
 * should set, and no OMPTARGET_MPI_ name.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "plugin.h"

static pthread_once_t hook_once = PTHREAD_ONCE_INIT;
static int hook_on;             /* OTM_TEST_FAIL_ALLOC set, for this rank */
static unsigned long fail_at;   /* the allocation that fails, 0: none */
static atomic_ulong made;       /* allocations so far, with the hook on */
static long hook_rank;

/* A count in 0..2^31, or -1. */
static long parse_count(const char *s)
{
    char *end;
    if (!s || *s < '0' || *s > '9')
        return -1;
    long v = strtol(s, &end, 10);
    return *end || v < 0 || v > 0x7fffffffL ? -1 : v;
}

static void hook_read(void)
{
    otm_test_hooks t;
    otm_test_hooks_load(&t, NULL, NULL);
    const char *n = t.fail_alloc, *r = t.fail_alloc_rank;
    if (!n)
        return;
    long at = parse_count(n), rank = r ? parse_count(r) : -2;
    if (at < 0 || rank == -1) {
        otp_plugin_log(OTM_LOG_ERROR, "test hook: OTM_TEST_FAIL_ALLOC=%s, "
                       "OTM_TEST_FAIL_ALLOC_RANK=%s: not counts; the hook is off", n,
                       r ? r : "(unset)");
        return;
    }
    /* Known before MPI is, so that the process's first allocation can
     * fail. */
    hook_rank = otm_settings_launcher_rank(NULL, NULL);
    if (hook_rank < 0)
        hook_rank = 0;
    if (rank >= 0 && rank != hook_rank)
        return;
    fail_at = (unsigned long)at;
    hook_on = 1;
}

/* 1 when this allocation is the one the test hook fails. */
static int hook_fails(const char *what, size_t size)
{
    pthread_once(&hook_once, hook_read);
    if (!hook_on)
        return 0;
    unsigned long nth = atomic_fetch_add_explicit(&made, 1, memory_order_relaxed) + 1;
    if (nth != fail_at)
        return 0;
    otp_plugin_log(OTM_LOG_ERROR, "test hook: allocation %lu of rank %ld (%s of %zu "
                   "bytes) fails (OTM_TEST_FAIL_ALLOC)", nth, hook_rank, what, size);
    return 1;
}

void *otp_plugin_malloc(size_t size)
{
    return hook_fails("malloc", size) ? NULL : malloc(size);
}

void *otp_plugin_calloc(size_t n, size_t size)
{
    return hook_fails("calloc", n * size) ? NULL : calloc(n, size);
}

void *otp_plugin_realloc(void *ptr, size_t size)
{
    return hook_fails("realloc", size) ? NULL : realloc(ptr, size);
}

void otp_plugin_free(void *ptr)
{
    free(ptr);
}

void otp_plugin_alloc_report(void)
{
    pthread_once(&hook_once, hook_read);
    if (hook_on)
        otp_plugin_log(OTM_LOG_ERROR, "test hook: rank %ld made %lu allocations "
                       "(OTM_TEST_FAIL_ALLOC)", hook_rank,
                       atomic_load_explicit(&made, memory_order_relaxed));
}
