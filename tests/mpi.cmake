# Tests of runs over several MPI processes (label mpi): tests/mpi_check.py
# runs heat under the MPI launcher CMake found and compares every result
# with a one-process run, bit for bit. Registered only in builds with MPI.
#
# The launcher runs as root and with more ranks than cores where CI needs it
# (mpi_check.py sets Open MPI's variables for that), one OpenMP thread per rank.

if(NOT HEAT_HAVE_MPI)
  return()
endif()
if(HEAT_PYTHON3)
  set(_heat_mpi_py "${HEAT_PYTHON3}")
else()
  set(_heat_mpi_py "python3-NOTFOUND")
endif()
if(NOT MPIEXEC_NUMPROC_FLAG)
  set(MPIEXEC_NUMPROC_FLAG -n)
endif()
foreach(_t splits restart signal fail badsplit paraview multigrid)
  add_test(NAME mpi_${_t}
           COMMAND ${_heat_mpi_py} ${CMAKE_CURRENT_SOURCE_DIR}/mpi_check.py ${_t}
                   --heat $<TARGET_FILE:heat> --mpiexec "${MPIEXEC_EXECUTABLE}"
                   --np-flag=${MPIEXEC_NUMPROC_FLAG} --work ${CMAKE_CURRENT_BINARY_DIR}/tmp_mpi_${_t}
                   --pvpython "${HEAT_PVPYTHON}" --src ${PROJECT_SOURCE_DIR})
  # The ranks share the machine's cores: each test claims two of ctest -j's.
  set_tests_properties(mpi_${_t} PROPERTIES LABELS mpi TIMEOUT 300 PROCESSORS 2)
endforeach()
set_tests_properties(mpi_paraview PROPERTIES LABELS "mpi;paraview")
# The CUDA backend's geometry walked by the CPU backend (aligned views, fused
# passes, the residual apart), so that CI checks what only a GPU runs.
foreach(_v fused steps)
  add_test(NAME mpi_gpu_views_${_v}
           COMMAND ${_heat_mpi_py} ${CMAKE_CURRENT_SOURCE_DIR}/mpi_check.py splits --gpu-views ${_v}
                   --max-np 4 --heat $<TARGET_FILE:heat> --mpiexec "${MPIEXEC_EXECUTABLE}"
                   --np-flag=${MPIEXEC_NUMPROC_FLAG}
                   --work ${CMAKE_CURRENT_BINARY_DIR}/tmp_mpi_gpu_views_${_v} --src ${PROJECT_SOURCE_DIR})
  set_tests_properties(mpi_gpu_views_${_v} PROPERTIES LABELS mpi TIMEOUT 300 PROCESSORS 2)
endforeach()
