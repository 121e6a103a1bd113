/* omp_fault_race_threads: EXPECTED TO FAIL (run_omp.sh --expect-fail, 20
 * runs in a row). Two host threads: one runs regions on device 1 one
 * after the other, the other, once a few have run, runs a region on
 * device 0 that writes through NULL. Both threads are inside the plugin
 * when the fault is noticed. The job must end once, in order, with the
 * status of the fault (139) and one "ended the program" line, every time.
 * Should either thread get past its regions, the program says so on
 * stderr and exits with status 3 (never 0).
 */
#define OMP_TEST_NAME "omp_fault_race_threads"
#include "omp_check.h"

/* More than the job can run before the fault ends it. */
#define REGIONS 20000

int main(void)
{
    int ndev = require_devices(2);
    volatile uintptr_t zero = 0;
    uintptr_t addr = zero;
    int ran = 0;
    printf("RUN omp_fault_race_threads: %d devices, thread 0 runs regions on device 1, "
           "thread 1 one on device 0 writing through NULL\n", ndev);
    fflush(stdout);
#pragma omp parallel num_threads(2) shared(ran)
    {
        if (omp_get_thread_num() == 0) {
            int x = 0;
            for (int i = 0; i < REGIONS; i++) {
#pragma omp target device(1) map(tofrom: x)
                x++;
                __atomic_store_n(&ran, i + 1, __ATOMIC_RELEASE);
            }
        } else {
            while (__atomic_load_n(&ran, __ATOMIC_ACQUIRE) < 10)
                usleep(1000);
#pragma omp target device(0) firstprivate(addr)
            *(volatile int *)addr = 1;
        }
    }
    fprintf(stderr, "FAIL omp_fault_race_threads: a thread got past its regions\n");
    return 3;
}
