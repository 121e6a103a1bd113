/* omp_two_libs_b.c - libomp_two_libs_b.so, one of the two offload libraries
 * that omp_two_libs links at start-up. Both define a static declare-target
 * global of the same name (lib_id) and kernels of the same shape: each
 * library must see its own. */
#pragma omp declare target
static int lib_id = 66;           /* 'B'; the other library has its own */
int b_mul = 5;
static long b_runs;
#pragma omp end declare target

/* Device dev: a[i] = a[i] * b_mul + lib_id; returns lib_id as the device
 * saw it and, in *runs, how often this library's kernel ran there. */
int b_run(int dev, int *a, int n, long *runs)
{
    int id = -1;
    long r = -1;
#pragma omp target device(dev) map(tofrom: a[0:n]) map(from: id, r)
    {
        for (int i = 0; i < n; i++)
            a[i] = a[i] * b_mul + lib_id;
        id = lib_id;
        r = ++b_runs;
    }
    *runs = r;
    return id;
}

/* Sets b_mul on device dev (update to). */
void b_set_mul(int dev, int v)
{
    b_mul = v;
#pragma omp target update device(dev) to(b_mul)
}
