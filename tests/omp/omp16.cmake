# The `omp16` label: the programs of the `omp` label, compiled by clang-16
# against libomp/libomptarget 16 and run through the same launcher and
# driver (run_omp.sh). Debian 12 cannot install libomp-16-dev next to
# libomp-14-dev, so ci/setup.sh unpacks libomp-16-dev and libomp5-16 into
# OTM_LLVM16_DIR; the programs find omp.h, libomp and libomptarget there
# (-I, -L and an rpath). clang-16 needs clang-offload-packager and
# clang-linker-wrapper (Debian package clang-tools-16), found next to the
# packager through -B.
#
# Included by tests/omp/CMakeLists.txt, whose OTM_OMP_PROGRAMS, OTM_OMP_ARGS_*,
# launcher, plugin_dir and driver it uses; the programs of omp_more.cmake's
# lists (offload libraries, C++, expected failures) are built for 16 too,
# into omp16/ with the same flags (C++ with clang++-16).
set(OTM_LLVM16_DIR ${PROJECT_SOURCE_DIR}/.deps/llvm-16 CACHE PATH
    "Unpacked libomp-16-dev and libomp5-16 (ci/setup.sh) for the omp16 tests")
set(_llvm16 ${OTM_LLVM16_DIR}/usr/lib/llvm-16)
find_program(OTM_CLANG16 clang-16)
find_program(OTM_CLANG16_PACKAGER NAMES clang-offload-packager
             PATHS /usr/lib/llvm-16/bin ${_llvm16}/bin NO_DEFAULT_PATH)
find_path(OTM_OMP16_INCLUDE omp.h PATHS ${_llvm16}/lib/clang/16/include NO_DEFAULT_PATH)
find_library(OTM_LIBOMPTARGET16 NAMES libomptarget.so.16 PATHS ${_llvm16}/lib
             NO_DEFAULT_PATH)

otm_omp_version_require(16 _found
  "run ci/setup.sh, which installs clang-16 and clang-tools-16 and unpacks libomp 16 into ${OTM_LLVM16_DIR}"
  OTM_CLANG16 OTM_CLANG16_PACKAGER OTM_OMP16_INCLUDE OTM_LIBOMPTARGET16)
if(NOT _found)
  return()
endif()

get_filename_component(_tools ${OTM_CLANG16_PACKAGER} DIRECTORY)
set(_flags ${OTM_OMP_FLAGS} -B${_tools} -I${OTM_OMP16_INCLUDE}
    -L${_llvm16}/lib -Wl,-rpath,${_llvm16}/lib)
# The compiler and its flags, for the benchmarks of this version too.
set_property(GLOBAL PROPERTY OTM_OMP16_CC ${OTM_CLANG16})
set_property(GLOBAL PROPERTY OTM_OMP16_FLAGS ${_flags})
set(_outputs)
otm_omp_version_programs(16 ${OTM_CLANG16} _outputs ${_flags})

# libomptarget 16 tries the nextgen name first (every run above loads our
# plugin as libomptarget.rtl.x86_64.nextgen.so); with nextgen plugins
# turned off it loads the plain name only: ours must answer there too.
add_test(NAME omp16_omp_target_plain_name
         COMMAND sh ${driver} --env LIBOMPTARGET_NEXTGEN_PLUGINS=false
                 ${launcher} ${plugin_dir} ${CMAKE_CURRENT_BINARY_DIR}/omp16/omp_target
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(omp16_omp_target_plain_name PROPERTIES LABELS omp16 TIMEOUT 200)

otm_omp_in_flight_polled(16)

# A bad setting: the job refused before any rank runs main, as under 14.
add_test(NAME omp16_bad_setting
         COMMAND sh ${driver} --env OMPTARGET_MPI_WINDOW=abc
                 --expect-refusal "OMPTARGET_MPI_WINDOW=abc: .*the job ends"
                 ${launcher} ${plugin_dir} ${CMAKE_CURRENT_BINARY_DIR}/omp16/omp_target
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(omp16_bad_setting PROPERTIES LABELS omp16 TIMEOUT 200)

find_program(OTM_CLANGXX16 clang++-16)
otm_omp_more_tests(${CMAKE_CURRENT_BINARY_DIR}/omp16 ${OTM_CLANG16} "${OTM_CLANGXX16}" omp16
                   omp16_ _outputs ${_flags})

add_custom_target(otm_omp16_tests ALL DEPENDS ${_outputs})
add_dependencies(otm_omp16_tests omptarget_rtl_mpi)
