// omp_virtual: objects with virtual functions mapped to every device and
// called through a pointer to their base in a region, and a function
// pointer taken on the host and called there. Each names host addresses
// (the object's virtual table, the function's code); they reach the same
// code on a device, every rank keeping its address randomisation, because
// each device rank places rank 0's program and libraries at rank 0's
// addresses (otm/host_code.h). With OMPTARGET_MPI_HOST_CODE=off the region
// faults, and the host says where the address lies (the test
// omp_virtual_host_code_off).
#define OMP_TEST_NAME "omp_virtual"
#include "omp_check.h"

#pragma clang diagnostic ignored "-Wopenmp-mapping"   // mapped on purpose

struct Shape {
    double w, h;
    virtual double area() const = 0;
    virtual int sides() const { return 0; }
    virtual ~Shape() {}
};
struct Rect : Shape {
    double area() const override { return w * h; }
    int sides() const override { return 4; }
};
struct Tri : Shape {
    double area() const override { return w * h / 2; }
    int sides() const override { return 3; }
};

static int scaled(int x) { return 7 * x + 1; }

// In a mapped struct: its bytes travel as they are. (clang 14 takes a
// function pointer in firstprivate for a pointer to data, and passes the
// device's translation of it: NULL.)
struct Callback {
    int (*fn)(int);
};

int main()
{
    int n = require_devices(1);
    printf("RUN omp_virtual: %d devices, virtual calls and a host function pointer\n", n);
    fflush(stdout);
    Callback cb = {scaled};
    for (int d = 0; d < n; d++) {
        Rect r;
        Tri t;
        r.w = 3 + d, r.h = 4;
        t.w = 3, t.h = 4 + d;
        double a = 0, b = 0;
        int sides = 0, f = 0;
#pragma omp target device(d) map(to : r, t, cb) map(from : a, b, sides, f) firstprivate(d)
        {
            const Shape *s = &r;
            a = s->area();
            sides = s->sides();
            s = &t;
            b = s->area();
            sides = 10 * sides + s->sides();
            f = cb.fn(d);
        }
        CHECK(a == 4.0 * (3 + d) && b == 1.5 * (4 + d), "device %d: areas %g and %g, "
              "expected %g and %g", d, a, b, 4.0 * (3 + d), 1.5 * (4 + d));
        CHECK(sides == 43, "device %d: sides %d, expected 43", d, sides);
        CHECK(f == scaled(d), "device %d: the function pointer gave %d, expected %d", d,
              f, scaled(d));
    }
    PASS("%d devices ran virtual calls on mapped objects and a host function pointer", n);
    return 0;
}
