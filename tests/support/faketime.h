// libfaketime for tests: a snowidd whose CLOCK_REALTIME is moved, either by a
// fixed offset from its start or by an offset the test changes while it runs.
//
// Injection (Debian's libfaketime 0.9.10, LD_PRELOAD):
// - A fixed offset: FAKETIME="-30" (seconds; "m", "h", "d" multiply, so
//   "-5ms" means five MINUTES, not milliseconds; fractions use '.').
// - A changing offset: FAKETIME_TIMESTAMP_FILE names a file holding one such
//   offset, and FAKETIME_NO_CACHE=1 makes every clock read re-read it (about
//   8 us a read). The file is replaced by rename, so a reader never sees it
//   empty (an unparsable value would make libfaketime exit the process).
//   The multi-threaded build (libfaketimeMT) is used here: it serialises its
//   clock reads, so a thread never sees an offset half-parsed by another.
// Always with FAKETIME_DONT_FAKE_MONOTONIC=1: the offset applies to
// CLOCK_REALTIME only, so timers and waits on the steady clock keep working.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "subprocess.h"

namespace snowid::test {

// The path of libfaketime (`multithreaded`: libfaketimeMT), or "" if it is
// not installed (or SNOWID_TEST_PRETEND_MISSING names `faketime`, missing.h).
std::string faketime_library(bool multithreaded = false);

// What a test that needs libfaketime and lacks it says (SNOWID_SKIP_MISSING).
constexpr const char* kFaketimeMissing = "libfaketime is not installed (Debian package faketime)";

// FAKETIME's text for an offset: "+0.005000", "-3600.000000" (seconds).
std::string faketime_offset(std::chrono::milliseconds offset);

// Environment for a process whose clock runs `offset` away from the real
// one for its whole life ({} if libfaketime is missing).
std::map<std::string, std::string> faketime_fixed_env(std::chrono::milliseconds offset);

// A clock offset a test moves while the faked process runs.
class FaketimeControl {
 public:
  FaketimeControl();  // offset 0
  FaketimeControl(const FaketimeControl&) = delete;
  FaketimeControl& operator=(const FaketimeControl&) = delete;

  bool available() const { return !library_.empty(); }
  // Environment for the faked process (LD_PRELOAD and the timestamp file).
  std::map<std::string, std::string> env() const;
  // Takes effect at the faked process's next clock read.
  void set_offset(std::chrono::milliseconds offset);

 private:
  TempDir dir_;
  std::string library_;
  std::string file_;
  int generation_ = 0;
};

}  // namespace snowid::test
