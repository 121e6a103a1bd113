/*
 * bench_abi.c - the plugin measured through its ABI: a C program calling
 * the __tgt_rtl_* entry points directly, as libomptarget would (the device
 * image is the fixture of the mpi tests). Figures, printed as BENCH lines
 * (bench_util.h):
 *
 *   abi_empty_region        synchronous run_target_region of a kernel
 *                           without arguments, us
 *   abi_submit_bw_<size>    synchronous data_submit, MiB/s
 *   abi_retrieve_bw_<size>  synchronous data_retrieve, MiB/s
 *   abi_map_cycle_<size>    alloc, submit, run a kernel on the buffer,
 *                           retrieve, delete (what a target map(tofrom:)
 *                           does), after one warm-up cycle, ms
 *   abi_alloc_free_<label>  data_alloc + data_delete of 4 KiB, us
 *   abi_idle_cpu_<label>    CPU of both ranks while the host sleeps with
 *                           nothing pending, % of one core
 *   abi_event_bytes         host heap (mallinfo2) per queued 1-byte async
 *                           submit, 10,000 of them on one queue behind a
 *                           wait, the payload subtracted, bytes (CHECK
 *                           abi_event_bytes_queued: they were still queued)
 *   abi_nowait_rate         concurrent async kernels (8 host threads, one
 *                           queue per thread and device), regions/s; every
 *                           result is checked (CHECK abi_nowait_<N>)
 *
 * usage (rank 0 of an MPI job, OMPTARGET_MPI_LAUNCHER=1, MPICH's mpiexec):
 *   bench_abi main   quick|full   2 ranks: all but nowait, labels pool_on, sleep
 *   bench_abi alloc  quick|full LABEL   only abi_alloc_free_LABEL
 *   bench_abi idle   quick|full LABEL   only abi_idle_cpu_LABEL
 *   bench_abi nowait quick|full   3 ranks or more
 */
#include <malloc.h>
#include <pthread.h>

#include "../tests/mpi/mpi_common.h"
#include "bench_util.h"

#define OK OFFLOAD_SUCCESS
#define ALLOC_SIZE 4096
#define THREADS 8

static bench_opts o;

static void die(const char *what)
{
    printf("CHECK abi_run FAIL %s\n", what);
    fflush(stdout);
    exit(1);
}

static void empty_region(void)
{
    double v[BENCH_MAX_RUNS];
    int reps = o.quick ? 200 : 2000;
    void *k = mt.fx[0][MT_FX_WHICH];
    if (__tgt_rtl_run_target_region(0, k, NULL, NULL, 0) != OK)
        die("run_target_region of an empty kernel");
    for (int r = 0; r < o.runs; r++) {
        double t0 = bench_now();
        for (int i = 0; i < reps; i++)
            if (__tgt_rtl_run_target_region(0, k, NULL, NULL, 0) != OK)
                die("run_target_region of an empty kernel");
        v[r] = (bench_now() - t0) / reps * 1e6;
    }
    bench_report("abi_empty_region", "us", v, o.runs);
}

static void bandwidth(int retrieve, size_t size, char *host, void *tgt)
{
    double v[BENCH_MAX_RUNS];
    char key[64], sz[32];
    int reps = bench_reps(size);
    for (int r = -1; r < o.runs; r++) {     /* r = -1: warm-up */
        double t0 = bench_now();
        for (int i = 0; i < (r < 0 ? 1 : reps); i++) {
            int32_t rc = retrieve ? __tgt_rtl_data_retrieve(0, host, tgt, (int64_t)size)
                                  : __tgt_rtl_data_submit(0, tgt, host, (int64_t)size);
            if (rc != OK)
                die(retrieve ? "data_retrieve" : "data_submit");
        }
        if (r >= 0)
            v[r] = (double)size * reps / (bench_now() - t0) / (1 << 20);
    }
    snprintf(key, sizeof key, "abi_%s_bw_%s", retrieve ? "retrieve" : "submit",
             bench_size_name(size, sz, sizeof sz));
    bench_report(key, "MiB/s", v, o.runs);
}

static void bandwidths(void)
{
    size_t biggest = o.sizes[o.nsizes - 1];
    char *host = malloc(biggest);
    void *tgt = __tgt_rtl_data_alloc(0, (int64_t)biggest, NULL, TARGET_ALLOC_DEFAULT);
    if (!host || !tgt)
        die("buffers of the bandwidth runs");
    memset(host, 7, biggest);
    for (int i = 0; i < o.nsizes; i++) {
        bandwidth(0, o.sizes[i], host, tgt);
        bandwidth(1, o.sizes[i], host, tgt);
    }
    __tgt_rtl_data_delete(0, tgt);
    free(host);
}

static void map_cycle(void)
{
    double v[BENCH_MAX_RUNS];
    char key[64], sz[32];
    size_t size = o.map_size;
    char *host = malloc(size);
    if (!host)
        die("host buffer of the map cycle");
    memset(host, 3, size);
    for (int r = -1; r < o.runs; r++) {     /* r = -1: warms the pool up */
        double t0 = bench_now();
        void *tgt = __tgt_rtl_data_alloc(0, (int64_t)size, host, TARGET_ALLOC_DEFAULT);
        void *args[1] = {tgt};
        ptrdiff_t offsets[1] = {0};
        if (!tgt || __tgt_rtl_data_submit(0, tgt, host, (int64_t)size) != OK ||
            __tgt_rtl_run_target_region(0, mt.fx[0][MT_FX_GETPID], args, offsets, 1) != OK ||
            __tgt_rtl_data_retrieve(0, host, tgt, (int64_t)size) != OK ||
            __tgt_rtl_data_delete(0, tgt) != OK)
            die("map cycle");
        if (r >= 0)
            v[r] = (bench_now() - t0) * 1e3;
    }
    snprintf(key, sizeof key, "abi_map_cycle_%s", bench_size_name(size, sz, sizeof sz));
    bench_report(key, "ms", v, o.runs);
    free(host);
}

static void alloc_free(const char *label)
{
    double v[BENCH_MAX_RUNS];
    char key[64];
    int reps = o.quick ? 200 : 2000;
    for (int r = -1; r < o.runs; r++) {
        double t0 = bench_now();
        for (int i = 0; i < (r < 0 ? 1 : reps); i++) {
            void *p = __tgt_rtl_data_alloc(0, ALLOC_SIZE, NULL, TARGET_ALLOC_DEFAULT);
            if (!p || __tgt_rtl_data_delete(0, p) != OK)
                die("data_alloc + data_delete");
        }
        if (r >= 0)
            v[r] = (bench_now() - t0) / reps * 1e6;
    }
    snprintf(key, sizeof key, "abi_alloc_free_%s", label);
    bench_report(key, "us", v, o.runs);
}

static long worker_pid(void)
{
    int64_t pid = 0;
    void *out = __tgt_rtl_data_alloc(0, sizeof pid, NULL, TARGET_ALLOC_DEFAULT);
    void *args[1] = {out};
    ptrdiff_t offsets[1] = {0};
    if (!out || __tgt_rtl_run_target_region(0, mt.fx[0][MT_FX_GETPID], args, offsets, 1) != OK ||
        __tgt_rtl_data_retrieve(0, &pid, out, sizeof pid) != OK ||
        __tgt_rtl_data_delete(0, out) != OK)
        die("the worker's pid");
    return (long)pid;
}

static void idle_cpu(const char *label)
{
    double v[BENCH_MAX_RUNS];
    char key[64];
    long pid = worker_pid();
    for (int r = 0; r < o.runs; r++)
        if ((v[r] = bench_idle_cpu(pid, o.idle_s)) < 0)
            die("reading /proc/<pid>/stat of both ranks");
    snprintf(key, sizeof key, "abi_idle_cpu_%s", label);
    bench_report(key, "%core", v, o.runs);
}

/* Heap bytes per queued event: N one-byte async submits on one queue, the
 * heap (mallinfo2) read before and after queueing, before synchronize.
 * They queue behind a wait for a 256 MiB submit on another queue: events
 * chained behind a running one (otm/event.h) would otherwise start, and
 * end, while the rest are queued. The figure only counts when that submit
 * was still running at the second reading (CHECK abi_event_bytes_queued). */
#define GATE_BYTES (256u << 20)

static void event_bytes(void)
{
    double v[BENCH_MAX_RUNS];
    int n = o.quick ? 1000 : 10000, moved = 0;
    static char byte = 1;
    char *big = malloc(GATE_BYTES);
    void *tgt = __tgt_rtl_data_alloc(0, 1, NULL, TARGET_ALLOC_DEFAULT);
    void *gate = __tgt_rtl_data_alloc(0, GATE_BYTES, NULL, TARGET_ALLOC_DEFAULT);
    void *ev = NULL;
    if (!big || !tgt || !gate || __tgt_rtl_create_event(0, &ev) != OK)
        die("buffers and event of the event records");
    memset(big, 1, GATE_BYTES);
    for (int r = 0; r < o.runs; r++) {
        __tgt_async_info ai = {0}, slow = {0};
        /* The queue itself is created by the first submit: not counted. */
        if (__tgt_rtl_data_submit_async(0, tgt, &byte, 1, &ai) != OK ||
            __tgt_rtl_synchronize(0, &ai) != OK)
            die("async submit");
        if (__tgt_rtl_data_submit_async(0, gate, big, GATE_BYTES, &slow) != OK ||
            __tgt_rtl_record_event(0, ev, &slow) != OK ||
            __tgt_rtl_wait_event(0, ev, &ai) != OK)
            die("the wait the submits queue behind");
        struct mallinfo2 m0 = mallinfo2();
        for (int i = 0; i < n; i++)
            if (__tgt_rtl_data_submit_async(0, tgt, &byte, 1, &ai) != OK)
                die("async submit");
        struct mallinfo2 m1 = mallinfo2();
        if (__tgt_rtl_query_async(0, &slow) != OK)
            die("query of the 256 MiB submit");
        moved += slow.Queue == NULL;
        if (__tgt_rtl_synchronize(0, &ai) != OK ||
            (slow.Queue && __tgt_rtl_synchronize(0, &slow) != OK))
            die("synchronize of the queued submits");
        v[r] = ((double)m1.uordblks - (double)m0.uordblks) / n - 1.0;
    }
    __tgt_rtl_destroy_event(0, ev);
    __tgt_rtl_data_delete(0, gate);
    __tgt_rtl_data_delete(0, tgt);
    free(big);
    bench_report("abi_event_bytes", "B", v, o.runs);
    printf("CHECK abi_event_bytes_queued %s %d run(s) of %d queued submits, %d of them "
           "measured after the 256 MiB submit they waited for had ended\n",
           moved ? "FAIL" : "PASS", o.runs, n, moved);
}

/* ---- concurrent async kernels ---- */

typedef struct nowait_job {
    int thread, n, ndev;
    void **a;               /* per device: int64 a[n], b[n] */
    void **b;
    int failed;
} nowait_job;

/* Thread t runs regions i = t, t + THREADS, ...: a[i] += b[i] on device
 * i % ndev, on its own queue of that device, then synchronizes. */
static void *nowait_thread(void *arg)
{
    nowait_job *j = arg;
    __tgt_async_info ai[MT_MAX_DEV] = {{0}};
    for (int i = j->thread; i < j->n; i += THREADS) {
        int d = i % j->ndev;
        void *args[2] = {(char *)j->a[d] + 8 * (size_t)i, (char *)j->b[d] + 8 * (size_t)i};
        ptrdiff_t offsets[2] = {0, 0};
        if (__tgt_rtl_run_target_region_async(d, mt.fx[d][MT_FX_ADD], args, offsets, 2,
                                              &ai[d]) != OK)
            j->failed = 1;
    }
    for (int d = 0; d < j->ndev; d++)
        if (ai[d].Queue && __tgt_rtl_synchronize(d, &ai[d]) != OK)
            j->failed = 1;
    return NULL;
}

static void nowait(void)
{
    double v[BENCH_MAX_RUNS];
    int n = o.regions, ndev = mt.ndev, bad = 0;
    size_t bytes = 8 * (size_t)n;
    int64_t *a = malloc(bytes), *b = malloc(bytes), *got = malloc(bytes);
    void *da[MT_MAX_DEV], *db[MT_MAX_DEV];
    if (!a || !b || !got)
        die("host arrays of the nowait run");
    for (int i = 0; i < n; i++)
        a[i] = i, b[i] = 2 * (int64_t)i + 1;
    for (int d = 0; d < ndev; d++) {
        da[d] = __tgt_rtl_data_alloc(d, (int64_t)bytes, NULL, TARGET_ALLOC_DEFAULT);
        db[d] = __tgt_rtl_data_alloc(d, (int64_t)bytes, NULL, TARGET_ALLOC_DEFAULT);
        if (!da[d] || !db[d] || __tgt_rtl_data_submit(d, db[d], b, (int64_t)bytes) != OK)
            die("device arrays of the nowait run");
    }
    for (int r = 0; r < o.runs; r++) {
        for (int d = 0; d < ndev; d++)
            if (__tgt_rtl_data_submit(d, da[d], a, (int64_t)bytes) != OK)
                die("data_submit");
        pthread_t th[THREADS];
        nowait_job jobs[THREADS];
        double t0 = bench_now();
        for (int t = 0; t < THREADS; t++) {
            jobs[t] = (nowait_job){t, n, ndev, da, db, 0};
            if (pthread_create(&th[t], NULL, nowait_thread, &jobs[t]))
                die("pthread_create");
        }
        for (int t = 0; t < THREADS; t++) {
            pthread_join(th[t], NULL);
            bad += jobs[t].failed;
        }
        v[r] = n / (bench_now() - t0);
        /* Region i ran on device i % ndev only: a[i] = 3i + 1 there, the
         * submitted i on every other device. */
        for (int d = 0; d < ndev; d++) {
            if (__tgt_rtl_data_retrieve(d, got, da[d], (int64_t)bytes) != OK)
                die("data_retrieve");
            for (int i = 0; i < n; i++)
                bad += got[i] != (i % ndev == d ? 3 * (int64_t)i + 1 : i);
        }
    }
    bench_report("abi_nowait_rate", "regions/s", v, o.runs);
    printf("CHECK abi_nowait_%d %s %d concurrent async kernels over %d devices, "
           "%d run(s), %d wrong result(s) or failed call(s)\n",
           n, bad ? "FAIL" : "PASS", n, ndev, o.runs, bad);
    /* Also a failed check of the program, so that its exit status says so. */
    CHECKQ(bad == 0, "%d concurrent async kernels: %d wrong result(s)", n, bad);
    for (int d = 0; d < ndev; d++) {
        __tgt_rtl_data_delete(d, da[d]);
        __tgt_rtl_data_delete(d, db[d]);
    }
    free(a), free(b), free(got);
}

int main(int argc, char **argv)
{
    const char *part = argc > 1 ? argv[1] : "";
    const char *label = argc > 3 ? argv[3] : "";
    int known = !strcmp(part, "main") || !strcmp(part, "nowait") ||
                ((!strcmp(part, "alloc") || !strcmp(part, "idle")) && *label);
    if (!known || argc < 3 || (strcmp(argv[2], "quick") && strcmp(argv[2], "full"))) {
        fprintf(stderr, "usage: bench_abi main|nowait quick|full\n"
                        "       bench_abi alloc|idle quick|full LABEL\n");
        return 2;
    }
    o = bench_options(argv[2]);
    mt_start("bench_abi", 1);
    if (!strcmp(part, "main")) {
        empty_region();
        bandwidths();
        map_cycle();
        alloc_free("pool_on");
        event_bytes();
        idle_cpu("sleep");
    } else if (!strcmp(part, "alloc")) {
        alloc_free(label);
    } else if (!strcmp(part, "idle")) {
        idle_cpu(label);
    } else {
        nowait();
    }
    return mt_finish();
}
