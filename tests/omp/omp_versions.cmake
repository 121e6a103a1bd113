# What the labels of other LLVM versions (omp15.cmake, omp16.cmake,
# omp19.cmake) share: the programs of OTM_OMP_PROGRAMS built by that
# version's clang, and the one skipped test that stands for the label when
# the version is missing.
# Included by tests/omp/CMakeLists.txt, whose launcher, plugin_dir, driver
# and OTM_OMP_ARGS_* they use.

# otm_omp_version_missing(VER WHY): the label ompVER holds one test,
# ompVER_unavailable, which reports itself skipped (exit status 77) with
# WHY: never dropped silently.
function(otm_omp_version_missing ver why)
  message(WARNING "omp${ver} tests: ${why}")
  add_test(NAME omp${ver}_unavailable
           COMMAND sh -c "echo \"omp${ver}: skipped: $1\"; exit 77" sh "${why}")
  set_tests_properties(omp${ver}_unavailable PROPERTIES LABELS omp${ver}
                       SKIP_RETURN_CODE 77)
endfunction()

# otm_omp_version_require(VER OK_VAR HOW VAR...): OK_VAR is TRUE when
# every VAR (a find_* result) was found; else FALSE, and the label ompVER
# holds the one skipped test naming the missing ones and HOW to get them.
function(otm_omp_version_require ver ok_var how)
  set(missing)
  foreach(what IN LISTS ARGN)
    if(NOT ${what})
      list(APPEND missing ${what})
    endif()
  endforeach()
  set(${ok_var} TRUE PARENT_SCOPE)
  if(missing)
    string(REPLACE ";" ", " missing "${missing}")
    otm_omp_version_missing(${ver} "LLVM ${ver} not found (${missing}): ${how}")
    set(${ok_var} FALSE PARENT_SCOPE)
  endif()
endfunction()

# otm_omp_version_programs(VER CC OUTPUTS_VAR FLAGS...): every program of
# OTM_OMP_PROGRAMS built by CC with FLAGS into ompVER/, registered as test
# ompVER_<prog> with label ompVER and run by ${driver}; appends the files
# built to OUTPUTS_VAR.
function(otm_omp_version_programs ver cc outputs_var)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/omp${ver})
  set(built)
  foreach(prog IN LISTS OTM_OMP_PROGRAMS)
    set(exe ${dir}/${prog})
    add_custom_command(
      OUTPUT ${exe}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
      COMMAND ${cc} ${ARGN} -I${CMAKE_CURRENT_SOURCE_DIR}
              ${CMAKE_CURRENT_SOURCE_DIR}/${prog}.c -o ${exe}
      DEPENDS ${prog}.c omp_check.h
      WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
      COMMENT "clang-${ver}: OpenMP offloading test ${prog}"
      VERBATIM)
    list(APPEND built ${exe})
    add_test(NAME omp${ver}_${prog}
             COMMAND sh ${driver} ${OTM_OMP_ARGS_${prog}} ${launcher} ${plugin_dir} ${exe}
             WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    set_tests_properties(omp${ver}_${prog} PROPERTIES LABELS omp${ver} TIMEOUT 200)
  endforeach()
  set(${outputs_var} ${${outputs_var}} ${built} PARENT_SCOPE)
endfunction()

# otm_omp_in_flight_polled(VER): from libomptarget 16 on, a nowait region
# holds no hidden helper thread while it runs (libomp re-runs its task,
# which polls it with query_async): two helpers keep all 8 devices of
# omp_in_flight busy, where a region that held its thread would allow one.
function(otm_omp_in_flight_polled ver)
  add_test(NAME omp${ver}_omp_in_flight_two_helpers
           COMMAND sh ${driver} ${OTM_OMP_ARGS_omp_in_flight}
                   --env LIBOMP_NUM_HIDDEN_HELPER_THREADS=2
                   ${launcher} ${plugin_dir} ${CMAKE_CURRENT_BINARY_DIR}/omp${ver}/omp_in_flight
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(omp${ver}_omp_in_flight_two_helpers PROPERTIES LABELS omp${ver}
                       TIMEOUT 200)
endfunction()
