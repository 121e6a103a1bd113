/*
 * omp_mpi_init.c - an MPI + OpenMP-offload program of the usual shape: it
 * initialises MPI itself, offloads between its MPI calls and finalises MPI
 * at the end. Under omptarget-mpirun the plugin initialised MPI before
 * main; the program's own calls must still behave as MPI promises a
 * program of one process (src/pmpi). Every return value is checked.
 *
 * OTM_TEST_VARIANT picks the call that initialises MPI: "init" (the
 * default) MPI_Init; SINGLE, FUNNELED, SERIALIZED or MULTIPLE
 * MPI_Init_thread at that level, which must report the level MPI really
 * provides (MPI_THREAD_MULTIPLE, which the plugin asked for) and agree
 * with MPI_Query_thread.
 */
#define OMP_TEST_NAME "omp_mpi_init"
#include <mpi.h>

#include "omp_check.h"

#define N 4096

static int flag_of(int (*query)(int *))
{
    int flag = -1;
    CHECK(query(&flag) == MPI_SUCCESS, "the query failed");
    return flag;
}

static int level_named(const char *name)
{
    static const struct { const char *name; int level; } levels[] = {
        {"SINGLE", MPI_THREAD_SINGLE}, {"FUNNELED", MPI_THREAD_FUNNELED},
        {"SERIALIZED", MPI_THREAD_SERIALIZED}, {"MULTIPLE", MPI_THREAD_MULTIPLE}};
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++)
        if (strcmp(name, levels[i].name) == 0)
            return levels[i].level;
    CHECK(0, "OTM_TEST_VARIANT=%s: not init or a thread level", name);
    return -1;
}

/* The program's MPI_Init or MPI_Init_thread; returns what it says. */
static const char *init_mpi(int *argc, char ***argv)
{
    const char *variant = getenv("OTM_TEST_VARIANT");
    if (!variant || strcmp(variant, "init") == 0) {
        CHECK(MPI_Init(argc, argv) == MPI_SUCCESS, "MPI_Init failed");
        return "MPI_Init";
    }
    int required = level_named(variant), provided = -1, queried = -1;
    CHECK(MPI_Init_thread(argc, argv, required, &provided) == MPI_SUCCESS,
          "MPI_Init_thread(MPI_THREAD_%s) failed", variant);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_Init_thread(MPI_THREAD_%s) provided %d, "
          "expected MPI_THREAD_MULTIPLE (%d), the level MPI runs at", variant, provided,
          MPI_THREAD_MULTIPLE);
    CHECK(MPI_Query_thread(&queried) == MPI_SUCCESS && queried == provided,
          "MPI_Query_thread says %d, MPI_Init_thread said %d", queried, provided);
    int main_thread = 0;
    CHECK(MPI_Is_thread_main(&main_thread) == MPI_SUCCESS && main_thread,
          "MPI_Is_thread_main is false on the thread that initialised MPI");
    static char what[64];
    snprintf(what, sizeof what, "MPI_Init_thread(MPI_THREAD_%s)", variant);
    return what;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    CHECK(flag_of(MPI_Initialized) == 0, "MPI_Initialized is 1 before MPI_Init");
    CHECK(flag_of(MPI_Finalized) == 0, "MPI_Finalized is 1 before MPI_Init");
    const char *how = init_mpi(&argc, &argv);
    CHECK(flag_of(MPI_Initialized) == 1, "MPI_Initialized is 0 after %s", how);
    printf("RUN omp_mpi_init: %s\n", how);

    int ndev = require_devices(1), rank = -1, size = -1;
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS && rank == 0,
          "rank %d in MPI_COMM_WORLD, expected 0 (the program's rank)", rank);
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size) == MPI_SUCCESS && size == ndev + 1,
          "MPI_COMM_WORLD has %d ranks, expected 1 + %d devices", size, ndev);

    static int a[N];
    long sum = 0, want = 0;
    for (int i = 0; i < N; i++)
        a[i] = i;
    for (int d = 0; d < ndev; d++) {
        #pragma omp target teams distribute parallel for device(d) map(tofrom: a) \
            reduction(+: sum)
        for (int i = 0; i < N; i++) {
            a[i] += 1;
            sum += a[i];
        }
    }
    for (int i = 0; i < N; i++) {
        CHECK(a[i] == i + ndev, "a[%d] = %d, expected %d", i, a[i], i + ndev);
        for (int d = 1; d <= ndev; d++)
            want += i + d;
    }
    CHECK(sum == want, "sum %ld, expected %ld", sum, want);

    double t0 = MPI_Wtime(), t1 = MPI_Wtime();
    CHECK(t1 >= t0 && MPI_Wtick() > 0, "MPI_Wtime went from %f to %f", t0, t1);
    CHECK(flag_of(MPI_Finalized) == 0, "MPI_Finalized is 1 before MPI_Finalize");
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize failed");
    CHECK(flag_of(MPI_Finalized) == 1, "MPI_Finalized is 0 after MPI_Finalize");
    CHECK(flag_of(MPI_Initialized) == 1, "MPI_Initialized is 0 after MPI_Finalize");
    PASS("%s, a region on each of %d devices, MPI_Finalize ended them", how, ndev);
}
