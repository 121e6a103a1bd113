/*
 * mpi_one_rank.c - a job of one rank under the program's MPI layer
 * (src/pmpi, preloaded as the launcher does): the plugin has no device to
 * offer, yet it initialised MPI, so it leaves MPI up for the program. The
 * program's MPI_Init succeeds, MPI_COMM_WORLD (this process alone) works,
 * nothing is refused; with "finalize" the program finalises MPI itself,
 * without it the plugin does at the process's exit (mpiexec would report
 * a process that ends without MPI_Finalize). Exit status 0 when every
 * check passed; the driver also requires mpiexec's status 0.
 */
#include <mpi.h>
#include <string.h>

#include "mpi_common.h"

int main(int argc, char **argv)
{
    int finalize = argc > 1 && strcmp(argv[1], "finalize") == 0;
    CHECK(__tgt_rtl_number_of_devices() == 0, "one rank: 0 devices");
    int flag = -1, sum = 0, one = 1, size = 0;
    MPI_Initialized(&flag);
    CHECK(flag == 0, "MPI_Initialized: 0 before the program's MPI_Init (got %d)", flag);
    CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS, "the program's MPI_Init succeeds");
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS && sum == 1 && size == 1,
          "MPI_COMM_WORLD is this process alone and is not refused (sum %d)", sum);
    if (finalize) {
        CHECK(MPI_Finalize() == MPI_SUCCESS, "the program's MPI_Finalize succeeds");
        MPI_Finalized(&flag);
        CHECK(flag == 1, "MPI_Finalized: 1 after it (got %d)", flag);
    }
    printf("# mpi_one_rank: %s\n", mt_failures() ? "FAIL" : "PASS");
    return mt_failures() ? 1 : 0;
}
