/*
 * mpi_finalize.c - the program finalises MPI itself, through the program's
 * MPI layer (src/pmpi, preloaded as omptarget-mpirun does: run_mpi.sh
 * gets LD_PRELOAD). The order of the end is checked on rank 0:
 *   - before: MPI_Initialized is 0 until the program's MPI_Init, which
 *     succeeds although the plugin initialised MPI before main;
 *   - the program's MPI_Finalize returns MPI_SUCCESS once every device
 *     acknowledged its EXIT (the driver checks the workers' last lines);
 *   - after it: MPI_Finalized is 1, a device call fails with a message
 *     naming MPI_Finalize (no MPI call is made: MPI is finalised), and the
 *     end of the program (unregister_lib) ends nothing twice.
 * With MT_LLVM16=1 the end is libomptarget 16's: deinit_plugin, then
 * deinit_device of each device, then unregister_lib.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_common.h"

/* What MPI_Initialized or MPI_Finalized answers, -1 when it fails. */
static int flag_of(int (*query)(int *))
{
    int flag = -1;
    return query(&flag) == MPI_SUCCESS ? flag : -1;
}

int main(int argc, char **argv)
{
    mt_start(argc > 1 ? argv[1] : "mpi_finalize", 1);

    int flag = flag_of(MPI_Initialized);
    CHECK(flag == 0, "MPI_Initialized: 0 before the program's MPI_Init (got %d)", flag);
    CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS,
          "the program's MPI_Init succeeds, MPI being the plugin's since before main");
    flag = flag_of(MPI_Initialized);
    CHECK(flag == 1, "MPI_Initialized: 1 after it (got %d)", flag);

    int ok = 1;
    for (int d = 0; d < mt.ndev; d++)
        ok &= mt_roundtrip(d, 4096, (uint32_t)d + 1);
    CHECK(ok, "a round trip of 4 KiB on each of the %d devices", mt.ndev);

    flag = flag_of(MPI_Finalized);
    CHECK(flag == 0, "MPI_Finalized: 0 before the program's MPI_Finalize (got %d)", flag);
    CHECK(MPI_Finalize() == MPI_SUCCESS,
          "the program's MPI_Finalize: the devices end, then MPI");
    flag = flag_of(MPI_Finalized);
    CHECK(flag == 1, "MPI_Finalized: 1 after it (got %d)", flag);
    flag = flag_of(MPI_Initialized);
    CHECK(flag == 1, "MPI_Initialized stays 1 after it, as MPI says (got %d)", flag);

    mt_capture_begin();
    void *p = __tgt_rtl_data_alloc(0, 64, NULL, TARGET_ALLOC_DEFAULT);
    const char *err = mt_capture_end();
    CHECK(p == NULL, "data_alloc after MPI_Finalize fails");
    CHECK(strstr(err, "MPI_Finalize ended the devices") != NULL,
          "... saying that MPI_Finalize ended the devices (stderr: %s)", err);
    CHECK(strchr(err, '\n') == strrchr(err, '\n'),
          "... in one line, and nothing else (stderr: %s)", err);

    /* Memory freed after it: gone with the devices, nothing to report
     * (libomptarget 19 frees its memory manager's buffers at the end). */
    mt_capture_begin();
    int rc = __tgt_rtl_data_delete(0, (void *)(uintptr_t)0x1000);
    err = mt_capture_end();
    CHECK(rc == OFFLOAD_SUCCESS && err[0] == '\0',
          "data_delete after MPI_Finalize succeeds silently (rc %d, stderr: %s)", rc, err);
    return mt_finish();
}
