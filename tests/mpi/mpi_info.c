/*
 * mpi_info.c - OMPTARGET_MPI_INFO=1: at start-up rank 0 prints which host
 * and process runs the program and serves each device, one line each.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mpi_common.h"

int main(int argc, char **argv)
{
    /* The map is printed by the first call, on rank 0; capture it on every
     * rank (a worker prints none) before the workers start serving. */
    mt_capture_begin();
    __tgt_rtl_number_of_devices();
    static char said[4096];
    snprintf(said, sizeof said, "%s", mt_capture_end());

    mt_start(argc > 1 ? argv[1] : "mpi_info", 0);
    char host[72] = "";
    gethostname(host, sizeof host - 1);
    char line[200];
    snprintf(line, sizeof line, "omptarget-mpi: host program: rank 0 on %s, pid %d\n", host,
             (int)getpid());
    CHECK(strstr(said, line) != NULL, "the map names rank 0's host and pid");
    for (int d = 0; d < mt.ndev; d++) {
        snprintf(line, sizeof line, "omptarget-mpi: device %d: rank %d on ", d, d + 1);
        CHECK(strstr(said, line) != NULL, "the map names device %d: rank %d", d, d + 1);
    }
    snprintf(line, sizeof line, "device %d:", mt.ndev);
    CHECK(strstr(said, line) == NULL, "no line for a device %d that does not exist", mt.ndev);
    return mt_finish();
}
