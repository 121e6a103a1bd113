/* pingpong.c - raw MPI 8-byte round trip between ranks 0 and 1 (median of
 * 5 runs of 20,000), the baseline of the plugin's launch time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rank;
    char buf[8] = {0};
    double runs[5];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int r = 0; r < 5; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < 20000; i++) {
            if (rank == 0) {
                MPI_Send(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        runs[r] = (MPI_Wtime() - t0) / 20000 * 1e6;
    }
    qsort(runs, 5, sizeof *runs, cmp);
    if (rank == 0)
        printf("raw MPI 8-byte round trip: median %.2f us (min %.2f, max %.2f)\n", runs[2],
               runs[0], runs[4]);
    MPI_Finalize();
    return 0;
}
