// omp_indirect (clang-19: OpenMP 5.1's `declare target indirect`): host
// pointers to device functions called in regions on every device, as LLVM
// 19's own api/omp_indirect_call.c does on a CPU target: a pointer passed
// as it is, an array of them indexed in the region, and one inside a
// mapped struct. On a CPU device the lookup of a host pointer is the
// pointer itself; it reaches the same function on the device because
// each device rank places rank 0's program at rank 0's addresses
// (otm/host_code.h), the call resumed in the device's own copy.
#define OMP_TEST_NAME "omp_indirect"
#include "omp_check.h"

/* Not static: clang 19 crashes on indirect functions of internal linkage. */
#pragma omp begin declare target indirect
int add_one(int x) { return x + 1; }
int twice(int x) { return 2 * x; }
int square(int x) { return x * x; }
#pragma omp end declare target

typedef int (*op_fn)(int);

struct step {
    op_fn op;
    int arg;
};

int main(void)
{
    int n = require_devices(1);
    printf("RUN omp_indirect: %d devices, declare target indirect\n", n);
    fflush(stdout);
    op_fn one = add_one;
    op_fn ops[3] = {add_one, twice, square};
    for (int d = 0; d < n; d++) {
        struct step st = {.op = square, .arg = 5 + d};
        int single = 0, chain = 0, member = 0;
#pragma omp target device(d) map(to : ops[0:3], st) map(from : single, chain, member) \
    firstprivate(one, d)
        {
            single = one(d);
            chain = d;
            for (int i = 0; i < 3; i++)
                chain = ops[i](chain);
            member = st.op(st.arg);
        }
        int want = 2 * (d + 1) * 2 * (d + 1);
        CHECK(single == d + 1, "device %d: one(%d) = %d", d, d, single);
        CHECK(chain == want, "device %d: the array's chain gave %d, expected %d", d, chain,
              want);
        CHECK(member == (5 + d) * (5 + d), "device %d: the struct's pointer gave %d", d,
              member);
    }
    PASS("%d devices called host pointers to declare target indirect functions", n);
    return 0;
}
