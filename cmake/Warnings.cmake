# Every snowid target calls snowid_warnings(); CI turns the warnings into errors.
add_library(snowid_warnings INTERFACE)
target_compile_options(snowid_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
  -Wimplicit-fallthrough)
if(SNOWID_WERROR)
  target_compile_options(snowid_warnings INTERFACE -Werror)
endif()

# Build-only: an installed static library does not carry them to consumers.
function(snowid_warnings target)
  target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:snowid_warnings>)
endfunction()
