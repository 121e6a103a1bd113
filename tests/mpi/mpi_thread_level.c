/*
 * mpi_thread_level.c - a program that initialises MPI itself, at
 * MPI_THREAD_FUNNELED, before its first call into the plugin. The plugin
 * needs MPI_THREAD_MULTIPLE, so it must offer 0 devices, say why on stderr
 * (naming the level it got) and leave the program's MPI alone: not
 * finalised, still usable. Runs as one rank (the refusal comes before the
 * plugin looks at the job's size); exit status 0 when every check passed.
 */
#include <mpi.h>
#include <string.h>

#include "mpi_common.h"

int main(void)
{
    int provided = -1;
    if (!CHECK(MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) == MPI_SUCCESS,
               "the program initialises MPI at MPI_THREAD_FUNNELED"))
        return 1;
    /* Both MPICH and Open MPI grant the level asked for; a library that
     * granted more would leave nothing to check here. */
    CHECK(provided == MPI_THREAD_FUNNELED,
          "the library granted MPI_THREAD_FUNNELED (got %d)", provided);

    mt_capture_begin();
    int32_t n = __tgt_rtl_number_of_devices();
    const char *err = mt_capture_end();
    CHECK(n == 0, "number_of_devices is 0 (got %d)", (int)n);
    CHECK(strstr(err, "granted MPI_THREAD_FUNNELED, not MPI_THREAD_MULTIPLE") != NULL,
          "the plugin says it got MPI_THREAD_FUNNELED, not MPI_THREAD_MULTIPLE");
    CHECK(strstr(err, "request MPI_THREAD_MULTIPLE from MPI_Init_thread") != NULL,
          "... and what the program should do");
    CHECK(__tgt_rtl_number_of_devices() == 0, "number_of_devices stays 0");

    int finalized = 1, sum = 0, one = 1;
    MPI_Finalized(&finalized);
    CHECK(!finalized, "the plugin did not finalise the program's MPI");
    int rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS && sum == 1,
          "the program's MPI still works (allreduce over 1 rank: %d)", sum);
    MPI_Finalize();
    return mt_failures() ? 1 : 0;
}
