# One warning level for the whole tree.
function(horovod_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(HOROVOD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
