/* omp_target: a plain target region with map(to), map(from) and
 * map(tofrom) of arrays and scalars, on every device and on the default
 * device; the region runs in another process (the device rank). */
#define OMP_TEST_NAME "omp_target"
#include "omp_check.h"

#define N 1000

int main(void)
{
    int ndev = require_devices(2);
    int in[N], out[N], acc[N];
    double d[N];
    char text[37];
    int regions = 0;

    for (int dev = -1; dev < ndev; dev++) {   /* -1: no device clause */
        int use = dev < 0 ? omp_get_default_device() : dev;
        for (int i = 0; i < N; i++) {
            in[i] = i * 7 + dev;
            out[i] = -1;
            acc[i] = i;
            d[i] = 0.5 * i;
        }
        memcpy(text, "abcdefghijklmnopqrstuvwxyz0123456789", sizeof text);
        int count = 10 + dev, pid = 0;
        long sum = 0;

        if (dev < 0) {
#pragma omp target map(to: in) map(from: out, pid) map(tofrom: acc, d, text, count, sum)
            {
                for (int i = 0; i < N; i++) {
                    out[i] = in[i] * 2;
                    acc[i] += in[i];
                    d[i] *= 3.0;
                    sum += in[i];
                }
                for (int i = 0; i < 36; i++)
                    text[i] = (char)(text[i] - 32 * (text[i] >= 'a' && text[i] <= 'z'));
                count++;
                pid = getpid();
            }
        } else {
#pragma omp target device(use) map(to: in) map(from: out, pid) map(tofrom: acc, d, text, count, sum)
            {
                for (int i = 0; i < N; i++) {
                    out[i] = in[i] * 2;
                    acc[i] += in[i];
                    d[i] *= 3.0;
                    sum += in[i];
                }
                for (int i = 0; i < 36; i++)
                    text[i] = (char)(text[i] - 32 * (text[i] >= 'a' && text[i] <= 'z'));
                count++;
                pid = getpid();
            }
        }
        regions++;

        long want_sum = 0;
        for (int i = 0; i < N; i++) {
            CHECK(out[i] == in[i] * 2, "device %d: out[%d] = %d, expected %d", use, i,
                  out[i], in[i] * 2);
            CHECK(acc[i] == i + in[i], "device %d: acc[%d] = %d, expected %d", use, i,
                  acc[i], i + in[i]);
            CHECK(d[i] == 1.5 * i, "device %d: d[%d] = %g, expected %g", use, i, d[i],
                  1.5 * i);
            want_sum += in[i];
        }
        CHECK(strcmp(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == 0,
              "device %d: text = \"%s\"", use, text);
        CHECK(count == 11 + dev, "device %d: count = %d, expected %d", use, count, 11 + dev);
        CHECK(sum == want_sum, "device %d: sum = %ld, expected %ld", use, sum, want_sum);
        CHECK(pid != 0 && pid != getpid(),
              "device %d: the region ran in process %d, the host is %d", use, pid,
              (int)getpid());
    }
    PASS("%d target regions (default device and devices 0..%d): map to/from/tofrom of "
         "int, double and char arrays and scalars, each run in a device process",
         regions, ndev - 1);
    return 0;
}
