/* omp_shared_lib_lib.c - libomp_shared_lib_lib.so, the offload library that
 * omp_shared_lib links at start-up (-fPIC -shared, with its own device
 * image): target regions and declare-target globals of its own, one of them
 * static (internal to the library). */
#define LIB_N 512

#pragma omp declare target
int lib_scale = 7;                 /* initial value from the library's image */
long lib_calls;                    /* counted on the device */
double lib_table[LIB_N];
static int lib_hidden = 1234;      /* static: not visible outside the library */
static int lib_twice(int v) { return 2 * v + lib_hidden; }
#pragma omp end declare target

/* lib_scale as the device `dev` sees it, from a kernel. */
int lib_read_scale(int dev)
{
    int s = -1;
#pragma omp target device(dev) map(from: s)
    s = lib_scale;
    return s;
}

/* The static global as the device sees it, and set to `v` there. */
int lib_swap_hidden(int dev, int v)
{
    int old = -1;
#pragma omp target device(dev) map(from: old)
    {
        old = lib_hidden;
        lib_hidden = v;
    }
    return old;
}

/* The host's copy of the static global. */
int lib_host_hidden(void) { return lib_hidden; }

/* out[i] = lib_twice(in[i]) * lib_scale on device `dev`, counting calls in
 * lib_calls and filling lib_table; the table and the count are then read
 * back with update from. */
void lib_transform(int dev, const int *in, int *out, int n)
{
#pragma omp target device(dev) map(to: in[0:n]) map(from: out[0:n])
    for (int i = 0; i < n; i++) {
        out[i] = lib_twice(in[i]) * lib_scale;
        lib_table[i % LIB_N] = 0.5 * out[i];
        lib_calls++;
    }
#pragma omp target update device(dev) from(lib_table, lib_calls)
}
