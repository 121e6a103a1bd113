// omp_cxx_static: C++ globals inside `declare target`: a global object and
// a static one whose constructors run on the device (the device's copies
// are initialised by the constructor, not by the image's data: the values
// are read back without any update to), static ints and a static array
// used in kernels (clang 16 refuses `target update` of a static
// declare-target global, so they are read and written by kernels only),
// methods called in kernels, the non-static object read back with update
// from, and destructors that run harmlessly at exit.
#define OMP_TEST_NAME "omp_cxx_static"
#include "omp_check.h"

#pragma omp declare target
static int ctor_runs;              // counted by the constructors, per copy
static int dtor_runs;
int g_scale = 6;                   // set by update to
static int s_table[8] = {1, 2, 3, 4, 5, 6, 7, 8};

// Not constexpr: the objects below are initialised dynamically.
static int initial_for(int seed)
{
    int v = 0;
    for (int i = 0; i < seed; i++)
        v += s_table[i % 8];
    return v;
}

struct Gauge {
    int id;
    int base;
    long sum;
    double ratio;
    Gauge(int i, int seed) : id(i), base(initial_for(seed)), sum(0), ratio(0.25 * seed)
    {
        ctor_runs++;
    }
    ~Gauge()
    {
        dtor_runs++;
        base = -1;
    }
    long add(int v)
    {
        sum += (long)v * g_scale + base;
        return sum;
    }
};

Gauge g_gauge(7, 10);              // base = 1+..+8 + 1+2 = 39
static Gauge s_gauge(9, 3);        // base = 6
#pragma omp end declare target

// Gauge has a destructor, so it is not trivially copyable: clang warns that
// mapping it is not guaranteed; its bytes are all this test copies.
#pragma clang diagnostic ignored "-Wopenmp-mapping"

int main()
{
    int ndev = require_devices(1);

    CHECK(ctor_runs == 2, "host: %d constructors ran, expected 2", ctor_runs);
    CHECK(g_gauge.base == 39 && s_gauge.base == 6, "host: bases %d, %d", g_gauge.base,
          s_gauge.base);

    for (int dev = 0; dev < ndev; dev++) {
        int runs = -1, id1 = -1, id2 = -1, base1 = -1, base2 = -1;
        double r1 = -1, r2 = -1;
        // 1. What the device's constructors left, no update to before.
#pragma omp target device(dev) map(from: runs, id1, id2, base1, base2, r1, r2)
        {
            runs = ctor_runs;
            id1 = g_gauge.id;
            base1 = g_gauge.base;
            r1 = g_gauge.ratio;
            id2 = s_gauge.id;
            base2 = s_gauge.base;
            r2 = s_gauge.ratio;
        }
        CHECK(runs == 2, "device %d: ctor_runs = %d on the device, expected 2 (did the "
              "constructors run there?)", dev, runs);
        CHECK(id1 == 7 && base1 == 39 && r1 == 2.5, "device %d: g_gauge = {%d, %d, %g}, "
              "expected {7, 39, 2.5}", dev, id1, base1, r1);
        CHECK(id2 == 9 && base2 == 6 && r2 == 0.75, "device %d: s_gauge = {%d, %d, %g}, "
              "expected {9, 6, 0.75}", dev, id2, base2, r2);

        // 2. Methods in a kernel; the scale changed by update to.
        g_scale = 2 + dev;
#pragma omp target update device(dev) to(g_scale)
        long last1 = 0, last2 = 0;
#pragma omp target device(dev) map(from: last1, last2)
        {
            for (int i = 0; i < 100; i++) {
                last1 = g_gauge.add(i);
                last2 = s_gauge.add(-i);
            }
        }
        long want1 = 0, want2 = 0;
        for (int i = 0; i < 100; i++) {
            want1 += (long)i * (2 + dev) + 39;
            want2 += (long)-i * (2 + dev) + 6;
        }
        CHECK(last1 == want1 && last2 == want2, "device %d: sums %ld, %ld, expected %ld, %ld",
              dev, last1, last2, want1, want2);
        // 3. The global object read back whole with update from (the
        //    static one stays on the device); the device's sums reset.
#pragma omp target update device(dev) from(g_gauge)
        CHECK(g_gauge.sum == want1 && g_gauge.id == 7 && g_gauge.base == 39,
              "device %d: g_gauge after update from: {%d, %d, sum %ld}", dev, g_gauge.id,
              g_gauge.base, g_gauge.sum);
        CHECK(s_gauge.sum == 0, "host: s_gauge.sum = %ld changed", s_gauge.sum);
#pragma omp target device(dev)
        {
            g_gauge.sum = 0;
            s_gauge.sum = 0;
        }
        g_gauge.sum = 0;
        g_scale = 6;
#pragma omp target update device(dev) to(g_scale)
        CHECK(s_table[7] == 8 && dtor_runs == 0, "host: s_table[7] = %d, dtor_runs = %d",
              s_table[7], dtor_runs);
    }
    PASS("C++ declare-target globals on %d devices: two objects (one static) built by their "
         "constructors on the device, methods in kernels, static ints and a static array in "
         "kernels, the global object read back; destructors left to run at exit", ndev);
    return 0;
}
