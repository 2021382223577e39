// SKIP_UNDER_THREAD_SANITIZER(why): skips a test in the ThreadSanitizer
// build, which slows a process and gRPC several times over, for a test whose
// bounds or ordering only hold at normal speed; such tests still run in the
// normal and AddressSanitizer builds.
#pragma once

#include <gtest/gtest.h>

#if defined(__SANITIZE_THREAD__)
#define SKIP_UNDER_THREAD_SANITIZER(why) GTEST_SKIP() << why << " under ThreadSanitizer"
#else
// `why` is still read, so that a reason kept in a constant is used in every build.
#define SKIP_UNDER_THREAD_SANITIZER(why) (void)(why)
#endif
