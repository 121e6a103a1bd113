/* omp_update: target update to/from inside a data region: whole arrays,
 * array sections (only the section moves), a scalar, and update with a
 * false if clause (nothing moves). */
#define OMP_TEST_NAME "omp_update"
#include "omp_check.h"

#define N 3000

static double a[N];
static int counter;

int main(void)
{
    int ndev = require_devices(2);
    int updates = 0;
    for (int dev = 0; dev < ndev; dev++) {
        counter = 0;
#pragma omp target data device(dev) map(alloc: a) map(to: counter)
        {
            for (int i = 0; i < N; i++)
                a[i] = i;
#pragma omp target update device(dev) to(a)
            updates++;
            /* counter is present: the explicit map reuses the device copy
             * (without it a scalar would be firstprivate). */
#pragma omp target device(dev) map(tofrom: counter)
            {
                for (int i = 0; i < N; i++)
                    a[i] += 0.25;
                counter++;
            }
            CHECK(a[5] == 5.0, "device %d: host a[5] = %g changed without update", dev, a[5]);
#pragma omp target update device(dev) from(a)
            updates++;
            for (int i = 0; i < N; i++)
                CHECK(a[i] == i + 0.25, "device %d: a[%d] = %g after update from, "
                      "expected %g", dev, i, a[i], i + 0.25);

            /* Sections: send a[100:50] only, bring back a[0:10] only. */
            for (int i = 0; i < N; i++)
                a[i] = -1.0;
            for (int i = 100; i < 150; i++)
                a[i] = 1000.0 + i;
#pragma omp target update device(dev) to(a[100:50])
            updates++;
#pragma omp target device(dev) map(tofrom: counter)
            {
                for (int i = 0; i < N; i++)
                    a[i] *= 2;
                for (int i = 0; i < 10; i++)
                    a[i] = a[100 + i] + a[149];
                counter++;
            }
            for (int i = 0; i < N; i++)
                a[i] = -3.0;
#pragma omp target update device(dev) from(a[0:10])
            updates++;
            for (int i = 0; i < 10; i++) {
                double want = 2 * (1000.0 + 100 + i) + 2 * (1000.0 + 149);
                CHECK(a[i] == want, "device %d: a[%d] = %g, expected %g", dev, i, a[i], want);
            }
            for (int i = 10; i < N; i++)
                CHECK(a[i] == -3.0, "device %d: a[%d] = %g: outside the section", dev, i,
                      a[i]);

            /* A false if clause moves nothing. */
            int never = 0;
            for (int i = 0; i < N; i++)
                a[i] = 7.0;
#pragma omp target update device(dev) to(a) if(never)
#pragma omp target update device(dev) from(a[200:20])
            updates++;
            for (int i = 200; i < 220; i++)
                CHECK(a[i] == 2 * (i + 0.25), "device %d: a[%d] = %g, expected %g: "
                      "update to(a) if(0) moved data", dev, i, a[i], 2 * (i + 0.25));

            /* A scalar. */
            counter = 40;
#pragma omp target update device(dev) from(counter)
            updates++;
            CHECK(counter == 2, "device %d: counter = %d, expected 2", dev, counter);
            counter = 40;
#pragma omp target update device(dev) to(counter)
            updates++;
#pragma omp target device(dev) map(tofrom: counter)
            counter += 2;
#pragma omp target update device(dev) from(counter)
            updates++;
            CHECK(counter == 42, "device %d: counter = %d, expected 42", dev, counter);
        }
    }
    PASS("%d target updates on %d devices: whole arrays to/from, sections a[100:50] and "
         "a[0:10] (nothing outside them moves), if(0) moves nothing, scalars both ways",
         updates, ndev);
    return 0;
}
