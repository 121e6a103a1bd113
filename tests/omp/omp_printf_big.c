/* omp_printf_big: one target region on device 0 prints 10 MiB: 10,240
 * lines of 1 KiB (1,023 characters and a newline), each numbered ("%08d "
 * then 1,014 letters that depend on the number). The driver checks that
 * every line arrived on stdout once, whole and in order
 * (run_omp.sh --stdout-check "check_stdout.sh big"). */
#define OMP_TEST_NAME "omp_printf_big"
#include "omp_check.h"

#define LINES (10 * 1024)
#define BODY 1014   /* "%08d " (9) + BODY + '\n' = 1024 bytes */

int main(void)
{
    require_devices(1);
    printf("omp_printf_big: %d lines of 1024 bytes from device 0\n", LINES);
#pragma omp target device(0)
    {
        char body[BODY + 1];
        for (int i = 0; i < LINES; i++) {
            /* letters a..z from (i % 26) on, so that each line differs */
            for (int j = 0; j < BODY; j++)
                body[j] = (char)('a' + (i + j) % 26);
            body[BODY] = '\0';
            printf("%08d %s\n", i, body);
        }
    }
    PASS("%d lines of 1 KiB (%d MiB) printed by one region (checked by the driver)", LINES,
         LINES / 1024);
    return 0;
}
