# The programs of the `omp` label beyond OTM_OMP_PROGRAMS: offload
# libraries (linked at start-up or dlopen()ed), C++, programs that call MPI
# themselves, and the expected failures. They are in lists of their own because tests/netns runs every
# program of OTM_OMP_PROGRAMS (and needs OTM_NETNS_MIN_<prog> for each); the
# expected failures must never run there.
#
# Included by tests/omp/CMakeLists.txt, which sets the lists and calls
# otm_omp_more_tests() for clang-14; omp16.cmake calls it again for
# clang-16 (the libraries and executables in omp16/, next to the others).

# otm_omp_more_tests(OUTDIR CC CXX LABEL PREFIX OUTPUTS_VAR FLAGS...)
#   builds every program of OTM_OMP_MORE_PROGRAMS, OTM_OMP_LIB_PROGRAMS,
#   OTM_OMP_CXX_PROGRAMS, OTM_OMP_MPI_PROGRAMS, OTM_OMP_FAULT_PROGRAMS and
#   OTM_OMP_USM_PROGRAMS
#   into OUTDIR with CC (C++: CXX) and FLAGS (MPI programs: also
#   OTM_OMP_MPI_FLAGS, the plugin's MPI), the libraries of a program of OTM_OMP_LIB_PROGRAMS
#   (OTM_OMP_LINK_<prog>: linked, OTM_OMP_DLOPEN_<prog>: built next to it
#   only) with FLAGS -fPIC -shared, as OUTDIR/lib<name>.so from <name>.c;
#   registers test PREFIX<prog> with LABEL, run by ${driver} with
#   OTM_OMP_ARGS_<prog>, a time limit of OTM_OMP_TIMEOUT_<prog> (200 s by
#   default) and OTM_OMP_WORKDIR_<prog> as its directory (the build
#   directory of tests/omp by default); a program of OTM_OMP_HOST_ONLY is
#   built without -fopenmp-targets (its libraries keep them, and several
#   programs may share one); appends the files built to
#   OUTPUTS_VAR. CXX empty: each C++ program's test reports itself skipped.
#   For each name V of OTM_OMP_VARIANTS_<prog>, one more test
#   PREFIX<prog>_<V> runs the same program with OTM_TEST_VARIANT=V.
function(otm_omp_more_tests outdir cc cxx label prefix outputs_var)
  set(flags ${ARGN})
  set(src ${CMAKE_CURRENT_SOURCE_DIR})
  set(built)
  foreach(prog IN LISTS OTM_OMP_MORE_PROGRAMS OTM_OMP_LIB_PROGRAMS OTM_OMP_CXX_PROGRAMS
                        OTM_OMP_MPI_PROGRAMS OTM_OMP_FAULT_PROGRAMS OTM_OMP_USM_PROGRAMS)
    set(exe ${outdir}/${prog})
    set(link)
    set(deps)
    if(prog IN_LIST OTM_OMP_LIB_PROGRAMS)
      foreach(lib IN LISTS OTM_OMP_LINK_${prog} OTM_OMP_DLOPEN_${prog})
        set(so ${outdir}/lib${lib}.so)
        list(APPEND deps ${so})
        if(so IN_LIST built)
          continue()
        endif()
        add_custom_command(
          OUTPUT ${so}
          COMMAND ${CMAKE_COMMAND} -E make_directory ${outdir}
          COMMAND ${cc} ${flags} -fPIC -shared -Wl,-soname,lib${lib}.so ${src}/${lib}.c -o ${so}
          DEPENDS ${src}/${lib}.c
          WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
          COMMENT "${label}: offload library lib${lib}.so of ${prog}"
          VERBATIM)
        list(APPEND built ${so})
      endforeach()
      foreach(lib IN LISTS OTM_OMP_LINK_${prog})
        list(APPEND link -l${lib})
      endforeach()
      list(APPEND link -L${outdir} -Wl,-rpath,${outdir} -ldl)
    endif()
    if(prog IN_LIST OTM_OMP_MPI_PROGRAMS)
      list(APPEND link ${OTM_OMP_MPI_FLAGS})
    endif()

    set(compiler ${cc})
    set(source ${src}/${prog}.c)
    if(prog IN_LIST OTM_OMP_CXX_PROGRAMS)
      set(compiler ${cxx})
      set(source ${src}/${prog}.cpp)
    endif()
    set(timeout 200)
    if(DEFINED OTM_OMP_TIMEOUT_${prog})
      set(timeout ${OTM_OMP_TIMEOUT_${prog}})
    endif()
    set(workdir ${CMAKE_CURRENT_BINARY_DIR})
    if(DEFINED OTM_OMP_WORKDIR_${prog})
      set(workdir ${OTM_OMP_WORKDIR_${prog}})
    endif()

    if(NOT compiler)
      add_test(NAME ${prefix}${prog}
               COMMAND sh -c "echo \"${prefix}${prog}: skipped: no C++ compiler for ${label}\"; exit 77")
      set_tests_properties(${prefix}${prog} PROPERTIES LABELS ${label} SKIP_RETURN_CODE 77)
      continue()
    endif()
    set(exe_flags ${flags})
    if(prog IN_LIST OTM_OMP_HOST_ONLY)
      list(FILTER exe_flags EXCLUDE REGEX "^-fopenmp-targets=")
    endif()
    add_custom_command(
      OUTPUT ${exe}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${outdir}
      COMMAND ${compiler} ${exe_flags} -I${src} ${source} -o ${exe} ${link}
      DEPENDS ${source} ${src}/omp_check.h ${deps}
      WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
      COMMENT "${label}: OpenMP offloading test ${prog}"
      VERBATIM)
    list(APPEND built ${exe})
    add_test(NAME ${prefix}${prog}
             COMMAND sh ${driver} ${OTM_OMP_ARGS_${prog}} ${launcher} ${plugin_dir} ${exe}
             WORKING_DIRECTORY ${workdir})
    set_tests_properties(${prefix}${prog} PROPERTIES LABELS ${label} TIMEOUT ${timeout})
    foreach(variant IN LISTS OTM_OMP_VARIANTS_${prog})
      add_test(NAME ${prefix}${prog}_${variant}
               COMMAND sh ${driver} --env OTM_TEST_VARIANT=${variant} ${OTM_OMP_ARGS_${prog}}
                       ${launcher} ${plugin_dir} ${exe}
               WORKING_DIRECTORY ${workdir})
      set_tests_properties(${prefix}${prog}_${variant} PROPERTIES LABELS ${label}
                           TIMEOUT ${timeout})
    endforeach()
  endforeach()
  set(${outputs_var} ${${outputs_var}} ${built} PARENT_SCOPE)
endfunction()
