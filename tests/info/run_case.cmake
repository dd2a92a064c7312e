# Runs horovod-info as one case file describes and checks its exit status
# and output. Invoked as
#   cmake -DINFO=<horovod-info> -DDATA=<dir> -DPLUGINS=<dir> -DCASE=<file>
#         -P run_case.cmake
# The case file sets ARGS (horovod-info's arguments), ENV (VAR=VALUE
# entries), EXIT (the expected status), EXPECT (regular expressions the
# output, stdout then stderr, must match), REJECT (ones it must not), and
# for JSON output JSON_PATHS ("config/digest": members stdout must parse to)
# with JSON_MATCHES (a regular expression for each member's value).
set(ARGS "")
set(ENV "")
set(EXPECT "")
set(REJECT "")
set(JSON_PATHS "")
set(JSON_MATCHES "")
include(${CASE})

# Only the case's HOROVOD_* variables: none leak in from the caller.
execute_process(COMMAND ${CMAKE_COMMAND} -E environment
  OUTPUT_VARIABLE caller_env)
string(REGEX MATCHALL "(^|\n)HOROVOD_[A-Za-z0-9_]*=" caller_vars "${caller_env}")
set(unset "")
foreach(var IN LISTS caller_vars)
  string(REGEX REPLACE "^\n?(.*)=$" "\\1" var "${var}")
  list(APPEND unset --unset=${var})
endforeach()

execute_process(
  COMMAND ${CMAKE_COMMAND} -E env ${unset} ${ENV} ${INFO} ${ARGS}
  RESULT_VARIABLE status
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  TIMEOUT 60)
set(output "${out}${err}")

set(failed "")
if(NOT "${status}" STREQUAL "${EXIT}")
  string(APPEND failed "exit status ${status}, expected ${EXIT}\n")
endif()
foreach(pattern IN LISTS EXPECT)
  if(NOT output MATCHES "${pattern}")
    string(APPEND failed "output does not match: ${pattern}\n")
  endif()
endforeach()
foreach(pattern IN LISTS REJECT)
  if(output MATCHES "${pattern}")
    string(APPEND failed "output matches what it must not: ${pattern}\n")
  endif()
endforeach()
foreach(path pattern IN ZIP_LISTS JSON_PATHS JSON_MATCHES)
  string(REPLACE "/" ";" members "${path}")
  string(JSON value ERROR_VARIABLE json_error GET "${out}" ${members})
  if(json_error)
    string(APPEND failed "JSON member ${path}: ${json_error}\n")
  elseif(NOT value MATCHES "${pattern}")
    string(APPEND failed "JSON member ${path} is '${value}', expected ${pattern}\n")
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "horovod-info ${ARGS}\n${failed}--- output ---\n${output}")
endif()
