# horovod_add_plugin(<kind> <name> SOURCES ... [LIBRARIES ...])
#
# Builds libhorovod-<kind>-<name>.so as a loadable module in lib/horovod/ of
# the build tree and installs it to <prefix>/lib/horovod/. <kind> is one of
# transport, reducer, adapter. Plugins see only the ABI headers: they never
# link the core. This file is installed with the CMake package, so a vendor's
# plugin builds the same way against an install tree.
function(horovod_add_plugin kind name)
  cmake_parse_arguments(PLUGIN "" "" "SOURCES;LIBRARIES" ${ARGN})
  set(target horovod-${kind}-${name})
  add_library(${target} MODULE ${PLUGIN_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "horovod-${kind}-${name}"
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib/horovod
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden)
  if(TARGET Horovod::abi)
    target_link_libraries(${target} PRIVATE Horovod::abi)
  else()
    target_link_libraries(${target} PRIVATE horovod_abi)
  endif()
  if(PLUGIN_LIBRARIES)
    target_link_libraries(${target} PRIVATE ${PLUGIN_LIBRARIES})
  endif()
  if(COMMAND horovod_warnings)
    horovod_warnings(${target})
  endif()
  # A vendor's project may not include GNUInstallDirs; plugins then go to
  # lib/horovod/ of its prefix. -DHOROVOD_PLUGIN_INSTALL_DIR=${Horovod_PLUGIN_DIR}
  # installs into the Horovod install's own plugin folder instead.
  if(NOT DEFINED HOROVOD_PLUGIN_INSTALL_DIR)
    if(CMAKE_INSTALL_LIBDIR)
      set(HOROVOD_PLUGIN_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/horovod)
    else()
      set(HOROVOD_PLUGIN_INSTALL_DIR lib/horovod)
    endif()
  endif()
  install(TARGETS ${target} LIBRARY DESTINATION ${HOROVOD_PLUGIN_INSTALL_DIR})
endfunction()
