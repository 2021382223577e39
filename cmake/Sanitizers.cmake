# SNOWID_SANITIZE="address;undefined" or "thread" instruments every target.
if(SNOWID_SANITIZE)
  list(JOIN SNOWID_SANITIZE "," _snowid_sanitizers)
  add_compile_options(-fsanitize=${_snowid_sanitizers} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_snowid_sanitizers})
endif()
