// The snowid command's exit codes, and the one way its subcommands report an
// error: one line on stderr.
#pragma once

#include <cstdio>

#include "snowid/error.h"

namespace snowid::cli {

inline constexpr int kExitFailure = 1;  // the work failed
inline constexpr int kExitUsage = 2;    // bad input

// Prints "snowid: MESSAGE" on stderr; returns kExitUsage for kInvalidArgument,
// else kExitFailure.
inline int report_error(const Error& error) {
  std::fprintf(stderr, "snowid: %s\n", error.message.c_str());
  return error.code == ErrorCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

}  // namespace snowid::cli
