# sim_checks.cmake - checks over every test labelled sim, wherever it was
# registered (otm_test collects them); included last by the top CMakeLists.

# Every sim test must run on the simulator: no libmpi among its libraries and
# the wrappers really hit (each sim test binary asserts the latter itself via
# the world's call counters; this checks the former).
get_property(_sim_tests GLOBAL PROPERTY OTM_SIM_TESTS_sim)
set(_bins "")
foreach(t IN LISTS _sim_tests)
  list(APPEND _bins $<TARGET_FILE:${t}>)
endforeach()
add_test(NAME sim_binaries_link_no_mpi
         COMMAND ${PROJECT_SOURCE_DIR}/tests/check_sim_binaries.sh ${_bins})
set_tests_properties(sim_binaries_link_no_mpi PROPERTIES LABELS "sim")

# Memcheck over the simulator tests: 0 errors and no definite or indirect
# leak, or the test fails. test_events (an hour under memcheck as it is)
# runs every case scaled down: 100 seeds per kind and size, enumerations
# stopped after 10,000 schedules (ALLOC, EXCHANGE and EXECUTE still
# complete), about 4 minutes of CPU (a longer timeout: a busy machine).
find_program(OTM_VALGRIND valgrind)
if(NOT OTM_VALGRIND)
  message(FATAL_ERROR "valgrind not found: install it (ci/setup.sh)")
endif()
foreach(t IN LISTS _sim_tests)
  add_test(NAME valgrind_${t}
           COMMAND ${OTM_VALGRIND} -q --error-exitcode=1 --leak-check=full
                   --errors-for-leak-kinds=definite,indirect $<TARGET_FILE:${t}>)
  set_tests_properties(valgrind_${t} PROPERTIES LABELS valgrind TIMEOUT 900)
endforeach()
set_tests_properties(valgrind_test_events PROPERTIES TIMEOUT 1800
  ENVIRONMENT "OTM_SIM_SEEDS=100;OTM_SIM_EXPLORE_MAX=10000")
# test_liveness's enumeration (156,310 schedules natively) likewise, and
# test_end's (170,368 schedules, then 2,000 seeds).
set_tests_properties(valgrind_test_liveness PROPERTIES
  ENVIRONMENT "OTM_SIM_EXPLORE_MAX=10000")
set_tests_properties(valgrind_test_end PROPERTIES
  ENVIRONMENT "OTM_SIM_EXPLORE_MAX=10000;OTM_SIM_SEEDS=200")
# test_sweep's 10,000 faulty and 10,000 healing jobs (3 minutes under
# memcheck) as 2,000 of each; test_page_explore's enumerations (232,886
# schedules natively) stopped at 2,000 each, its seeded cases at 500.
set_tests_properties(valgrind_test_sweep PROPERTIES ENVIRONMENT "OTM_SIM_SEEDS=2000")
set_tests_properties(valgrind_test_page_explore PROPERTIES
  ENVIRONMENT "OTM_SIM_EXPLORE_MAX=2000;OTM_SIM_PAGE_SEEDS=500")
