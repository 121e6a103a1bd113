/*
 * accel_image.c - the device image of test_proxy: a small x86_64 shared
 * object whose kernels take every argument pointer-sized, as the outlined
 * functions of a target region do, and one declare-target-like global.
 * The test builds the host's table of entries naming them.
 */
#include <stdint.h>

/* A global the test reads and writes through the plugin. */
int64_t acc_global[4] = {1, 2, 3, 4};

/* Runs of acc_count, so that a test can tell a kernel that did not run. */
int64_t acc_runs;

void acc_add(void *a, void *b);
void acc_global_sum(void *out);
void acc_global_bump(void);
void acc_fill(void *p, void *n, void *v);
void acc_count(void *out);

/* *a += *b: both are device addresses. */
void acc_add(void *a, void *b)
{
    *(int64_t *)a += *(const int64_t *)b;
}

/* *out = the sum of acc_global. */
void acc_global_sum(void *out)
{
    int64_t s = 0;
    for (int i = 0; i < 4; i++)
        s += acc_global[i];
    *(int64_t *)out = s;
}

/* acc_global[i] += 10: written back to the device's copy at the end. */
void acc_global_bump(void)
{
    for (int i = 0; i < 4; i++)
        acc_global[i] += 10;
}

/* n bytes at p set to v (both values passed in the pointer). */
void acc_fill(void *p, void *n, void *v)
{
    for (intptr_t i = 0; i < (intptr_t)n; i++)
        ((unsigned char *)p)[i] = (unsigned char)(intptr_t)v;
}

/* *out = ++acc_runs. */
void acc_count(void *out)
{
    *(int64_t *)out = ++acc_runs;
}
