/*
 * mpi_timeout.c - OMPTARGET_MPI_TIMEOUT against a healthy job.
 *
 * The timeout is for operations that make no progress (README: "An
 * operation that makes no progress for this long fails instead of
 * hanging"). A program that queues async operations and then computes on
 * the host for longer than the timeout before it synchronizes is normal
 * (nowait targets overlapping host work): nothing is stuck, the devices are
 * idle and answer at once. Nor is an operation stuck while it waits in its
 * queue behind a long one that is progressing. Run with
 * OMPTARGET_MPI_TIMEOUT=250ms (and 1 MiB fragments, so that a long
 * transfer shows progress often); the host "computes" for 1.5 s. With
 * OMPTARGET_MPI_NUM_COMMS=1 and OMPTARGET_MPI_TAG_SPACE=3 it also shows
 * whether tags survive such phases: after them, synchronous work and the
 * exit must still run. A watchdog turns a hang into a failure.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_common.h"

#define OK OFFLOAD_SUCCESS

static void host_work(double seconds)
{
    usleep((useconds_t)(seconds * 1e6));
}

int main(int argc, char **argv)
{
    (void)argc;
    mt_start(argv[0], 1);
    mt_watchdog_start((int)mt_env_size("MT_WATCHDOG", 20));
    double pause = 1.5 * mt_time_scale();
    mt_note("OMPTARGET_MPI_TIMEOUT=%s, host work between enqueue and synchronize: %.1f s",
            getenv("OMPTARGET_MPI_TIMEOUT") ? getenv("OMPTARGET_MPI_TIMEOUT") : "default",
            pause);
    int d = 0;
    enum { SZ = 100000 };
    uint8_t *in = malloc(SZ), *out = malloc(SZ);
    void *t = __tgt_rtl_data_alloc(d, SZ, NULL, TARGET_ALLOC_DEFAULT);
    void *a = __tgt_rtl_data_alloc(d, 8, NULL, TARGET_ALLOC_DEFAULT);

    /* 0. queued behind a transfer that takes longer than the timeout, and
     * synchronized at once: every operation progresses all the time */
    {
        size_t big = (size_t)256 << 20;
        uint8_t *bin = malloc(big);
        void *bt = __tgt_rtl_data_alloc(d, (int64_t)big, NULL, TARGET_ALLOC_DEFAULT);
        int64_t small = 42, back = 0;
        mt_fill(bin, big, 3);
        mt_phase("256 MiB submit_async, 8-byte submit_async + retrieve_async, synchronize");
        __tgt_rtl_data_submit(d, a, &small, 8);
        __tgt_async_info q = {0};
        double t0 = mt_now();
        int ok = bin && bt && __tgt_rtl_data_submit_async(d, bt, bin, (int64_t)big, &q) == OK &&
                 __tgt_rtl_data_retrieve_async(d, &back, a, 8, &q) == OK &&
                 __tgt_rtl_synchronize(d, &q) == OK;
        double dt = mt_now() - t0;
        /* Did the long submit itself arrive? Its last MiB, synchronously. */
        uint8_t *tail = malloc(1 << 20);
        int arrived = bt && tail &&
                      __tgt_rtl_data_retrieve(d, tail, (char *)bt + big - (1 << 20),
                                              1 << 20) == OK &&
                      memcmp(tail, bin + big - (1 << 20), 1 << 20) == 0;
        free(tail);
        CHECK(arrived, "the 256 MiB submit_async arrived complete (%.2f s)", dt);
        CHECK(ok && back == 42, "the 8-byte retrieve_async queued behind it (waiting longer "
              "than the timeout while the submit progressed), synchronize at once: succeeds, "
              "value %lld", (long long)back);
        if (bt)
            __tgt_rtl_data_delete(d, bt);
        free(bin);
    }

    /* 1. queued, not started: synchronize after the host work */
    mt_fill(in, SZ, 1);
    memset(out, 0, SZ);
    mt_phase("queued submit + retrieve, host work, synchronize");
    __tgt_async_info ai = {0};
    int ok = __tgt_rtl_data_submit_async(d, t, in, SZ, &ai) == OK &&
             __tgt_rtl_data_retrieve_async(d, out, t, SZ, &ai) == OK;
    host_work(pause);
    ok = ok && __tgt_rtl_synchronize(d, &ai) == OK;
    CHECK(ok && mt_verify(out, SZ, 1) == (size_t)-1,
          "submit_async + retrieve_async, %.1f s of host work, synchronize: succeeds, data "
          "checked", pause);

    /* 2. a kernel queued likewise */
    int64_t one = 1, got = 0;
    mt_phase("queued kernel, host work, synchronize");
    __tgt_rtl_data_submit(d, a, &one, 8);
    void *args[2] = {a, a};
    ok = __tgt_rtl_run_target_region_async(d, mt.fx[d][MT_FX_ADD], args, NULL, 2, &ai) == OK &&
         __tgt_rtl_data_retrieve_async(d, &got, a, 8, &ai) == OK;
    host_work(pause);
    ok = ok && __tgt_rtl_synchronize(d, &ai) == OK;
    CHECK(ok && got == 2, "run_target_region_async + retrieve_async, %.1f s of host work, "
          "synchronize: succeeds, a = %lld", pause, (long long)got);

    /* 3. three rounds where sync_event leaves the next operation of the
     * queue started (it holds a tag) while the host works */
    for (int r = 0; r < 3; r++) {
        void *ev = NULL;
        mt_fill(in, SZ, 10 + (uint32_t)r);
        memset(out, 0, SZ);
        char what[120];
        snprintf(what, sizeof what, "round %d: submit, record, retrieve; sync_event; host work; "
                 "synchronize", r);
        mt_phase(what);
        ok = __tgt_rtl_create_event(d, &ev) == OK &&
             __tgt_rtl_data_submit_async(d, t, in, SZ, &ai) == OK &&
             __tgt_rtl_record_event(d, ev, &ai) == OK &&
             __tgt_rtl_data_retrieve_async(d, out, t, SZ, &ai) == OK &&
             __tgt_rtl_sync_event(d, ev) == OK;
        host_work(pause);
        ok = ok && __tgt_rtl_synchronize(d, &ai) == OK;
        CHECK(ok && mt_verify(out, SZ, 10 + (uint32_t)r) == (size_t)-1, "%s: succeeds, data "
              "checked", what);
        __tgt_rtl_destroy_event(d, ev);
    }

    /* The job is still usable, synchronously, on every device. */
    for (int k = 0; k < mt.ndev; k++) {
        char what[80];
        snprintf(what, sizeof what, "synchronous round trip on device %d", k);
        mt_phase(what);
        CHECK(mt_roundtrip(k, 1000, 99), "%s after the host work", what);
    }
    __tgt_rtl_data_delete(d, t);
    __tgt_rtl_data_delete(d, a);
    free(in);
    free(out);
    mt_phase("shutdown (unregister_lib)");
    return mt_finish();
}
