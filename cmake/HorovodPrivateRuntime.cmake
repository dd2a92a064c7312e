# horovod_private_runtime(<target> <version script>)
#
# A built-in plugin keeps its C++ runtime to itself: libstdc++ and libgcc
# are linked in and hidden, only what the version script names is exported,
# and no symbol is left for the process to supply. Such a plugin depends on
# libc alone and never meets another copy of the runtime in the process.
#
# Under a sanitizer the plugins use the process's shared libstdc++ instead:
# a linked-in copy allocates its exception-handling pool once per plugin,
# which LeakSanitizer reports once a test that opened the plugin itself
# (tests/reducers) closes it.
function(horovod_private_runtime target map)
  if(NOT HOROVOD_SANITIZE)
    target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
  endif()
  target_link_options(${target} PRIVATE -Wl,--exclude-libs,ALL
    -Wl,--no-undefined -Wl,--gc-sections -Wl,--version-script=${map})
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${map})
endfunction()
