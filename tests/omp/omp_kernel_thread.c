/* omp_kernel_thread: a device runs its kernels on the same thread each
 * time, as the stock plugin runs them on the program's own thread, so that
 * the kernels' parallel regions reuse one libomp team (a team left spinning
 * on another thread takes a core from the next kernel). 20 synchronous
 * regions on each device, each with a parallel loop, say which thread they
 * ran on; a device's threads must all be one (OMPTARGET_MPI_HANDLERS is 1
 * by default). */
#define OMP_TEST_NAME "omp_kernel_thread"
#include "omp_check.h"

#include <sys/syscall.h>
#include <unistd.h>

#define REGIONS 20
#define N 1000

int main(void)
{
    int ndev = require_devices(1);
    for (int dev = 0; dev < ndev; dev++) {
        long first = 0;
        for (int r = 0; r < REGIONS; r++) {
            long tid = 0, sum = 0;
#pragma omp target device(dev) map(from: tid) map(tofrom: sum)
            {
                tid = (long)syscall(SYS_gettid);
#pragma omp parallel for reduction(+: sum)
                for (int i = 0; i < N; i++)
                    sum += i;
            }
            CHECK(sum == (long)N * (N - 1) / 2, "device %d, region %d: sum %ld", dev, r, sum);
            CHECK(tid > 0, "device %d, region %d: no thread id", dev, r);
            if (r == 0)
                first = tid;
            CHECK(tid == first, "device %d: region %d ran on thread %ld, region 0 on %ld",
                  dev, r, tid, first);
        }
    }
    PASS("%d regions with a parallel loop on each of %d devices, one thread per device",
         REGIONS, ndev);
    return 0;
}
