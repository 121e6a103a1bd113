/*
 * mpi_threads.c - host threads using the plugin at once, as libomptarget's
 * nowait targets do from hidden helper threads: each of 8 threads owns one
 * __tgt_async_info and queues 200 rounds of submit, submit, kernel,
 * retrieve (800 async operations), spread over all devices, then
 * synchronizes once in the middle and at the end and checks every result.
 * Allocations and frees also happen concurrently. A watchdog (60 s per
 * phase) turns a hang into a failure.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_common.h"

#define OK OFFLOAD_SUCCESS
#define MAX_THREADS 64
#define ROUNDS 200
#define BIG_EVERY 25            /* every 25th round also moves BIG bytes */
#define BIG (48 * 1024 + 3)     /* above the inline limit */

typedef struct worker {
    int t;
    int ops;                    /* async calls that returned OK */
    int failed_calls;
    int bad_results;
    int bad_big;
    int first_bad;              /* round of the first wrong sum, or -1 */
    int syncs_ok;
    int64_t a[ROUNDS], b[ROUNDS], out[ROUNDS];
    uint8_t *big_in, *big_out;
} worker;

static pthread_barrier_t start;
static int rounds = ROUNDS;

static void *run(void *arg)
{
    worker *w = arg;
    int n = mt.ndev;
    void *A[MT_MAX_DEV], *B[MT_MAX_DEV], *G[MT_MAX_DEV];
    for (int d = 0; d < n; d++) {
        A[d] = __tgt_rtl_data_alloc(d, ROUNDS * 8, NULL, TARGET_ALLOC_DEFAULT);
        B[d] = __tgt_rtl_data_alloc(d, ROUNDS * 8, NULL, TARGET_ALLOC_DEFAULT);
        G[d] = __tgt_rtl_data_alloc(d, (int64_t)BIG * (ROUNDS / BIG_EVERY), NULL,
                                    TARGET_ALLOC_DEFAULT);
        if (!A[d] || !B[d] || !G[d])
            w->failed_calls++;
    }
    size_t nbig = ((size_t)rounds + BIG_EVERY - 1) / BIG_EVERY;
    w->big_in = malloc(BIG * nbig);
    w->big_out = calloc(nbig, BIG);
    for (size_t k = 0; k < nbig; k++)
        mt_fill(w->big_in + k * BIG, BIG, 1000u * (uint32_t)w->t + (uint32_t)k);
    for (int i = 0; i < rounds; i++) {
        w->a[i] = 1000000LL * w->t + i;
        w->b[i] = 7LL * i + w->t;
        w->out[i] = -1;
    }
    __tgt_async_info ai = {0};
    pthread_barrier_wait(&start);
    if (w->failed_calls)
        return NULL;
    for (int i = 0; i < rounds; i++) {
        int d = (w->t + i) % n;
        void *fx_add = mt.fx[d][MT_FX_ADD];
        ptrdiff_t off = (ptrdiff_t)i * 8;
        int rc[4];
        rc[0] = __tgt_rtl_data_submit_async(d, (char *)A[d] + off, &w->a[i], 8, &ai);
        rc[1] = __tgt_rtl_data_submit_async(d, (char *)B[d] + off, &w->b[i], 8, &ai);
        void *args[2] = {A[d], B[d]};
        ptrdiff_t offs[2] = {off, off};
        if (i % 2)
            rc[2] = __tgt_rtl_run_target_region_async(d, fx_add, args, offs, 2, &ai);
        else
            rc[2] = __tgt_rtl_run_target_team_region_async(d, fx_add, args, offs, 2, 2, 4, 1,
                                                           &ai);
        rc[3] = __tgt_rtl_data_retrieve_async(d, &w->out[i], (char *)A[d] + off, 8, &ai);
        for (int k = 0; k < 4; k++)
            rc[k] == OK ? w->ops++ : w->failed_calls++;
        if (i % BIG_EVERY == 0) {
            size_t k = (size_t)i / BIG_EVERY;
            char *g = (char *)G[d] + k * BIG;
            __tgt_rtl_data_submit_async(d, g, w->big_in + k * BIG, BIG, &ai) == OK
                ? w->ops++ : w->failed_calls++;
            __tgt_rtl_data_retrieve_async(d, w->big_out + k * BIG, g, BIG, &ai) == OK
                ? w->ops++ : w->failed_calls++;
        }
        if (i == rounds / 2 - 1)
            w->syncs_ok += __tgt_rtl_synchronize(d, &ai) == OK && ai.Queue == NULL;
    }
    w->syncs_ok += __tgt_rtl_synchronize(0, &ai) == OK && ai.Queue == NULL;
    w->first_bad = -1;
    for (int i = 0; i < rounds; i++) {
        int wrong = w->out[i] != w->a[i] + w->b[i];
        if (wrong && w->first_bad < 0)
            w->first_bad = i;
        w->bad_results += wrong;
    }
    for (size_t k = 0; k < nbig; k++)
        w->bad_big += mt_verify(w->big_out + k * BIG, BIG, 1000u * (uint32_t)w->t +
                                                             (uint32_t)k) != (size_t)-1;
    for (int d = 0; d < n; d++) {
        w->failed_calls += __tgt_rtl_data_delete(d, A[d]) != OK;
        w->failed_calls += __tgt_rtl_data_delete(d, B[d]) != OK;
        w->failed_calls += __tgt_rtl_data_delete(d, G[d]) != OK;
    }
    free(w->big_in);
    free(w->big_out);
    return NULL;
}

int main(int argc, char **argv)
{
    (void)argc;
    mt_start(argv[0], 1);
    /* MT_THREADS and MT_ROUNDS reduce the run when chasing a failure. */
    int threads = (int)mt_env_size("MT_THREADS", 8);
    rounds = (int)mt_env_size("MT_ROUNDS", ROUNDS);
    if (threads < 1 || threads > MAX_THREADS || rounds < 1 || rounds > ROUNDS)
        return 2;
    static worker w[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; t++) {
        w[t].t = t;
        pthread_create(&th[t], NULL, run, &w[t]);
    }
    mt_watchdog_start((int)mt_env_size("MT_WATCHDOG", 60));
    mt_phase("8 threads: async operations and synchronize");
    pthread_barrier_wait(&start);
    double t0 = mt_now();
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    double dt = mt_now() - t0;
    int total = 0;
    for (int t = 0; t < threads; t++) {
        total += w[t].ops;
        CHECK(w[t].failed_calls == 0 && w[t].syncs_ok == 2 && w[t].bad_results == 0 &&
                  w[t].bad_big == 0,
              "thread %d: %d async operations over %d devices on its own async info "
              "(%d rounds of submit, submit, kernel, retrieve; %d transfers of %d bytes), "
              "%d of 2 synchronizes OK: %d failed calls, %d wrong sums, %d wrong big transfers",
              t, w[t].ops, mt.ndev, rounds, 2 * ((rounds + BIG_EVERY - 1) / BIG_EVERY), BIG,
              w[t].syncs_ok, w[t].failed_calls, w[t].bad_results, w[t].bad_big);
        if (w[t].first_bad >= 0) {
            int i = w[t].first_bad;
            mt_note("thread %d: first wrong sum in round %d: %lld + %lld gave %lld", t, i,
                    (long long)w[t].a[i], (long long)w[t].b[i], (long long)w[t].out[i]);
        }
    }
    mt_note("%d threads: %d async operations in %.2f s (%.0f/s)", threads, total, dt,
            total / dt);
    mt_phase("round trips at the end");
    for (int d = 0; d < mt.ndev; d++)
        CHECK(mt_roundtrip(d, 100, 1), "device %d still answers at the end", d);
    mt_phase("shutdown (unregister_lib)");
    return mt_finish();
}
