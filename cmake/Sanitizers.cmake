# SNOWID_SANITIZE="address;undefined" or "thread" instruments every target.
if(SNOWID_SANITIZE)
  list(JOIN SNOWID_SANITIZE "," _snowid_sanitizers)
  add_compile_options(-fsanitize=${_snowid_sanitizers} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_snowid_sanitizers})
  # GCC 12 reports false "may be used uninitialized" inside libstdc++ (<regex>,
  # std::function) once the code is instrumented; the normal build keeps it.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
endif()
