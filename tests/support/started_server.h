// A snowidd for a test, its state in a directory of the test's: a start that
// fails is a test failure that shows the server's log. Header-only, for test
// programs (it uses GoogleTest).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "server_process.h"

namespace snowid::test {

inline std::unique_ptr<ServerProcess> start_server(const std::string& binary,
                                                   const std::string& state_dir,
                                                   std::vector<std::string> args = {}) {
  args.push_back("--state-dir");
  args.push_back(state_dir);
  auto server = std::make_unique<ServerProcess>(binary, args);
  EXPECT_TRUE(server->started()) << server->log();
  return server;
}

}  // namespace snowid::test
