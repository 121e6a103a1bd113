/*
 * bench_raw.c - the raw MPI baseline the plugin's figures are divided by
 * (2 ranks, under the same mpiexec as the plugin's benchmarks):
 *
 *   raw_rtt_8B          8-byte round trip (send, receive the reply), us
 *   raw_bw_<size>       one-way bandwidth: rank 0 sends <size> bytes, rank 1
 *                       answers with an empty message once they arrived
 *                       (as a synchronous submit waits for its status), MiB/s
 *   raw_bw_back_<size>  the same from rank 1 to rank 0, the way a retrieve
 *                       goes (the two directions differ here by 10-20%,
 *                       not always the same way), MiB/s
 *   raw_both_ways_<size> <size> bytes from rank 0 to 1 and back, ms (the
 *                       bytes a map(tofrom:) cycle moves)
 *
 * usage: mpiexec -n 2 bench_raw [quick|full]
 *        mpiexec -n N bench_raw init
 *   init: MPI_Init_thread at MPI_THREAD_MULTIPLE (as the plugin asks) and
 *   MPI_Finalize, nothing else, on any number of ranks: the start-up and
 *   end of a job that ci/bench.sh times against a program with a device
 *   (bench_scale start).
 */
#include <mpi.h>

#include "bench_util.h"

static int rank;

static void send_recv(char *buf, size_t size, int peer_first)
{
    /* peer_first: this rank receives first. */
    int n = (int)size;
    if (peer_first) {
        MPI_Recv(buf, n, MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, n, MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD);
    } else {
        MPI_Send(buf, n, MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD);
        MPI_Recv(buf, n, MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

static void rtt(const bench_opts *o)
{
    double v[BENCH_MAX_RUNS];
    char buf[8] = {0};
    int reps = o->quick ? 2000 : 20000;
    send_recv(buf, 8, rank == 1);
    for (int r = 0; r < o->runs; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < reps; i++)
            send_recv(buf, 8, rank == 1);
        v[r] = (MPI_Wtime() - t0) / reps * 1e6;
    }
    if (rank == 0)
        bench_report("raw_rtt_8B", "us", v, o->runs);
}

/* One transfer of `size` bytes from rank `from`, acknowledged by an empty
 * message. */
static void one_way(char *buf, size_t size, int from)
{
    if (rank == from) {
        MPI_Send(buf, (int)size, MPI_BYTE, 1 - from, 1, MPI_COMM_WORLD);
        MPI_Recv(NULL, 0, MPI_BYTE, 1 - from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(buf, (int)size, MPI_BYTE, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(NULL, 0, MPI_BYTE, from, 2, MPI_COMM_WORLD);
    }
}

static void bandwidth(const bench_opts *o, size_t size, char *buf, int from)
{
    double v[BENCH_MAX_RUNS];
    char key[64], sz[32];
    int reps = bench_reps(size);
    one_way(buf, size, from);
    for (int r = 0; r < o->runs; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < reps; i++)
            one_way(buf, size, from);
        v[r] = (double)size * reps / (MPI_Wtime() - t0) / (1 << 20);
    }
    snprintf(key, sizeof key, "raw_bw_%s%s", from ? "back_" : "",
             bench_size_name(size, sz, sizeof sz));
    if (rank == 0)
        bench_report(key, "MiB/s", v, o->runs);
}

static void both_ways(const bench_opts *o, char *buf)
{
    double v[BENCH_MAX_RUNS];
    char key[64], sz[32];
    send_recv(buf, o->map_size, rank == 1);
    for (int r = 0; r < o->runs; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        send_recv(buf, o->map_size, rank == 1);
        v[r] = (MPI_Wtime() - t0) * 1e3;
    }
    snprintf(key, sizeof key, "raw_both_ways_%s",
             bench_size_name(o->map_size, sz, sizeof sz));
    if (rank == 0)
        bench_report(key, "ms", v, o->runs);
}

int main(int argc, char **argv)
{
    int size, provided;
    if (argc > 1 && !strcmp(argv[1], "init")) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        MPI_Finalize();
        return provided == MPI_THREAD_MULTIPLE ? 0 : 1;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "bench_raw: run it on 2 ranks (mpiexec -n 2), not %d\n", size);
        MPI_Finalize();
        return 2;
    }
    bench_opts o = bench_options(argc > 1 ? argv[1] : "full");
    size_t biggest = o.map_size;
    for (int i = 0; i < o.nsizes; i++)
        if (o.sizes[i] > biggest)
            biggest = o.sizes[i];
    char *buf = malloc(biggest);
    if (!buf) {
        fprintf(stderr, "bench_raw: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(buf, 1, biggest);
    rtt(&o);
    for (int i = 0; i < o.nsizes; i++) {
        bandwidth(&o, o.sizes[i], buf, 0);
        bandwidth(&o, o.sizes[i], buf, 1);
    }
    both_ways(&o, buf);
    free(buf);
    MPI_Finalize();
    return 0;
}
