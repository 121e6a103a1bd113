/*
 * none.c - libomptarget-mpi-none.so: a library that is not an offloading
 * plugin, which the launcher puts in libomptarget's way under the names of
 * its GPU plugins (tools/CMakeLists.txt, the directory gpu-off/).
 *
 * libomptarget 14 to 16 dlopen()s every plugin they know by name, the CUDA
 * and AMDGPU ones among them, in every rank. Debian's link LLVM's shared
 * library: each costs a rank 100 to 280 ms and 48 MiB of resident memory
 * (dlopen measured), for devices that a device rank never uses and that
 * rank 0 rarely has. Found first, this file defines none of the plugin
 * interface, and libomptarget drops it as "not a plugin", silently. The
 * launcher's --gpu-plugins leaves the real ones to be found.
 */
const char otm_none_why[] = "omptarget-mpi: not an offloading plugin "
                            "(omptarget-mpirun --gpu-plugins loads the real one)";
