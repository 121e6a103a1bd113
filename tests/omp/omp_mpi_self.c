/*
 * omp_mpi_self.c - the program's MPI between target regions, on the
 * communicators that hold only its own process: MPI_COMM_SELF, a
 * duplicate and a split of it, and rank 0 of MPI_COMM_WORLD as the peer of
 * its own messages. Each region's result goes through MPI and comes back
 * into the next region; every return value is checked.
 */
#define OMP_TEST_NAME "omp_mpi_self"
#include <mpi.h>

#include "omp_check.h"

#define N 1024

#define MPI_OK(call) CHECK((call) == MPI_SUCCESS, "%s failed", #call)

/* sum(v) on device d, then v[i] += i there. */
static long device_step(int d, long *v)
{
    long sum = 0;
    #pragma omp target teams distribute parallel for device(d) map(tofrom: v[0:N]) \
        reduction(+: sum)
    for (int i = 0; i < N; i++) {
        sum += v[i];
        v[i] += i;
    }
    return sum;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_OK(MPI_Init(&argc, &argv));
    printf("RUN omp_mpi_self: MPI_COMM_SELF between target regions\n");
    int ndev = require_devices(1);

    MPI_Comm self, split;
    int size = -1, rank = -1;
    MPI_OK(MPI_Comm_dup(MPI_COMM_SELF, &self));
    MPI_OK(MPI_Comm_split(MPI_COMM_SELF, 7, 0, &split));
    MPI_OK(MPI_Comm_size(self, &size));
    MPI_OK(MPI_Comm_rank(split, &rank));
    CHECK(size == 1 && rank == 0, "a copy of MPI_COMM_SELF has %d ranks, rank %d", size,
          rank);

    static long v[N], w[N];
    for (int i = 0; i < N; i++)
        v[i] = 1;
    long expect = N;
    for (int step = 0; step < 3 * ndev; step++) {
        int d = step % ndev;
        long sum = device_step(d, v), total = -1;
        CHECK(sum == expect, "step %d: the region summed %ld, expected %ld", step, sum,
              expect);
        /* Collectives of one process, on each kind of communicator. */
        MPI_OK(MPI_Allreduce(&sum, &total, 1, MPI_LONG, MPI_SUM, self));
        CHECK(total == sum, "allreduce over a copy of MPI_COMM_SELF: %ld", total);
        MPI_OK(MPI_Bcast(v, N, MPI_LONG, 0, split));
        MPI_OK(MPI_Barrier(MPI_COMM_SELF));
        /* The vector to itself: on MPI_COMM_SELF, and on MPI_COMM_WORLD
         * with rank 0, this process, at both ends. */
        MPI_Request req;
        MPI_Comm comm = step % 2 ? MPI_COMM_WORLD : MPI_COMM_SELF;
        MPI_OK(MPI_Irecv(w, N, MPI_LONG, 0, step, comm, &req));
        MPI_OK(MPI_Send(v, N, MPI_LONG, 0, step, comm));
        MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        MPI_OK(MPI_Sendrecv(w, N, MPI_LONG, 0, 99, v, N, MPI_LONG, 0, 99, comm,
                            MPI_STATUS_IGNORE));
        expect = sum + (long)N * (N - 1) / 2;
    }
    for (int i = 0; i < N; i++)
        CHECK(v[i] == 1 + 3L * ndev * i, "v[%d] = %ld, expected %ld", i, v[i],
              1 + 3L * ndev * i);
    MPI_OK(MPI_Comm_free(&split));
    MPI_OK(MPI_Comm_free(&self));
    MPI_OK(MPI_Finalize());
    PASS("%d regions, their sums through MPI_COMM_SELF, a copy, a split and rank 0 of "
         "MPI_COMM_WORLD", 3 * ndev);
}
