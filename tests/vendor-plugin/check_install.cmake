# cmake -DHOROVOD_BUILD=<main build> -DVENDOR_SOURCE=<this folder>
#       -DWORK=<scratch> -DGENERATOR=<gen> -DC_COMPILER=<cc> -P check_install.cmake
#
# Installs the Horovod build to a prefix, moves that prefix elsewhere (so
# nothing can lean on the original location), builds and installs the vendor
# plugin against the moved prefix only, then runs the moved horovod-info with
# nothing but HOROVOD_CONFIG and checks that it finds and loads the plugin.
foreach(var HOROVOD_BUILD VENDOR_SOURCE WORK GENERATOR C_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_install.cmake needs -D${var}=...")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status
    OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT status EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "failed (${status}): ${command}\n${out}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# 1. Install, then move the prefix.
run(${CMAKE_COMMAND} --install ${HOROVOD_BUILD} --prefix ${WORK}/installed)
file(RENAME ${WORK}/installed ${WORK}/moved)
set(prefix ${WORK}/moved)
foreach(file bin/horovod-info include/horovod/transport.h
             lib/cmake/Horovod/HorovodConfig.cmake
             lib/cmake/Horovod/HorovodConfigVersion.cmake
             lib/cmake/Horovod/HorovodTargets.cmake
             lib/cmake/Horovod/HorovodPlugin.cmake
             lib/pkgconfig/horovod.pc lib/libhorovod.so)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "the install lacks ${file}")
  endif()
endforeach()

# 2. The vendor's build sees only the moved prefix.
run(${CMAKE_COMMAND} -S ${VENDOR_SOURCE} -B ${WORK}/vendor-build
  -G ${GENERATOR} -DCMAKE_C_COMPILER=${C_COMPILER}
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
  -DCMAKE_INSTALL_PREFIX=${WORK}/vendor)
run(${CMAKE_COMMAND} --build ${WORK}/vendor-build)
run(${CMAKE_COMMAND} --install ${WORK}/vendor-build)
set(plugin ${WORK}/vendor/lib/horovod/libhorovod-transport-acme.so)
if(NOT EXISTS ${plugin})
  message(FATAL_ERROR "the vendor install lacks ${plugin}")
endif()

# The exported library target links and runs; so does a build from the
# pkg-config file alone.
run(${WORK}/vendor-build/acme_consumer)
find_program(PKG_CONFIG_EXECUTABLE pkg-config)
if(PKG_CONFIG_EXECUTABLE)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/lib/pkgconfig
      ${PKG_CONFIG_EXECUTABLE} --cflags --libs horovod
    OUTPUT_VARIABLE pc_flags OUTPUT_STRIP_TRAILING_WHITESPACE
    COMMAND_ERROR_IS_FATAL ANY)
  separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
  run(${C_COMPILER} ${VENDOR_SOURCE}/consumer.c ${pc_flags}
    -Wl,-rpath,${prefix}/lib -o ${WORK}/consumer-pc)
  run(${WORK}/consumer-pc)
endif()

# 3. A configuration naming the plugin, and the moved horovod-info.
file(WRITE ${WORK}/horovod.toml
"[plugins]
search_path = [\"${WORK}/vendor/lib/horovod\"]

[transport]
inter = \"acme\"

[transport.acme]
greeting = \"built outside the tree\"
")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env
    --unset=HOROVOD_PLUGIN_PATH --unset=HOROVOD_CPU_OPERATIONS
    --unset=LD_LIBRARY_PATH --unset=HOROVOD_LOG_LEVEL
    HOROVOD_CONFIG=${WORK}/horovod.toml
    ${prefix}/bin/horovod-info --json
  WORKING_DIRECTORY ${WORK}
  RESULT_VARIABLE status OUTPUT_VARIABLE report ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "horovod-info failed (${status}):\n${report}${errors}")
endif()

# 4. It must be listed on the search path as loading, and used for inter.
set(listed FALSE)
string(JSON found_count LENGTH "${report}" plugins found)
if(found_count GREATER 0)
  math(EXPR last "${found_count} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${report}" plugins found ${i} name)
    string(JSON kind GET "${report}" plugins found ${i} kind)
    if(name STREQUAL "acme" AND kind STREQUAL "transport")
      string(JSON loads GET "${report}" plugins found ${i} loads)
      string(JSON path GET "${report}" plugins found ${i} path)
      string(JSON version GET "${report}" plugins found ${i} version)
      string(JSON abi GET "${report}" plugins found ${i} abi)
      if(NOT loads OR NOT path STREQUAL plugin OR NOT version STREQUAL "2.4.0"
         OR NOT abi MATCHES "^1\\.[0-9]+$")
        message(FATAL_ERROR "acme listed wrongly (loads ${loads}, path "
          "${path}, version ${version}, abi ${abi}):\n${report}")
      endif()
      set(listed TRUE)
    endif()
  endforeach()
endif()
if(NOT listed)
  message(FATAL_ERROR "horovod-info does not list acme:\n${report}")
endif()

set(used FALSE)
string(JSON selected_count LENGTH "${report}" plugins selected)
math(EXPR last "${selected_count} - 1")
foreach(i RANGE ${last})
  string(JSON role GET "${report}" plugins selected ${i} role)
  if(role STREQUAL "transport.inter")
    string(JSON name GET "${report}" plugins selected ${i} candidates 0 name)
    string(JSON loads GET "${report}" plugins selected ${i} candidates 0 loads)
    string(JSON path GET "${report}" plugins selected ${i} candidates 0 path)
    if(name STREQUAL "acme" AND loads AND path STREQUAL plugin)
      set(used TRUE)
    endif()
  endif()
endforeach()
if(NOT used)
  message(FATAL_ERROR "transport.inter does not load acme:\n${report}")
endif()

# 5. The moved install still finds its own plugin folder, with no variable.
string(JSON search_count LENGTH "${report}" plugins search_path)
set(own FALSE)
math(EXPR last "${search_count} - 1")
foreach(i RANGE ${last})
  string(JSON dir GET "${report}" plugins search_path ${i})
  if(dir STREQUAL "${prefix}/lib/horovod")
    set(own TRUE)
  endif()
endforeach()
if(NOT own)
  message(FATAL_ERROR "the moved install does not search ${prefix}/lib/horovod:\n${report}")
endif()

file(REMOVE_RECURSE ${WORK})
message(STATUS "acme transport built against the moved install and loaded")
