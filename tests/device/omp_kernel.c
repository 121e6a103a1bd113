/*
 * omp_kernel.c - one target region and one declare-target global, compiled
 * by clang-14 for the x86_64 offload target to get a real device image
 * (see CMakeLists.txt). Not part of any CMake target.
 *
 * The region's only capture is the mapped pointer `a`, so its outlined
 * kernel takes exactly one argument: the device address of a[0].
 */
#pragma omp declare target
long omp_kernel_global[4] = {1, 2, 3, 4};
#pragma omp end declare target

void omp_kernel_double(long *a);

void omp_kernel_double(long *a)
{
#pragma omp target map(tofrom : a[0:8])
    for (int i = 0; i < 8; i++)
        a[i] = 2 * a[i] + omp_kernel_global[i % 4];
}
