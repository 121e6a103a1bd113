// omp_usm_virtual: unified shared memory, virtual functions and host
// function pointers together. Objects built on the host's heap (never
// mapped) are reached through host pointers in a region: their virtual
// functions called (the virtual tables are rank 0's constants, placed at
// rank 0's addresses on the device), a host function pointer kept in
// one of them called too, and the results written into the objects,
// which the host then reads.
#define OMP_TEST_NAME "omp_usm_virtual"
#include "omp_check.h"

#pragma omp requires unified_shared_memory

struct Shape {
    double w, h, area_seen;
    int (*scale)(int);
    int scaled;
    virtual double area() const = 0;
    virtual ~Shape() {}
};
struct Rect : Shape {
    double area() const override { return w * h; }
};
struct Tri : Shape {
    double area() const override { return w * h / 2; }
};

static int triple(int x) { return 3 * x; }

int main()
{
    int n = require_devices(1);
    printf("RUN omp_usm_virtual: %d devices\n", n);
    fflush(stdout);
    for (int d = 0; d < n; d++) {
        Shape *s[2] = {new Rect, new Tri};
        for (int i = 0; i < 2; i++) {
            s[i]->w = 2 + d, s[i]->h = 4 + i;
            s[i]->scale = triple;
        }
        Shape **all = s;
#pragma omp target device(d)
        for (int i = 0; i < 2; i++) {
            all[i]->area_seen = all[i]->area();
            all[i]->scaled = all[i]->scale(10 * d + i);
        }
        CHECK(s[0]->area_seen == (2 + d) * 4.0, "device %d: Rect area %g", d, s[0]->area_seen);
        CHECK(s[1]->area_seen == (2 + d) * 5.0 / 2, "device %d: Tri area %g", d,
              s[1]->area_seen);
        CHECK(s[0]->scaled == triple(10 * d) && s[1]->scaled == triple(10 * d + 1),
              "device %d: the function pointer gave %d and %d", d, s[0]->scaled, s[1]->scaled);
        delete s[0];
        delete s[1];
    }
    PASS("%d devices called virtual functions and a host function pointer of objects on "
         "the host's heap", n);
    return 0;
}
