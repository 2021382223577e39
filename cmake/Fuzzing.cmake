# SNOWID_BUILD_FUZZERS=ON builds the libFuzzer targets of tests/fuzz. It needs
# clang, and a build directory of its own (scripts/asan-build.sh configures
# ./build-asan with clang++ for the sanitizer pass and fuzzing): every target
# of that build is compiled with libFuzzer's coverage instrumentation and
# with AddressSanitizer + UndefinedBehaviorSanitizer, which this file turns
# on unless SNOWID_SANITIZE already names them. Include it before
# Sanitizers.cmake.
if(SNOWID_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR
      "SNOWID_BUILD_FUZZERS needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: configure a "
      "separate build directory with CXX=clang++, as scripts/asan-build.sh does")
  endif()
  if(NOT SNOWID_SANITIZE)
    set(SNOWID_SANITIZE "address;undefined")
  elseif(NOT SNOWID_SANITIZE STREQUAL "address;undefined")
    message(FATAL_ERROR "SNOWID_BUILD_FUZZERS runs under SNOWID_SANITIZE=\"address;undefined\" "
                        "only, not \"${SNOWID_SANITIZE}\"")
  endif()
  # Coverage feedback in all code; the fuzz targets link libFuzzer itself
  # (-fsanitize=fuzzer, tests/fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
