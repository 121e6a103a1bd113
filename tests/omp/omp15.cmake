# The `omp15` label: the programs of the `omp` label, compiled by clang-15
# against libomp/libomptarget 15 and run through the same launcher and
# driver (run_omp.sh). libomp-15-dev conflicts with libomp-14-dev as 16's
# does, so ci/setup.sh unpacks libomp-15-dev and libomp5-15 into
# OTM_LLVM15_DIR; the programs find omp.h, libomp and libomptarget there
# (-I, -L and an rpath). clang-15 offloads through clang-offload-bundler and
# clang-offload-wrapper (Debian package clang-tools-15), found through -B.
#
# Included by tests/omp/CMakeLists.txt, whose OTM_OMP_PROGRAMS,
# OTM_OMP_ARGS_*, launcher, plugin_dir and driver it uses; the programs of
# omp_more.cmake's lists are built for 15 too, into omp15/ with the same
# flags (C++ with clang++-15).
set(OTM_LLVM15_DIR ${PROJECT_SOURCE_DIR}/.deps/llvm-15 CACHE PATH
    "Unpacked libomp-15-dev and libomp5-15 (ci/setup.sh) for the omp15 tests")
set(_llvm15 ${OTM_LLVM15_DIR}/usr/lib/llvm-15)
find_program(OTM_CLANG15 clang-15)
find_program(OTM_CLANG15_WRAPPER NAMES clang-offload-wrapper
             PATHS /usr/lib/llvm-15/bin ${_llvm15}/bin NO_DEFAULT_PATH)
# The resource directory is named after the full version (15.0.6).
file(GLOB _inc15 ${_llvm15}/lib/clang/15*/include)
find_path(OTM_OMP15_INCLUDE omp.h PATHS ${_inc15} NO_DEFAULT_PATH)
find_library(OTM_LIBOMPTARGET15 NAMES libomptarget.so.15 PATHS ${_llvm15}/lib
             NO_DEFAULT_PATH)

otm_omp_version_require(15 _found
  "run ci/setup.sh, which installs clang-15 and clang-tools-15 and unpacks libomp 15 into ${OTM_LLVM15_DIR}"
  OTM_CLANG15 OTM_CLANG15_WRAPPER OTM_OMP15_INCLUDE OTM_LIBOMPTARGET15)
if(NOT _found)
  return()
endif()

get_filename_component(_tools ${OTM_CLANG15_WRAPPER} DIRECTORY)
set(_flags ${OTM_OMP_FLAGS} -B${_tools} -I${OTM_OMP15_INCLUDE}
    -L${_llvm15}/lib -Wl,-rpath,${_llvm15}/lib)
set(_outputs)
otm_omp_version_programs(15 ${OTM_CLANG15} _outputs ${_flags})

# libomptarget 15 keeps every device image it was ever given (PM->Images)
# and, at each later registration and unregistration, hands all of them to
# the plugin's is_valid_binary again, those of a library that was
# dlclose()d included, whose pages are gone at the program's end. The
# plugin answers "not valid" for an image whose pages are not mapped
# (rtl.c), so omp_dlopen runs here too; libomptarget 15's own x86_64 plugin
# faults on that program (exit status 139 without this plugin).

find_program(OTM_CLANGXX15 clang++-15)
otm_omp_more_tests(${CMAKE_CURRENT_BINARY_DIR}/omp15 ${OTM_CLANG15} "${OTM_CLANGXX15}" omp15
                   omp15_ _outputs ${_flags})

add_custom_target(otm_omp15_tests ALL DEPENDS ${_outputs})
add_dependencies(otm_omp15_tests omptarget_rtl_mpi)
