/* omp_two_libs_a.c - libomp_two_libs_a.so, one of the two offload libraries
 * that omp_two_libs links at start-up. Both define a static declare-target
 * global of the same name (lib_id) and kernels of the same shape: each
 * library must see its own. */
#pragma omp declare target
static int lib_id = 65;           /* 'A'; the other library has its own */
int a_mul = 3;
static long a_runs;
#pragma omp end declare target

/* Device dev: a[i] = a[i] * a_mul + lib_id; returns lib_id as the device
 * saw it and, in *runs, how often this library's kernel ran there. */
int a_run(int dev, int *a, int n, long *runs)
{
    int id = -1;
    long r = -1;
#pragma omp target device(dev) map(tofrom: a[0:n]) map(from: id, r)
    {
        for (int i = 0; i < n; i++)
            a[i] = a[i] * a_mul + lib_id;
        id = lib_id;
        r = ++a_runs;
    }
    *runs = r;
    return id;
}

/* Sets a_mul on device dev (update to). */
void a_set_mul(int dev, int v)
{
    a_mul = v;
#pragma omp target update device(dev) to(a_mul)
}
