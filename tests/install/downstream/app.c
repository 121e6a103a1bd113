/* The downstream project's program: one target region on every device. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    const char *want = getenv("OTM_TEST_NDEVICES");
    int n = omp_get_num_devices();
    if (want == NULL || n != atoi(want)) {
        printf("FAIL app: omp_get_num_devices() = %d, expected %s\n", n, want ? want : "?");
        return 1;
    }
    int sum = 0;
    for (int d = 0; d < n; d++) {
        int on_host = 1;
#pragma omp target device(d) map(from: on_host)
        on_host = omp_is_initial_device();
        sum += !on_host;
    }
    if (sum != n) {
        printf("FAIL app: %d of %d regions ran on a device\n", sum, n);
        return 1;
    }
    printf("PASS app: %d regions, one on each device, through the found launcher\n", n);
    return 0;
}
