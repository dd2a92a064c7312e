# Jobs over the mpi transport, started by mpirun directly and by
# horovodrun --mpi: every collective with the ring reducer and with MPI's own
# collectives (the native reducer; the log must show it chosen).
find_program(MPIRUN mpirun)
if(NOT TARGET horovod-transport-mpi OR NOT MPIRUN)
  return()
endif()
set(HVD_MPI_ENV
  "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_pml=ob1;OMPI_MCA_btl=self,vader;HOROVOD_RENDEZVOUS_ADDR=;HOROVOD_CONFIG=;HOROVOD_START_TIMEOUT=30")
add_test(NAME runtime.collectives.mpi.np2
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/expect_in_log.sh "reducer 'native'"
          ${MPIRUN} -np 2 $<TARGET_FILE:runtime_collectives_job>
          ${HVD_RUNTIME_CONFIGS}/mpi-ring.toml
          ${HVD_RUNTIME_CONFIGS}/mpi-native.toml)
set_tests_properties(runtime.collectives.mpi.np2 PROPERTIES TIMEOUT 300
  ENVIRONMENT "${HVD_MPI_ENV};HOROVOD_LOG_LEVEL=debug")
add_test(NAME runtime.collectives.mpi.horovodrun.np3
  COMMAND ${HVD_HOROVODRUN} --mpi -np 3
          $<TARGET_FILE:runtime_collectives_job>
          ${HVD_RUNTIME_CONFIGS}/mpi-ring.toml
          ${HVD_RUNTIME_CONFIGS}/mpi-native.toml)
set_tests_properties(runtime.collectives.mpi.horovodrun.np3 PROPERTIES
  TIMEOUT 300 ENVIRONMENT "${HVD_MPI_ENV}")
if(TARGET horovod-demo)
  add_test(NAME runtime.demo.mpi.horovodrun.np2
    COMMAND ${HVD_HOROVODRUN} --mpi -np 2 $<TARGET_FILE:horovod-demo>)
  set_tests_properties(runtime.demo.mpi.horovodrun.np2 PROPERTIES
    TIMEOUT 120 ENVIRONMENT "${HVD_MPI_ENV}")
endif()
