/*
 * mpi_alloc_faults.c - the plugin's own allocations failing, one per job:
 * run_alloc_faults.sh runs this program once per allocation N with the
 * test hook OTM_TEST_FAIL_ALLOC=N (src/plugin/alloc.c) on rank 0 or on a
 * worker.
 *
 * A fixed sequence of calls reaches every allocation of the plugin on the
 * host, and through LOAD the worker's. Each call runs with stderr captured
 * and must either succeed or fail cleanly: OFFLOAD_FAIL (NULL) with
 * exactly one line saying "out of memory", after which the same call,
 * retried, succeeds (the hook fails one allocation only) and the data
 * stays right: a failed call had no effect. When the hook is on rank 0,
 * its own line says in which call it failed an allocation: that call must
 * have failed, unless it is one the plugin serves without the memory (a
 * record of the allocation pool; marked SPARE), which then succeeds
 * silently. A register_lib that fails is not tried again, as libomptarget
 * does not: the program then ends at once, and its unregister_lib must
 * still end the job. run_mpi.sh then checks the job's shutdown (memcheck:
 * no leak).
 *
 * The device image is the fixture with a table of entries of its own, as
 * clang makes them: a worker whose registration of it failed still loads
 * it from the bytes the host sends.
 */
#include <stdlib.h>
#include <string.h>

#include "mpi_common.h"

#define OK OFFLOAD_SUCCESS
#define SPARE 1         /* the call may do without the allocation */
#define NEEDS 0         /* the call fails without it */

static int host_hooked;         /* the hook is on rank 0: its lines are ours */
static int injected, failed;    /* calls that saw the hook, that failed */
static int unregistered;        /* register_lib failed: no image to use */

static int count_lines(const char *text, const char *needle)
{
    int n = 0;
    for (const char *l = text; *l;) {
        size_t len = strcspn(l, "\n");
        char line[600];
        snprintf(line, sizeof line, "%.*s", (int)(len < 599 ? len : 599), l);
        n += strstr(line, needle) != NULL;
        l += len + (l[len] == '\n');
    }
    return n;
}

/* The checks of one call's first try (see the top of the file). */
static void first_try(const char *what, int spare, int ok, const char *msg)
{
    int hook = count_lines(msg, "test hook: allocation");
    int oom = count_lines(msg, "out of memory");
    injected += hook;
    if (hook)
        mt_note("injected: an allocation failed in %s, which %s", what,
                ok ? "did without it" : "failed");
    if (!ok) {
        failed++;
        mt_note("call failed: %s", what);
        CHECK(oom == 1, "%s fails with one line saying out of memory (%d)", what, oom);
        if (host_hooked)
            CHECK(hook == 1, "%s failed where the hook failed an allocation", what);
    } else if (hook) {
        CHECK(spare && oom == 0, "%s succeeds without the allocation, silently", what);
    } else {
        CHECKQ(oom == 0, "%s: no line says out of memory", what);
    }
}

static void retry(const char *what, int ok, const char *msg)
{
    CHECK(ok && count_lines(msg, "out of memory") == 0,
          "%s, tried again, succeeds", what);
}

/* STEP(what, SPARE or NEEDS, expression true on success): the call, once
 * more if it failed. The expression is evaluated again for the retry. */
#define STEP(what, spare, ok)                                                                  \
    do {                                                                                       \
        char msg_[4096];                                                                       \
        mt_phase(what);                                                                        \
        mt_capture_begin();                                                                    \
        int ok_ = (ok);                                                                        \
        snprintf(msg_, sizeof msg_, "%s", mt_capture_end());                                   \
        first_try((what), (spare), ok_, msg_);                                                 \
        if (!ok_) {                                                                            \
            mt_capture_begin();                                                                \
            ok_ = (ok);                                                                        \
            snprintf(msg_, sizeof msg_, "%s", mt_capture_end());                               \
            retry((what), ok_, msg_);                                                          \
        }                                                                                      \
    } while (0)

static void *dalloc(int64_t size, int32_t kind)
{
    return __tgt_rtl_data_alloc(0, size, NULL, kind);
}

/* Rank 0, as the launcher tells it (Hydra, Open MPI), known before
 * mt_start returns on rank 0 only. */
static int rank0(void)
{
    const char *r = getenv("PMI_RANK");
    if (!r)
        r = getenv("OMPI_COMM_WORLD_RANK");
    return !r || strcmp(r, "0") == 0;
}

/* The start. The plugin starts first, with stderr as it is: a failure
 * there aborts the job, whose lines must not be left in a capture. Then
 * register_lib: when it fails, libomptarget goes on without trying again
 * and unregisters the descriptor at the end, which must still end the
 * job; so does this program, without its images. Only rank 0 captures its
 * stderr: a worker never comes back from mt_start to give it back. */
static void start(void)
{
    char msg[4096];
    (void)__tgt_rtl_number_of_devices();
    if (!rank0()) {
        mt_start("mpi_alloc_faults", 0);
        exit(1);    /* not reached: a worker serves, then _exits */
    }
    mt_capture_begin();
    mt_start("mpi_alloc_faults", 0);
    snprintf(msg, sizeof msg, "%s", mt_capture_end());
    int hook = count_lines(msg, "test hook: allocation");
    injected += hook;
    unregistered = mt.register_rc != OK;
    if (hook || unregistered) {
        failed++;
        mt_note("injected: an allocation failed in register_lib, which %s",
                unregistered ? "failed" : "did without it");
        CHECK(hook == 1 && unregistered &&
                  count_lines(msg, "register_lib: out of memory") == 1 &&
                  count_lines(msg, "out of memory") == 1,
              "register_lib fails (%d) with one line saying out of memory",
              (int)mt.register_rc);
    }
}

static void sequence(void)
{
    __tgt_target_table *t = NULL;
    void *p = NULL, *q = NULL, *pinned = NULL, *ev = NULL;
    int64_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, five = 5, out[8] = {0}, g = 0;
    __tgt_async_info a1 = {0}, a2 = {0}, a3 = {0};
    STEP("load_binary", NEEDS,
         (t = __tgt_rtl_load_binary(0, &mt.images[0])) != NULL &&
             t->EntriesEnd - t->EntriesBegin == MT_FX_COUNT && t->EntriesBegin[0].addr);
    if (!t || t->EntriesEnd - t->EntriesBegin != MT_FX_COUNT)
        return;
    void *add = t->EntriesBegin[MT_FX_ADD].addr, *tick = t->EntriesBegin[MT_FX_TICK].addr;
    void *global = t->EntriesBegin[MT_FX_GLOBAL].addr;
    STEP("data_alloc", SPARE, (p = dalloc(64, TARGET_ALLOC_DEFAULT)) != NULL);
    STEP("data_alloc of another", SPARE, (q = dalloc(64, TARGET_ALLOC_DEFAULT)) != NULL);
    STEP("data_alloc HOST", NEEDS, (pinned = dalloc(64, TARGET_ALLOC_HOST)) != NULL);
    if (!p || !q || !pinned)
        return;
    STEP("data_submit", NEEDS, __tgt_rtl_data_submit(0, p, in, 64) == OK);
    STEP("data_submit_async on a new queue", NEEDS,
         __tgt_rtl_data_submit_async(0, q, &five, 8, &a1) == OK);
    void *args[2] = {p, q};
    ptrdiff_t offs[2] = {0, 0};
    STEP("run_target_region_async", NEEDS,
         __tgt_rtl_run_target_region_async(0, add, args, offs, 2, &a1) == OK);
    STEP("create_event", NEEDS, __tgt_rtl_create_event(0, &ev) == OK);
    STEP("record_event on a new queue", NEEDS, __tgt_rtl_record_event(0, ev, &a2) == OK);
    STEP("record_event", NEEDS, __tgt_rtl_record_event(0, ev, &a1) == OK);
    STEP("wait_event on a new queue", NEEDS, __tgt_rtl_wait_event(0, ev, &a3) == OK);
    /* Behind the wait for the region: *p was 1, the region added 5. */
    STEP("data_retrieve_async after the wait", NEEDS,
         __tgt_rtl_data_retrieve_async(0, out, p, 8, &a3) == OK && out[0] == 6);
    STEP("sync_event", NEEDS, __tgt_rtl_sync_event(0, ev) == OK);
    STEP("synchronize", NEEDS,
         __tgt_rtl_synchronize(0, &a1) == OK && __tgt_rtl_synchronize(0, &a2) == OK &&
             __tgt_rtl_synchronize(0, &a3) == OK);
    STEP("destroy_event", NEEDS, __tgt_rtl_destroy_event(0, ev) == OK);
    /* A failed run must not have run: the global is ticked once. */
    STEP("run_target_team_region", NEEDS,
         __tgt_rtl_run_target_team_region(0, tick, NULL, NULL, 0, 1, 1, 0) == OK);
    STEP("data_retrieve of the global", NEEDS,
         __tgt_rtl_data_retrieve(0, &g, global, 4) == OK && (int32_t)g == 1);
    STEP("data_exchange", NEEDS, __tgt_rtl_data_exchange(0, p, 0, q, 64) == OK);
    memset(out, 0, sizeof out);
    STEP("data_retrieve", NEEDS,
         __tgt_rtl_data_retrieve(0, out, q, 64) == OK && out[0] == 6 && out[7] == 8);
    STEP("data_delete into the pool", SPARE, __tgt_rtl_data_delete(0, p) == OK);
    STEP("data_alloc from the pool", SPARE, (p = dalloc(64, TARGET_ALLOC_DEFAULT)) != NULL);
    STEP("data_delete", SPARE, p && __tgt_rtl_data_delete(0, p) == OK);
    STEP("data_delete of another", SPARE, __tgt_rtl_data_delete(0, q) == OK);
    STEP("data_delete HOST", NEEDS, __tgt_rtl_data_delete(0, pinned) == OK);
}

int main(void)
{
    const char *rank = getenv("OTM_TEST_FAIL_ALLOC_RANK");
    host_hooked = getenv("OTM_TEST_FAIL_ALLOC") && rank && strcmp(rank, "0") == 0;
    start();
    mt_watchdog_start(30);
    if (!unregistered)
        sequence();
    CHECK(injected <= 1 && failed <= 1, "the hook failed at most one call (%d, %d failed)",
          injected, failed);
    return mt_finish();
}
