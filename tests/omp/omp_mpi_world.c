/*
 * omp_mpi_world.c - EXPECTED TO FAIL: after a target region, the program
 * calls MPI_Allreduce on MPI_COMM_WORLD, whose other ranks are its
 * devices and never run main. The call must fail at once with a line
 * naming it and saying what to use instead; under MPI's default error
 * handler, MPI_ERRORS_ARE_FATAL, the job then ends in order with status 1
 * (the driver checks the line, the status, the devices' acknowledgements
 * and that no process is left). It must never wait.
 */
#define OMP_TEST_NAME "omp_mpi_world"
#include <mpi.h>

#include "omp_check.h"

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS, "MPI_Init failed");
    require_devices(1);
    int x = 0;
    #pragma omp target map(tofrom: x)
    x = 21;
    printf("RUN omp_mpi_world: MPI_Allreduce on MPI_COMM_WORLD after a region\n");
    int sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    /* Not reached: MPI_ERRORS_ARE_FATAL ends the job. */
    printf("FAIL omp_mpi_world: MPI_Allreduce returned (sum %d)\n", sum);
    return 0;
}
