/* omp_device_info: what the program learns about its devices:
 * omp_get_num_devices() is ranks - 1, omp_get_initial_device() follows the
 * devices, omp_is_initial_device() is 1 on the host and 0 in every target
 * region, each device is its own process, if(0) and the default device. */
#define OMP_TEST_NAME "omp_device_info"
#include "omp_check.h"

int main(void)
{
    int ndev = omp_get_num_devices();
    int want = expected_devices();
    CHECK(ndev == want, "omp_get_num_devices() = %d, expected %d (ranks - 1)", ndev, want);
    CHECK(ndev >= 2, "the test needs 2 devices, got %d", ndev);
    CHECK(omp_get_initial_device() == ndev, "omp_get_initial_device() = %d, expected %d",
          omp_get_initial_device(), ndev);
    CHECK(omp_is_initial_device() == 1, "omp_is_initial_device() = %d on the host",
          omp_is_initial_device());
    CHECK(omp_get_default_device() == 0, "omp_get_default_device() = %d",
          omp_get_default_device());

    int pids[64];
    CHECK(ndev <= 64, "too many devices");
    for (int dev = 0; dev < ndev; dev++) {
        int initial = -1, pid = 0;
#pragma omp target device(dev) map(from: initial, pid)
        {
            initial = omp_is_initial_device();
            pid = getpid();
        }
        CHECK(initial == 0, "device %d: omp_is_initial_device() = %d in a target region", dev,
              initial);
        CHECK(pid != getpid(), "device %d: the region ran in the host process", dev);
        for (int e = 0; e < dev; e++)
            CHECK(pids[e] != pid, "devices %d and %d are the same process", e, dev);
        pids[dev] = pid;
    }

    /* if(0): runs on the host. */
    int initial = -1, pid = 0, off = 0;
#pragma omp target device(1) if(off) map(from: initial, pid)
    {
        initial = omp_is_initial_device();
        pid = getpid();
    }
    CHECK(initial == 1 && pid == getpid(), "target if(0): initial %d, pid %d (host %d)",
          initial, pid, (int)getpid());

    /* The default device steers regions without a device clause. */
    omp_set_default_device(1);
    CHECK(omp_get_default_device() == 1, "omp_set_default_device(1) did not stick");
#pragma omp target map(from: initial, pid)
    {
        initial = omp_is_initial_device();
        pid = getpid();
    }
    CHECK(initial == 0 && pid == pids[1], "default device 1: region in process %d, device 1 "
          "is %d", pid, pids[1]);
    omp_set_default_device(0);

    PASS("omp_get_num_devices() = %d, omp_get_initial_device() = %d, omp_is_initial_device() "
         "1 on the host and 0 on each device (distinct processes), if(0) on the host, "
         "omp_set_default_device", ndev, omp_get_initial_device());
    return 0;
}
