/* omp_fault_race: EXPECTED TO FAIL (run_omp.sh --expect-fail, 20 runs in a
 * row). One host thread issues 200 small nowait regions to device 1 and,
 * among them, one nowait region on device 0 that writes through NULL: the
 * fault is noticed while other regions are in flight, by whichever hidden
 * helper thread waits on them. The job must end once, in order, with the
 * status of the fault (139) and one "ended the program" line, every time.
 * Should the program get past its taskwait, it says so on stderr and
 * exits with status 3 (never 0).
 */
#define OMP_TEST_NAME "omp_fault_race"
#include "omp_check.h"

#define REGIONS 200

int main(void)
{
    int ndev = require_devices(2);
    volatile uintptr_t zero = 0;
    uintptr_t addr = zero;
    printf("RUN omp_fault_race: %d devices, %d nowait regions on device 1, one on "
           "device 0 writing through NULL among them\n", ndev, REGIONS);
    fflush(stdout);
    for (int i = 0; i < REGIONS; i++) {
        if (i == REGIONS / 2) {
#pragma omp target device(0) nowait firstprivate(addr)
            *(volatile int *)addr = 1;
        }
#pragma omp target device(1) nowait firstprivate(i)
        {
            volatile int x = i;
            (void)x;
        }
    }
#pragma omp taskwait
    fprintf(stderr, "FAIL omp_fault_race: the program got past the faulting region\n");
    return 3;
}
