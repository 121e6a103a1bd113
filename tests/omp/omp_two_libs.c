/* omp_two_libs: two offload libraries linked at start-up
 * (libomp_two_libs_a.so, libomp_two_libs_b.so, each with its own device
 * image and a static declare-target global of the same name) and the
 * executable's own kernels, all on every device (device(d) for d in
 * 0..omp_get_num_devices()-1), interleaved. */
#define OMP_TEST_NAME "omp_two_libs"
#include "omp_check.h"

#define N 600

int a_run(int dev, int *a, int n, long *runs);
void a_set_mul(int dev, int v);
int b_run(int dev, int *a, int n, long *runs);
void b_set_mul(int dev, int v);
extern int a_mul, b_mul;

#pragma omp declare target
static int lib_id = 'E';           /* the executable's own, same name */
#pragma omp end declare target

int main(void)
{
    int ndev = require_devices(1);
    static int x[N];
    int rounds = 3;

    for (int round = 0; round < rounds; round++) {
        for (int dev = 0; dev < ndev; dev++) {
            int am = round ? 10 + dev : 3, bm = round ? 20 + dev : 5;
            if (round) {
                a_set_mul(dev, am);
                b_set_mul(dev, bm);
            }
            for (int i = 0; i < N; i++)
                x[i] = i - dev;
            long ra = 0, rb = 0;
            int ida = a_run(dev, x, N, &ra);
            int ide, idb = b_run(dev, x, N, &rb);
#pragma omp target device(dev) map(tofrom: x) map(from: ide)
            {
                for (int i = 0; i < N; i++)
                    x[i] -= lib_id;
                ide = lib_id;
            }
            CHECK(ida == 'A' && idb == 'B' && ide == 'E',
                  "round %d, device %d: lib_id seen by a, b, the executable = %d, %d, %d, "
                  "expected %d, %d, %d", round, dev, ida, idb, ide, 'A', 'B', 'E');
            CHECK(ra == round + 1 && rb == round + 1,
                  "round %d, device %d: a ran %ld times, b %ld times, expected %d", round, dev,
                  ra, rb, round + 1);
            for (int i = 0; i < N; i++) {
                int want = ((i - dev) * am + 'A') * bm + 'B' - 'E';
                CHECK(x[i] == want, "round %d, device %d: x[%d] = %d, expected %d", round, dev,
                      i, x[i], want);
            }
        }
    }
    CHECK(a_mul == 10 + ndev - 1 && b_mul == 20 + ndev - 1, "host a_mul = %d, b_mul = %d",
          a_mul, b_mul);
    PASS("two offload libraries linked at start-up and the executable, %d rounds on each of "
         "%d devices: each image's kernels, its static global of the same name, update to "
         "of each library's global", rounds, ndev);
    return 0;
}
