// What several fuzz targets share: a scratch directory, real snowidd
// services built as snowidd's main() builds them, and a check that issued
// numbers keep increasing.
//
// Everything here is created on first use and kept until the process exits
// (the scratch directory is removed then). Fuzz targets run inputs on one
// thread; these helpers are not meant for more.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "service.h"

namespace snowid::fuzz {

// Stops the process with a message that libFuzzer reports as a crash,
// keeping the input that caused it. For broken expectations, not for input
// the code under test rightly refuses.
#define SNOWID_FUZZ_CHECK(condition)                                                           \
  do {                                                                                         \
    if (!(condition)) {                                                                        \
      std::fprintf(stderr, "%s:%d: expectation failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                            \
    }                                                                                          \
  } while (false)

// A directory of this process's own under $TMPDIR (or /tmp), removed at exit.
const std::filesystem::path& scratch_directory();

// The bearer token the guarded service requires, and the segment tag the
// open service's store holds.
inline constexpr std::string_view kBearerToken = "fuzz-token";
inline constexpr std::string_view kSegmentTag = "orders";

enum class ServiceKind {
  // Twitter layout, worker 3 of datacenter 1, max_batch 10000, no bearer
  // token, segment mode on a SQLite file holding the tag "orders".
  kOpen,
  // Sonyflake layout, worker 7, max_batch 100, bearer token kBearerToken,
  // segment mode off.
  kGuarded,
};

// The service of that kind, started on first use; aborts if it cannot be.
server::IdService& service(ServiceKind kind);

// Remembers the last number issued by one generator (or one segment tag)
// and checks that every later one is greater: the uniqueness the service
// promises, seen from outside.
class IncreasingCheck {
 public:
  void next(std::int64_t number) {
    SNOWID_FUZZ_CHECK(number > last_);
    last_ = number;
  }

 private:
  std::int64_t last_ = -1;
};

// Calls `check.next()` with every run of decimal digits in `text` (an ID
// response in JSON or as text lines), in order, and returns how many there were.
std::size_t check_numbers(std::string_view text, IncreasingCheck& check);

}  // namespace snowid::fuzz
