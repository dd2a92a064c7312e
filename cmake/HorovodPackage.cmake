# Installs the CMake package (lib/cmake/Horovod/) and the pkg-config file
# (lib/pkgconfig/horovod.pc) for the targets exported as HorovodTargets.
# Both locate the install relative to themselves, so a copied prefix works.
include(CMakePackageConfigHelpers)

set(HOROVOD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Horovod)
set(HOROVOD_PLUGIN_DIR ${CMAKE_INSTALL_LIBDIR}/horovod)
file(STRINGS ${PROJECT_SOURCE_DIR}/core/include/horovod/abi.h abi_lines
  REGEX "^#define HVD_ABI_VERSION_(MAJOR|MINOR) ")
string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*" "\\1.\\2"
  HOROVOD_ABI_VERSION "${abi_lines}")

install(EXPORT HorovodTargets
  NAMESPACE Horovod::
  FILE HorovodTargets.cmake
  DESTINATION ${HOROVOD_CMAKE_DIR})

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/HorovodConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/HorovodConfig.cmake
  INSTALL_DESTINATION ${HOROVOD_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR HOROVOD_PLUGIN_DIR)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/package/HorovodConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/package/HorovodConfig.cmake
  ${PROJECT_BINARY_DIR}/package/HorovodConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/HorovodPlugin.cmake
  DESTINATION ${HOROVOD_CMAKE_DIR})

file(RELATIVE_PATH HOROVOD_PC_PREFIX_FROM_PCDIR
  /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" HOROVOD_PC_PREFIX_FROM_PCDIR
  "${HOROVOD_PC_PREFIX_FROM_PCDIR}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/horovod.pc.in
  ${PROJECT_BINARY_DIR}/package/horovod.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/horovod.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
