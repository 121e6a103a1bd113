/* omp_dlopen_lib.c - libomp_dlopen_lib.so, the offload library that
 * omp_dlopen loads with dlopen() in the middle of its run (not linked):
 * target regions and a declare-target global of its own. */
#pragma omp declare target
int dl_base = 500;                 /* initial value from the library's image */
static long dl_sum;                /* accumulated on the device */
#pragma omp end declare target

/* The library's global as device `dev` sees it. */
int dl_read_base(int dev)
{
    int b = -1;
#pragma omp target device(dev) map(from: b)
    b = dl_base;
    return b;
}

/* Sets the global on the device through update to. */
void dl_set_base(int dev, int v)
{
    dl_base = v;
#pragma omp target update device(dev) to(dl_base)
}

/* a[i] = a[i] * 2 + dl_base on device `dev`; returns the device's running
 * sum of the results (a static declare-target global). */
long dl_run(int dev, int *a, int n)
{
    long s = 0;
#pragma omp target device(dev) map(tofrom: a[0:n]) map(from: s)
    {
        for (int i = 0; i < n; i++) {
            a[i] = a[i] * 2 + dl_base;
            dl_sum += a[i];
        }
        s = dl_sum;
    }
    return s;
}
