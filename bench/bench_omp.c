/*
 * bench_omp.c - the plugin under stock libomptarget 14: an OpenMP program
 * built by clang-14 (-fopenmp -fopenmp-targets=x86_64-pc-linux-gnu) and run
 * through omptarget-mpirun. Figures, printed as BENCH lines (bench_util.h):
 *
 *   omp_empty_region        `target` with an empty body, us
 *   omp_submit_bw_<size>    `target update to` of a mapped array, MiB/s
 *   omp_retrieve_bw_<size>  `target update from`, MiB/s
 *   omp_map_cycle_<size>    `target map(tofrom: a[0:n])` of a one-line body,
 *                           after one warm-up cycle, ms
 *   omp_alloc_free_<label>  omp_target_alloc + omp_target_free of 4 KiB, us
 *   omp_idle_cpu_<label>    CPU of both ranks while the host sleeps with
 *                           nothing pending, % of one core
 *   omp_nowait_rate         `target nowait` regions spread over every
 *                           device, all in flight before one taskwait,
 *                           regions/s; every result is checked
 *                           (CHECK omp_nowait_<N>); with a LABEL,
 *                           omp_nowait_rate_<label> and
 *                           CHECK omp_nowait_<label>_<N>, and with
 *                           DEVICES, over the first DEVICES devices only
 *   omp_region_<label>      an empty `target` in a job of its own, us:
 *                           LABEL on / off says whether the regions' output
 *                           is forwarded (its cost per region)
 *   omp_from4_region_<label>  a `target` with map(from:) of four 4 KiB
 *                           arrays, us: four retrieves, each complete
 *                           before the next is issued (the retrieve rule)
 *
 * usage: omptarget-mpirun -n 2 bench_omp main quick|full
 *        omptarget-mpirun -n 2 bench_omp alloc|idle|regions quick|full LABEL
 *        omptarget-mpirun -n 3 bench_omp nowait quick|full [LABEL [DEVICES]]
 */
#include <omp.h>
#include <stdint.h>

#include "bench_util.h"

#define ALLOC_SIZE 4096

static bench_opts o;

static void die(const char *what)
{
    printf("CHECK omp_run FAIL %s\n", what);
    fflush(stdout);
    exit(1);
}

static void empty_region(void)
{
    double v[BENCH_MAX_RUNS];
    int reps = o.quick ? 200 : 2000;
#pragma omp target
    { }
    for (int r = 0; r < o.runs; r++) {
        double t0 = bench_now();
        for (int i = 0; i < reps; i++) {
#pragma omp target
            { }
        }
        v[r] = (bench_now() - t0) / reps * 1e6;
    }
    bench_report("omp_empty_region", "us", v, o.runs);
}

/* Regions in a job of their own, so that the setting under test
 * (OMPTARGET_MPI_FORWARD_OUTPUT) is all that differs between two jobs. */
static void regions(const char *label)
{
    enum { N = 512 };
    static int a[N], b[N], c[N], d[N];
    double v[BENCH_MAX_RUNS], w[BENCH_MAX_RUNS];
    char key[64];
    int reps = o.quick ? 200 : 2000;
#pragma omp target map(from: a, b, c, d)
    { a[0] = b[0] = c[0] = d[0] = 1; }
    for (int r = 0; r < o.runs; r++) {
        double t0 = bench_now();
        for (int i = 0; i < reps; i++) {
#pragma omp target
            { }
        }
        v[r] = (bench_now() - t0) / reps * 1e6;
        t0 = bench_now();
        for (int i = 0; i < reps; i++) {
#pragma omp target map(from: a, b, c, d)
            { a[1] = b[1] = c[1] = d[1] = i; }
        }
        w[r] = (bench_now() - t0) / reps * 1e6;
    }
    if (a[1] != reps - 1 || d[1] != reps - 1)
        die("the map(from:) regions did not bring their values back");
    snprintf(key, sizeof key, "omp_region_%s", label);
    bench_report(key, "us", v, o.runs);
    snprintf(key, sizeof key, "omp_from4_region_%s", label);
    bench_report(key, "us", w, o.runs);
}

static void bandwidth(int retrieve, size_t size, char *buf)
{
    double v[BENCH_MAX_RUNS];
    char key[64], sz[32];
    int reps = bench_reps(size);
    for (int r = -1; r < o.runs; r++) {     /* r = -1: warm-up */
        double t0 = bench_now();
        for (int i = 0; i < (r < 0 ? 1 : reps); i++) {
            if (retrieve) {
#pragma omp target update from(buf[0:size])
            } else {
#pragma omp target update to(buf[0:size])
            }
        }
        if (r >= 0)
            v[r] = (double)size * reps / (bench_now() - t0) / (1 << 20);
    }
    snprintf(key, sizeof key, "omp_%s_bw_%s", retrieve ? "retrieve" : "submit",
             bench_size_name(size, sz, sizeof sz));
    bench_report(key, "MiB/s", v, o.runs);
}

static void bandwidths(void)
{
    size_t biggest = o.sizes[o.nsizes - 1];
    char *buf = malloc(biggest);
    if (!buf)
        die("buffer of the bandwidth runs");
    memset(buf, 7, biggest);
#pragma omp target enter data map(alloc: buf[0:biggest])
    for (int i = 0; i < o.nsizes; i++) {
        bandwidth(0, o.sizes[i], buf);
        bandwidth(1, o.sizes[i], buf);
    }
#pragma omp target exit data map(delete: buf[0:biggest])
    free(buf);
}

static void map_cycle(void)
{
    double v[BENCH_MAX_RUNS];
    char key[64], sz[32];
    size_t n = o.map_size;
    unsigned char *a = malloc(n);
    if (!a)
        die("buffer of the map cycle");
    memset(a, 0, n);
    for (int r = -1; r < o.runs; r++) {     /* r = -1: warms the pool up */
        double t0 = bench_now();
#pragma omp target map(tofrom: a[0:n])
        a[0]++;
        if (r >= 0)
            v[r] = (bench_now() - t0) * 1e3;
    }
    if (a[0] != (unsigned char)(o.runs + 1))
        die("map(tofrom:) cycle: the device's writes did not come back");
    snprintf(key, sizeof key, "omp_map_cycle_%s", bench_size_name(n, sz, sizeof sz));
    bench_report(key, "ms", v, o.runs);
    free(a);
}

static void alloc_free(const char *label)
{
    double v[BENCH_MAX_RUNS];
    char key[64];
    int reps = o.quick ? 200 : 2000;
    for (int r = -1; r < o.runs; r++) {
        double t0 = bench_now();
        for (int i = 0; i < (r < 0 ? 1 : reps); i++) {
            void *p = omp_target_alloc(ALLOC_SIZE, 0);
            if (!p)
                die("omp_target_alloc");
            omp_target_free(p, 0);
        }
        if (r >= 0)
            v[r] = (bench_now() - t0) / reps * 1e6;
    }
    snprintf(key, sizeof key, "omp_alloc_free_%s", label);
    bench_report(key, "us", v, o.runs);
}

static void idle_cpu(const char *label)
{
    double v[BENCH_MAX_RUNS];
    char key[64];
    long pid = 0;
#pragma omp target map(from: pid)
    pid = (long)getpid();
    if (pid == (long)getpid())
        die("the target region ran on the host: no device");
    for (int r = 0; r < o.runs; r++)
        if ((v[r] = bench_idle_cpu(pid, o.idle_s)) < 0)
            die("reading /proc/<pid>/stat of both ranks");
    snprintf(key, sizeof key, "omp_idle_cpu_%s", label);
    bench_report(key, "%core", v, o.runs);
}

/* Wrong nowait results: the program's exit status is 1 when there are any. */
static long wrong;

static void nowait(const char *label, int devices)
{
    char key[64], ck[64];
    double v[BENCH_MAX_RUNS];
    int n = o.regions, ndev = omp_get_num_devices();
    if (devices > 0 && devices < ndev)
        ndev = devices;
    long bad = 0;
    int *res = malloc(sizeof *res * (size_t)n);
    if (!res || ndev < 1)
        die("nowait: no device or no memory");
    for (int r = 0; r < o.runs; r++) {
        for (int i = 0; i < n; i++)
            res[i] = -1;
        double t0 = bench_now();
#pragma omp parallel
#pragma omp single
        {
            for (int i = 0; i < n; i++) {
#pragma omp target nowait device(i % ndev) map(from: res[i:1]) firstprivate(i)
                res[i] = 3 * i + 1 + (omp_is_initial_device() ? -1 : 0);
            }
#pragma omp taskwait
        }
        v[r] = n / (bench_now() - t0);
        for (int i = 0; i < n; i++)
            bad += res[i] != 3 * i + 1;
    }
    snprintf(key, sizeof key, "omp_nowait_rate%s%s", *label ? "_" : "", label);
    snprintf(ck, sizeof ck, "omp_nowait_%s%s%d", label, *label ? "_" : "", n);
    bench_report(key, "regions/s", v, o.runs);
    printf("CHECK %s %s %d concurrent target nowait regions over %d devices, "
           "%d run(s), %ld wrong result(s) (a region run on the host counts as wrong)\n",
           ck, bad ? "FAIL" : "PASS", n, ndev, o.runs, bad);
    free(res);
    wrong += bad;
}

int main(int argc, char **argv)
{
    const char *part = argc > 1 ? argv[1] : "";
    const char *label = argc > 3 ? argv[3] : "";
    int known = !strcmp(part, "main") || !strcmp(part, "nowait") ||
                ((!strcmp(part, "alloc") || !strcmp(part, "idle") ||
                  !strcmp(part, "regions")) && *label);
    if (!known || argc < 3 || (strcmp(argv[2], "quick") && strcmp(argv[2], "full"))) {
        fprintf(stderr, "usage: bench_omp main quick|full\n"
                        "       bench_omp nowait quick|full [LABEL [DEVICES]]\n"
                        "       bench_omp alloc|idle|regions quick|full LABEL\n");
        return 2;
    }
    o = bench_options(argv[2]);
    if (omp_get_num_devices() < 1)
        die("no device: run it through omptarget-mpirun -n 2 (or more)");
    if (!strcmp(part, "main")) {
        empty_region();
        bandwidths();
        map_cycle();
        alloc_free("pool_on");
        idle_cpu("sleep");
    } else if (!strcmp(part, "alloc")) {
        alloc_free(label);
    } else if (!strcmp(part, "idle")) {
        idle_cpu(label);
    } else if (!strcmp(part, "regions")) {
        regions(label);
    } else {
        nowait(label, argc > 4 ? atoi(argv[4]) : 0);
    }
    return wrong ? 1 : 0;
}
