/* omp_long_kernel: a running kernel does not stall transfers to its own
 * device. The kernel (nowait, on a hidden helper thread) raises `started`,
 * then spins until it sees `go`; meanwhile the host reads `started` with
 * `target update from` until it is up, then writes `go` with `target update
 * to`, all on the same device. If the worker's data movement waited for its
 * kernel, neither transfer could complete and the program would hang (the
 * driver's timeout makes that a failure).
 *
 * The same kernel first runs QUICK times with `go` already up, so that it
 * returns at once: the worker then runs it without handing the gate to
 * another thread (a kernel that last ran shorter than SPIN), and when it
 * runs long after all, the gate must still be taken over. */
#define OMP_TEST_NAME "omp_long_kernel"
#include "omp_check.h"

#define QUICK 20

#pragma omp declare target
int started;
int go;
int seen;
#pragma omp end declare target

static void run_kernel(void)
{
#pragma omp target nowait device(0)
    {
        __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
        while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
            ;
        seen++;
    }
}

int main(void)
{
    require_devices(1);
    started = seen = 0;
    go = 1;
#pragma omp target update to(started, go, seen) device(0)
    for (int i = 0; i < QUICK; i++) {
        run_kernel();
#pragma omp taskwait
    }
    started = go = 0;
#pragma omp target update to(started, go) device(0)
    run_kernel();
    long polls = 0;
    while (!started && polls < 1000000) {
#pragma omp target update from(started) device(0)
        polls++;
    }
    CHECK(started, "the kernel did not start while the host kept polling "
          "(%ld transfers)", polls);
    go = 1;
#pragma omp target update to(go) device(0)
#pragma omp taskwait
#pragma omp target update from(seen) device(0)
    CHECK(seen == QUICK + 1, "the kernel ran to its end %d times, not %d", seen, QUICK + 1);
    PASS("%ld transfers to device 0 completed while its kernel was running (after %d quick "
         "runs of it), then the kernel saw the flag the host wrote", polls, QUICK);
    return 0;
}
