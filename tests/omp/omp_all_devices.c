/* omp_all_devices: every device busy at once: an omp parallel for whose
 * iterations offload to device(i % ndevices) concurrently, each on its own
 * slice of shared arrays; every device is a different process. */
#define OMP_TEST_NAME "omp_all_devices"
#include "omp_check.h"

#define CHUNK 2000
#define PER_DEVICE 8
#define MAXDEV 16

static double in[MAXDEV * PER_DEVICE * CHUNK], out[MAXDEV * PER_DEVICE * CHUNK];
static int pids[MAXDEV * PER_DEVICE];

int main(void)
{
    int ndev = require_devices(2);
    CHECK(ndev <= MAXDEV, "%d devices: the test handles at most %d", ndev, MAXDEV);
    int jobs = ndev * PER_DEVICE;
    for (int i = 0; i < jobs * CHUNK; i++)
        in[i] = i * 0.5, out[i] = 0;

#pragma omp parallel for num_threads(ndev) schedule(static, 1)
    for (int j = 0; j < jobs; j++) {
        int dev = j % ndev;
        double *src = in + (size_t)j * CHUNK, *dst = out + (size_t)j * CHUNK;
        int *pid = &pids[j];
#pragma omp target device(dev) map(to: src[0:CHUNK]) map(from: dst[0:CHUNK], pid[0:1])
        {
            for (int i = 0; i < CHUNK; i++)
                dst[i] = src[i] * 3 + dev;
            *pid = getpid();
        }
    }

    for (int j = 0; j < jobs; j++) {
        int dev = j % ndev;
        for (int i = 0; i < CHUNK; i++) {
            size_t k = (size_t)j * CHUNK + i;
            CHECK(out[k] == in[k] * 3 + dev, "job %d (device %d): out[%zu] = %g, expected %g",
                  j, dev, k, out[k], in[k] * 3 + dev);
        }
        CHECK(pids[j] != getpid(), "job %d ran on the host", j);
        CHECK(pids[j] == pids[dev], "device %d ran in processes %d and %d", dev, pids[dev],
              pids[j]);
        for (int e = 0; e < dev; e++)
            CHECK(pids[e] != pids[dev], "devices %d and %d share process %d", e, dev,
                  pids[dev]);
    }
    PASS("omp parallel for of %d threads: %d target regions over devices 0..%d at once, "
         "each a distinct process, results of every slice correct", ndev, jobs, ndev - 1);
    return 0;
}
