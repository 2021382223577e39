// The fixture every abuse test starts from: a snowidd on free loopback ports
// with a temporary state directory. At the end of each test the server is
// stopped with SIGTERM and must exit 0: in the AddressSanitizer build, a leak
// (LeakSanitizer) or any sanitizer report makes the exit code non-zero, so
// every attack is also a leak check. ServerProcess alone would SIGKILL it
// and hide both.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "abuse_support.h"
#include "server_process.h"
#include "subprocess.h"

namespace snowid::test {

class AbuseTest : public ::testing::Test {
 protected:
  // Starts `binary` (snowidd, or a wrapper such as prlimit given snowidd's
  // path among `args`) with `args`.
  void start_with(const std::string& binary, std::vector<std::string> args) {
    args.push_back("--state-dir");
    args.push_back(dir_.file("state"));
    server_ = std::make_unique<ServerProcess>(binary, args);
    ASSERT_TRUE(server_->started()) << server_->log();
  }
  void start(std::vector<std::string> args = {}) { start_with(SNOWIDD_PATH, std::move(args)); }

  void TearDown() override {
    if (!server_ || !server_->started()) return;
    server_->signal(SIGTERM);
    EXPECT_EQ(server_->wait(std::chrono::seconds{20}), 0) << "snowidd did not stop cleanly:\n"
                                                          << server_->log();
  }

  int port() const { return server_->port(); }
  ServerProcess& server() { return *server_; }

 private:
  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
};

}  // namespace snowid::test
