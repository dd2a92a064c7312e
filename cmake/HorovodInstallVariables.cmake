# Horovod's install-time environment variables (`HOROVOD_WITH_MPI=1 pip
# install ...`), so that existing install scripts keep working. Each one
# either maps onto this build's options or is accepted with a note saying
# why it is not needed; HOROVOD_WITH_X=1 (and a GPU or CPU operations
# library asked for by name) fails the configure with a clear message when
# X cannot be built, as Horovod's setup does.
#
# horovod_read_install_variables() runs before the plugins are configured,
# horovod_check_install_requirements() after.

set(_hvd_runtime_note "not needed: bindings load at run time")

function(_hvd_env_on name out)
  set(value "$ENV{${name}}")
  string(TOLOWER "${value}" value)
  if(value STREQUAL "" OR value STREQUAL "0" OR value STREQUAL "false" OR
     value STREQUAL "no" OR value STREQUAL "off")
    set(${out} OFF PARENT_SCOPE)
  else()
    set(${out} ON PARENT_SCOPE)
  endif()
endfunction()

function(_hvd_note name)
  if(DEFINED ENV{${name}})
    string(JOIN "" text ${ARGN})
    message(STATUS "${name}=$ENV{${name}}: ${text}")
  endif()
endfunction()

# Records that `target`, built when `option` is on (- for none), must
# exist once everything is configured, or the configure fails saying why
# (the rest).
function(_hvd_require variable target option)
  string(JOIN "" why ${ARGN})
  set_property(GLOBAL APPEND PROPERTY HOROVOD_REQUIRED_TARGETS
    "${variable}|${target}|${option}|${why}")
endfunction()

# HOROVOD_WITH_<X>=1 / HOROVOD_WITHOUT_<X>=1 for a plugin built from
# `option` into `target`.
function(_hvd_plugin_switch name option target missing)
  _hvd_env_on(HOROVOD_WITH_${name} with)
  _hvd_env_on(HOROVOD_WITHOUT_${name} without)
  if(with AND without)
    message(FATAL_ERROR "HOROVOD_WITH_${name} and HOROVOD_WITHOUT_${name} "
                        "are both set; set one")
  endif()
  if(without)
    set(${option} OFF PARENT_SCOPE)
    message(STATUS "HOROVOD_WITHOUT_${name}=1: ${option}=OFF")
  elseif(with)
    # The adapter's option defaults to whether TensorFlow is found, so only
    # a transport's being OFF says it was switched off.
    set(switch ${option})
    if(name STREQUAL "TENSORFLOW")
      set(switch -)
    endif()
    _hvd_require(HOROVOD_WITH_${name} ${target} ${switch} "${missing}")
  endif()
endfunction()

# A GPU or CPU operations library named by value: NCCL, MPI, GLOO.
function(_hvd_operations_library variable)
  if(NOT DEFINED ENV{${variable}} OR "$ENV{${variable}}" STREQUAL "")
    return()
  endif()
  string(TOUPPER "$ENV{${variable}}" library)
  if(library STREQUAL "NCCL")
    _hvd_require(${variable} horovod-transport-nccl HOROVOD_TRANSPORT_NCCL
      "NCCL and the CUDA runtime were not found (CUDAToolkit_ROOT, "
      "HOROVOD_CUDA_HOME, HOROVOD_NCCL_HOME)")
  elseif(library STREQUAL "MPI")
    _hvd_require(${variable} horovod-transport-mpi HOROVOD_TRANSPORT_MPI
      "no MPI was found (Debian: libopenmpi-dev)")
  elseif(library STREQUAL "GLOO")
    _hvd_require(${variable} horovod-transport-gloo HOROVOD_TRANSPORT_GLOO
      "no Gloo was found (Debian: libgloo-dev)")
  elseif(library STREQUAL "CCL" OR library STREQUAL "DDL")
    message(FATAL_ERROR "${variable}=$ENV{${variable}}: this Horovod has no "
                        "${library} support (use NCCL, MPI or GLOO)")
  else()
    message(FATAL_ERROR "${variable}=$ENV{${variable}}: expected NCCL, MPI "
                        "or GLOO")
  endif()
  message(STATUS "${variable}=$ENV{${variable}}: the ${library} transport is "
                 "required; which one runs is chosen at run time "
                 "(horovod.toml [transport])")
endfunction()

# HOROVOD_WITH_<X>=1 for a binding written in Python: the configuring
# python3 must import `module`.
function(_hvd_python_binding name module framework)
  _hvd_env_on(HOROVOD_WITH_${name} with)
  if(with)
    find_package(Python3 COMPONENTS Interpreter)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import ${module}"
      RESULT_VARIABLE missing OUTPUT_QUIET ERROR_QUIET)
    if(missing)
      message(FATAL_ERROR "HOROVOD_WITH_${name}=1 but ${Python3_EXECUTABLE} "
                          "does not import ${module} (install ${framework} first)")
    endif()
    message(STATUS "HOROVOD_WITH_${name}=$ENV{HOROVOD_WITH_${name}}: "
                   "${module} found; ${_hvd_runtime_note}")
  endif()
  _hvd_note(HOROVOD_WITHOUT_${name} "${_hvd_runtime_note}")
endfunction()

macro(horovod_read_install_variables)
  _hvd_plugin_switch(MPI HOROVOD_TRANSPORT_MPI horovod-transport-mpi
    "no MPI was found (Debian: libopenmpi-dev)")
  _hvd_plugin_switch(GLOO HOROVOD_TRANSPORT_GLOO horovod-transport-gloo
    "no Gloo was found (Debian: libgloo-dev)")
  _hvd_plugin_switch(TENSORFLOW HOROVOD_ADAPTER_TENSORFLOW horovod_tensorflow
    "python3 does not import tensorflow (install TensorFlow 2.x first)")

  # horovod.torch and horovod.mxnet are Python over the C API: nothing is
  # compiled against the framework, so only its presence is checked, as
  # Horovod's setup does.
  _hvd_python_binding(PYTORCH torch PyTorch)
  _hvd_python_binding(MXNET mxnet MXNet)

  foreach(_hvd_op OPERATIONS ALLREDUCE ALLGATHER BROADCAST ALLTOALL
          REDUCESCATTER)
    _hvd_operations_library(HOROVOD_GPU_${_hvd_op})
  endforeach()
  _hvd_operations_library(HOROVOD_CPU_OPERATIONS)

  if(DEFINED ENV{HOROVOD_GPU})
    string(TOUPPER "$ENV{HOROVOD_GPU}" _hvd_gpu)
    if(_hvd_gpu STREQUAL "CUDA")
      _hvd_note(HOROVOD_GPU "not needed: CUDA tensors are recognised at run "
                            "time (the nccl transport is built where NCCL is found)")
    elseif(NOT _hvd_gpu STREQUAL "")
      message(FATAL_ERROR "HOROVOD_GPU=$ENV{HOROVOD_GPU}: this Horovod "
                          "supports CUDA only")
    endif()
  endif()

  # Where to find CUDA and NCCL (transports/nccl/CMakeLists.txt).
  if(DEFINED ENV{HOROVOD_CUDA_HOME})
    set(CUDAToolkit_ROOT "$ENV{HOROVOD_CUDA_HOME}")
    message(STATUS "HOROVOD_CUDA_HOME: CUDAToolkit_ROOT=${CUDAToolkit_ROOT}")
  endif()
  if(DEFINED ENV{HOROVOD_NCCL_HOME})
    set(ENV{NCCL_HOME} "$ENV{HOROVOD_NCCL_HOME}")
    message(STATUS "HOROVOD_NCCL_HOME: NCCL looked for in $ENV{NCCL_HOME}")
  endif()
  if(DEFINED ENV{HOROVOD_NCCL_INCLUDE})
    list(APPEND CMAKE_INCLUDE_PATH "$ENV{HOROVOD_NCCL_INCLUDE}")
    message(STATUS "HOROVOD_NCCL_INCLUDE: nccl.h looked for in "
                   "$ENV{HOROVOD_NCCL_INCLUDE}")
  endif()
  if(DEFINED ENV{HOROVOD_NCCL_LIB})
    list(APPEND CMAKE_LIBRARY_PATH "$ENV{HOROVOD_NCCL_LIB}")
    message(STATUS "HOROVOD_NCCL_LIB: libnccl looked for in "
                   "$ENV{HOROVOD_NCCL_LIB}")
  endif()
  _hvd_note(HOROVOD_NCCL_LINK "not needed: the nccl transport links NCCL "
                              "as a shared library")

  _hvd_env_on(HOROVOD_DEBUG _hvd_debug)
  if(_hvd_debug)
    set(CMAKE_BUILD_TYPE Debug CACHE STRING "Build type" FORCE)
    message(STATUS "HOROVOD_DEBUG=1: CMAKE_BUILD_TYPE=Debug")
  endif()
  if(DEFINED ENV{HOROVOD_BUILD_ARCH_FLAGS})
    separate_arguments(_hvd_arch_flags UNIX_COMMAND
      "$ENV{HOROVOD_BUILD_ARCH_FLAGS}")
    add_compile_options(${_hvd_arch_flags})
    message(STATUS "HOROVOD_BUILD_ARCH_FLAGS: compiling with "
                   "${_hvd_arch_flags}")
  endif()

  foreach(_hvd_unused HOROVOD_BUILD_CUDA_CC_LIST HOROVOD_ROCM_HOME
          HOROVOD_ALLOW_MIXED_GPU_IMPL HOROVOD_CMAKE)
    _hvd_note(${_hvd_unused} "not needed: nothing of it is built here")
  endforeach()
endmacro()

function(horovod_check_install_requirements)
  get_property(requirements GLOBAL PROPERTY HOROVOD_REQUIRED_TARGETS)
  set(unmet "")
  foreach(requirement IN LISTS requirements)
    string(REPLACE "|" ";" requirement "${requirement}")
    list(GET requirement 0 variable)
    list(GET requirement 1 target)
    list(GET requirement 2 option)
    list(GET requirement 3 why)
    if(NOT option STREQUAL "-" AND DEFINED ${option} AND NOT ${${option}})
      set(why "${option} is OFF")
    endif()
    if(TARGET ${target})
      message(STATUS "${variable}=$ENV{${variable}}: ${target} is built")
    else()
      string(APPEND unmet "\n  ${variable}=$ENV{${variable}} asks for "
                          "${target}, which cannot be built: ${why}")
    endif()
  endforeach()
  if(unmet)
    message(FATAL_ERROR "Horovod's install variables ask for what this "
                        "machine cannot build:${unmet}")
  endif()
endfunction()
