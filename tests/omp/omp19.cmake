# The `omp19` label: the programs of the `omp` label, compiled by clang-19
# and run through the same launcher and driver (run_omp.sh) on
# libomptarget 19 with our plugin inside (ci/llvm19.sh builds it from
# Debian's source; tools/CMakeLists.txt puts it in the plugin directory as
# OTM_LIBOMPTARGET19). The programs are compiled and linked against
# Debian's libomp-19-dev, unpacked by ci/setup.sh into OTM_LLVM19_DIR (it
# conflicts with libomp-14-dev): -I, -L and an rpath there; the launcher's
# LD_LIBRARY_PATH puts the runtime with our plugin before that rpath.
# clang-19 needs clang-offload-packager and clang-linker-wrapper (Debian
# package clang-tools-19), found through -B.
#
# Included by tests/omp/CMakeLists.txt, whose OTM_OMP_PROGRAMS, launcher,
# plugin_dir and driver it uses; the programs of omp_more.cmake's lists
# are built for 19 too, into omp19/ (C++ with clang++-19).
set(OTM_LLVM19_DIR ${PROJECT_SOURCE_DIR}/.deps/llvm-19 CACHE PATH
    "Unpacked libomp-19-dev and libomp5-19 (ci/setup.sh) for the omp19 tests")
set(_llvm19 ${OTM_LLVM19_DIR}/usr/lib/llvm-19)
find_program(OTM_CLANG19 clang-19)
find_program(OTM_CLANG19_PACKAGER NAMES clang-offload-packager
             PATHS /usr/lib/llvm-19/bin NO_DEFAULT_PATH)
find_path(OTM_OMP19_INCLUDE omp.h PATHS ${_llvm19}/lib/clang/19/include NO_DEFAULT_PATH)
find_library(OTM_LIBOMP19 NAMES libomp.so.5 PATHS ${_llvm19}/lib NO_DEFAULT_PATH)

otm_omp_version_require(19 _found
  "run ci/setup.sh, which installs clang-19, clang-tools-19 and llvm-19-dev, unpacks libomp 19 into ${OTM_LLVM19_DIR} and builds libomptarget 19 with this plugin (ci/llvm19.sh)"
  OTM_CLANG19 OTM_CLANG19_PACKAGER OTM_OMP19_INCLUDE OTM_LIBOMP19
  OTM_LIBOMPTARGET19)
if(NOT _found)
  return()
endif()

get_filename_component(_tools ${OTM_CLANG19_PACKAGER} DIRECTORY)
set(_flags ${OTM_OMP_FLAGS} -B${_tools} -I${OTM_OMP19_INCLUDE}
    -L${_llvm19}/lib -Wl,-rpath,${_llvm19}/lib)
# The compiler and its flags, for the benchmarks of this version too.
set_property(GLOBAL PROPERTY OTM_OMP19_CC ${OTM_CLANG19})
set_property(GLOBAL PROPERTY OTM_OMP19_FLAGS ${_flags})
set(_outputs)
otm_omp_version_programs(19 ${OTM_CLANG19} _outputs ${_flags})

otm_omp_in_flight_polled(19)

# A bad setting: the job refused before any rank runs main, as under 14.
add_test(NAME omp19_bad_setting
         COMMAND sh ${driver} --env OMPTARGET_MPI_WINDOW=abc
                 --expect-refusal "OMPTARGET_MPI_WINDOW=abc: .*the job ends"
                 ${launcher} ${plugin_dir} ${CMAKE_CURRENT_BINARY_DIR}/omp19/omp_target
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(omp19_bad_setting PROPERTIES LABELS omp19 TIMEOUT 200)

# What the launcher reads from a program's file: clang 19 carries the
# `requires` flags in an entry of the host's offload table.
set(_o19 ${CMAKE_CURRENT_BINARY_DIR}/omp19)
add_test(NAME omp19_launcher_requires
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_requires.sh
                 ${CMAKE_BINARY_DIR}/bin/omptarget-mpi-requires
                 ${_o19}/omp_usm ${_o19}/omp_usm_refused -- ${_o19}/omp_target ${_o19}/omp_usm_on)
set_tests_properties(omp19_launcher_requires PROPERTIES LABELS omp19 TIMEOUT 60)

# omp_dlopen opens its library once here. libomptarget 19 keeps the
# mappings of a dlclose()d library's globals (its unregisterLib tells no
# plugin and drops no mapping), so the library opened again at the same
# address fails to map them. Its own host plugin fails the two rounds too:
# its device image needs the library, which therefore never unloads, and
# the globals keep the first round's values.
set(_dlopen_args ${OTM_OMP_ARGS_omp_dlopen})
set(OTM_OMP_ARGS_omp_dlopen ${_dlopen_args} --env OTM_TEST_DLOPEN_ROUNDS=1)
# The runtime itself, against Debian's: the same exports for programs, and
# none of the plugin's; without our plugin beside it, a clear line.
add_test(NAME omp19_exports
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_llvm19.sh exports
                 ${OTM_LIBOMPTARGET19} ${_llvm19}/lib/libomptarget.so.19.1)
add_test(NAME omp19_no_plugin
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_llvm19.sh no-plugin
                 ${OTM_LIBOMPTARGET19} ${CMAKE_CURRENT_BINARY_DIR}/omp19/omp_host_fallback)
set_tests_properties(omp19_exports omp19_no_plugin PROPERTIES LABELS omp19 TIMEOUT 120)

# Programs for 19 only: `declare target indirect` is OpenMP 5.1's. Not
# omp_remote: 19 has no plugin files a device rank would proxy.
set(_more ${OTM_OMP_MORE_PROGRAMS})
list(REMOVE_ITEM OTM_OMP_MORE_PROGRAMS omp_remote)
list(APPEND OTM_OMP_MORE_PROGRAMS omp_indirect)
find_program(OTM_CLANGXX19 clang++-19)
otm_omp_more_tests(${CMAKE_CURRENT_BINARY_DIR}/omp19 ${OTM_CLANG19} "${OTM_CLANGXX19}" omp19
                   omp19_ _outputs ${_flags})
set(OTM_OMP_ARGS_omp_dlopen ${_dlopen_args})
set(OTM_OMP_MORE_PROGRAMS ${_more})

add_custom_target(otm_omp19_tests ALL DEPENDS ${_outputs})
add_dependencies(otm_omp19_tests omptarget_rtl_mpi)
