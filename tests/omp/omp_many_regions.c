/* omp_many_regions: a long run of small target regions alternating over
 * the devices, with map sizes around the inline limit (4096 bytes) and
 * allocations of recurring sizes (the device pool hands them out again):
 * every result is checked, so a reused buffer never leaks old data into
 * a map(to). */
#define OMP_TEST_NAME "omp_many_regions"
#include "omp_check.h"

#define REGIONS 400
#define MAXN 3000   /* ints: 12000 bytes */

static int in[MAXN], out[MAXN];

int main(void)
{
    int ndev = require_devices(2);
    static const int sizes[] = {1, 2, 100, 1023, 1024, 1025, 2000, 3000};
    unsigned seed = 7;
    long checked = 0;
    for (int r = 0; r < REGIONS; r++) {
        int dev = r % ndev;
        int n = sizes[(r / ndev) % (sizeof sizes / sizeof *sizes)];
        int salt = (int)(next_rand(&seed) % 1000);
        for (int i = 0; i < n; i++)
            in[i] = (int)next_rand(&seed) & 0xffff, out[i] = -1;
        int count = 0;
#pragma omp target device(dev) map(to: in[0:n], salt) map(from: out[0:n]) map(tofrom: count)
        for (int i = 0; i < n; i++) {
            out[i] = in[i] + salt + i;
            count++;
        }
        CHECK(count == n, "region %d (device %d, %d ints): count %d", r, dev, n, count);
        for (int i = 0; i < n; i++)
            CHECK(out[i] == in[i] + salt + i, "region %d (device %d, %d ints): out[%d] = %d, "
                  "expected %d", r, dev, n, i, out[i], in[i] + salt + i);
        checked += n;
    }
    PASS("%d small target regions alternating over %d devices, maps of 4 to 12000 bytes "
         "(around the 4096-byte inline limit), %ld results checked", REGIONS, ndev, checked);
    return 0;
}
