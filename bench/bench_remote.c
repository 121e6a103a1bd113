/*
 * bench_remote.c - what a proxied device costs against the device rank's
 * own CPU: run with OMPTARGET_MPI_REMOTE_PLUGINS=host on 2 ranks, device 0
 * is rank 1's CPU and device 1 the first device of its node's host plugin,
 * served through that plugin's C ABI. In one run, alternating the two
 * devices so that both see the same load:
 *
 *   remote_empty_cpu / _proxied      an empty target region      (us)
 *   remote_1m_cpu / _proxied         1 MiB map(tofrom:) around an
 *                                    empty region: a round trip  (us)
 *
 * Every byte of the round trip is checked on the host (CHECK line).
 *
 * usage: bench_remote quick|full
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define MIB (1u << 20)

static long wrong;

/* Seconds per empty region on device d, over n regions. */
static double empty(int d, int n)
{
    double t0 = bench_now();
    for (int i = 0; i < n; i++) {
#pragma omp target device(d)
        {
        }
    }
    return (bench_now() - t0) / n;
}

/* Seconds per 1 MiB round trip to device d (the region adds 1 to every
 * byte, so that the bytes that come back are checked), over n. */
static double round_trip(int d, int n, unsigned char *buf)
{
    double t = 0;
    for (int i = 0; i < n; i++) {
        memset(buf, i & 0x7f, MIB);
        double t0 = bench_now();
#pragma omp target device(d) map(tofrom : buf[0 : MIB])
        buf[0]++;
        t += bench_now() - t0;
        wrong += buf[0] != (unsigned char)((i & 0x7f) + 1) || buf[MIB - 1] != (i & 0x7f);
    }
    return t / n;
}

int main(int argc, char **argv)
{
    static const char *keys[2][2] = {{"remote_empty_cpu", "remote_empty_proxied"},
                                     {"remote_1m_cpu", "remote_1m_proxied"}};
    bench_opts o = bench_options(argc > 1 ? argv[1] : "quick");
    if (omp_get_num_devices() < 2) {
        fprintf(stderr, "bench_remote: %d device(s); run it on 2 ranks under omptarget-mpirun "
                "with OMPTARGET_MPI_REMOTE_PLUGINS=host\n", omp_get_num_devices());
        return 1;
    }
    unsigned char *buf = malloc(MIB);
    if (!buf)
        return 1;
    for (int d = 0; d < 2; d++)     /* the first region loads the image */
        empty(d, 1);
    int n_empty = o.quick ? 200 : 2000, n_trip = o.quick ? 20 : 200;
    double per[2][2][BENCH_MAX_RUNS];
    for (int r = 0; r < o.runs; r++) {
        for (int d = 0; d < 2; d++) {
            per[0][d][r] = 1e6 * empty(d, n_empty);
            per[1][d][r] = 1e6 * round_trip(d, n_trip, buf);
        }
    }
    for (int k = 0; k < 2; k++)
        for (int d = 0; d < 2; d++)
            bench_report(keys[k][d], "us", per[k][d], o.runs);
    printf("CHECK remote_round_trip %s every byte back as the region left it (%ld wrong)\n",
           wrong ? "FAIL" : "PASS", wrong);
    free(buf);
    return wrong != 0;
}
