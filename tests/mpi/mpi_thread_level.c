/*
 * mpi_thread_level.c - a program that initialises MPI itself, at
 * MPI_THREAD_FUNNELED (or the level its argument names: SINGLE,
 * SERIALIZED), before its first call into the plugin. The plugin needs
 * MPI_THREAD_MULTIPLE, so it must offer 0 devices, say why on stderr
 * (naming the level it got) and leave the program's MPI alone: not
 * finalised, still usable. Runs as one rank (the refusal comes before the
 * plugin looks at the job's size); exit status 0 when every check passed.
 * With the program's MPI layer preloaded (src/pmpi, as omptarget-mpirun
 * runs programs) the same holds: the plugin never attached, so the layer
 * passes every call on.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "mpi_common.h"

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int level;
    } levels[] = {{"SINGLE", MPI_THREAD_SINGLE},
                  {"FUNNELED", MPI_THREAD_FUNNELED},
                  {"SERIALIZED", MPI_THREAD_SERIALIZED}};
    const char *name = argc > 1 ? argv[1] : "FUNNELED";
    int level = -1;
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        if (!strcmp(name, levels[i].name))
            level = levels[i].level;
    if (!CHECK(level >= 0, "a thread level below MPI_THREAD_MULTIPLE: %s", name))
        return 1;
    int provided = -1;
    if (!CHECK(MPI_Init_thread(NULL, NULL, level, &provided) == MPI_SUCCESS,
               "the program initialises MPI at MPI_THREAD_%s", name))
        return 1;
    /* Both MPICH and Open MPI grant the level asked for; a library that
     * granted more would leave nothing to check here. */
    CHECK(provided == level, "the library granted MPI_THREAD_%s (got %d)", name, provided);
    int inited = 0;
    CHECK(MPI_Initialized(&inited) == MPI_SUCCESS && inited,
          "MPI_Initialized says so (the program's MPI layer, when preloaded, passes it on)");

    mt_capture_begin();
    int32_t n = __tgt_rtl_number_of_devices();
    const char *err = mt_capture_end();
    char said[128];
    snprintf(said, sizeof said, "granted MPI_THREAD_%s, not MPI_THREAD_MULTIPLE", name);
    CHECK(n == 0, "number_of_devices is 0 (got %d)", (int)n);
    CHECK(strstr(err, said) != NULL,
          "the plugin says it got MPI_THREAD_%s, not MPI_THREAD_MULTIPLE", name);
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
