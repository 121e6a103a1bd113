/* empty_region.c - time of an empty synchronous target region on device 0
 * (median of 5 runs of 2,000 regions). Run through omptarget-mpirun -n 2. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    double runs[5];
    #pragma omp target
    { }
    for (int r = 0; r < 5; r++) {
        double t0 = omp_get_wtime();
        for (int i = 0; i < 2000; i++) {
            #pragma omp target
            { }
        }
        runs[r] = (omp_get_wtime() - t0) / 2000 * 1e6;
    }
    qsort(runs, 5, sizeof *runs, cmp);
    printf("empty target region: median %.2f us (min %.2f, max %.2f)\n", runs[2], runs[0],
           runs[4]);
    return 0;
}
