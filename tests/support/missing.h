// What a test does when something it needs is missing from the machine (a
// tool, a server, a library such as libfaketime, a privilege, a resource
// limit): SNOWID_SKIP_MISSING(what) skips it, saying what is missing, and
// under CI (the environment variable CI is "true", as .ci/run is run) fails
// it instead, so that a machine that lacks something cannot pass for one
// that ran every test. Every GTEST_SKIP for a missing thing goes through it.
//
// SNOWID_TEST_PRETEND_MISSING lists, comma-separated, what the detection
// helpers report as missing although it is installed: `faketime`
// (faketime_library()), `postgres` (PostgresProcess::available()), `mariadb`
// (MariadbProcess::available()). It shows what a machine without them runs:
//
//   SNOWID_TEST_PRETEND_MISSING=faketime ctest -L chaos           # skips, visibly
//   CI=true SNOWID_TEST_PRETEND_MISSING=faketime ctest -L chaos   # fails, naming it
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

namespace snowid::test {

// True when the environment variable CI is "true".
inline bool running_in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string_view(ci) == "true";
}

// True when SNOWID_TEST_PRETEND_MISSING names `what` ("faketime", "postgres",
// "mariadb").
inline bool pretended_missing(std::string_view what) {
  const char* list = std::getenv("SNOWID_TEST_PRETEND_MISSING");
  if (list == nullptr) return false;
  std::istringstream names{std::string(list)};
  for (std::string name; std::getline(names, name, ',');) {
    if (name == what) return true;
  }
  return false;
}

}  // namespace snowid::test

// Ends the test (or the fixture's SetUp, or the helper it is called from):
// skipped, naming `what` (a string saying what is missing and what is left
// out), or failed under CI. Usable in any function returning void.
#define SNOWID_SKIP_MISSING(what)                                           \
  do {                                                                      \
    if (::snowid::test::running_in_ci()) {                                  \
      GTEST_FAIL() << (what) << " (CI=true: a test that cannot run fails)"; \
    }                                                                       \
    GTEST_SKIP() << (what);                                                 \
  } while (false)
