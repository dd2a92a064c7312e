# Sanitizer builds (CMakePresets.json: asan, tsan, fuzz). One setting for the
# whole tree, so the core, the plugins and the tests agree on the runtime.
#
#   HOROVOD_SANITIZE  "address,undefined", "thread", or empty
#   HOROVOD_FUZZ      clang's libFuzzer: every target gets the coverage
#                     instrumentation, tests/fuzz builds the fuzz targets
set(HOROVOD_SANITIZE "" CACHE STRING
  "Sanitizers for every target (-fsanitize=...): address,undefined | thread")
option(HOROVOD_FUZZ "Build the libFuzzer targets (clang only)" OFF)

if(HOROVOD_SANITIZE)
  # A finding is a failure: undefined behaviour aborts instead of printing
  # and going on.
  add_compile_options(-fsanitize=${HOROVOD_SANITIZE} -fno-omit-frame-pointer
    -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${HOROVOD_SANITIZE})
  # TSan does not model a standalone atomic_thread_fence (the shm transport's
  # sleep/wake handshake uses one); gcc says so at every use.
  if(HOROVOD_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-tsan)
  endif()
  # gcc's flow analysis misreads the instrumented code: under ASan it finds
  # std::regex's std::function "maybe uninitialized" (tests/timeline), which
  # the plain build does not.
  if(HOROVOD_SANITIZE MATCHES "address" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
endif()

if(HOROVOD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "HOROVOD_FUZZ needs clang (libFuzzer): "
      "cmake --preset fuzz")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
