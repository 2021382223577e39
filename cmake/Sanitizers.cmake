# SNOWID_SANITIZE="address;undefined" or "thread" instruments every target.
if(SNOWID_SANITIZE)
  list(JOIN SNOWID_SANITIZE "," _snowid_sanitizers)
  add_compile_options(-fsanitize=${_snowid_sanitizers} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_snowid_sanitizers})
  # GCC 12 reports false "may be used uninitialized" inside libstdc++ (<regex>,
  # std::function) once the code is instrumented; the normal build keeps it.
  # It also warns that ThreadSanitizer does not model the atomic_thread_fence
  # Boost.Asio uses inside its handler invocation.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
    if("thread" IN_LIST SNOWID_SANITIZE)
      add_compile_options(-Wno-tsan)
    endif()
  endif()
endif()

# snowid_thrift_client(<target>): the target uses Apache Thrift's client
# transports. Thrift 0.17's TFramedTransport starts with a null read buffer,
# and the inline TBufferBase::readAll in its header computes `null + length`
# before it falls back to a real read: undefined behaviour in Thrift's own
# header, not ours, which UndefinedBehaviorSanitizer's pointer-overflow check
# stops at. Only that check is left out, and only in such targets.
function(snowid_thrift_client target)
  if("undefined" IN_LIST SNOWID_SANITIZE)
    target_compile_options(${target} PRIVATE -fno-sanitize=pointer-overflow)
  endif()
endfunction()
