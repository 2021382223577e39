// A test program that dies (here: abort(), as a failed check or a sanitizer
// report would end it) takes its servers with it: orphan_guard.h kills the
// children still running, so none outlives the program that started it.
#include "orphan_guard.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "server_process.h"
#include "subprocess.h"

namespace snowid {
namespace {

// Where the child program writes the pids of what it started.
constexpr const char* kDirVariable = "ORPHAN_GUARD_TEST_DIR";

// Gone, or a zombie waiting for init to reap it: no longer running.
bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, name, state;
  if (!(stat >> pid_field >> name >> state)) return false;
  return state != "Z" && state != "X";
}

// Run only as the child of the test below (DISABLED_: never on its own).
TEST(OrphanGuardChild, DISABLED_StartsServersThenAborts) {
  const char* dir = std::getenv(kDirVariable);
  ASSERT_NE(dir, nullptr);
  test::ServerProcess server(SNOWIDD_PATH, {"--state-dir", std::string(dir) + "/state"});
  ASSERT_TRUE(server.started()) << server.log();
  test::BackgroundProcess sleeper({"/bin/sleep", "600"}, std::string(dir) + "/sleep.out");
  {
    std::ofstream pids(std::string(dir) + "/pids.tmp");
    pids << server.pid() << "\n" << sleeper.pid() << "\n";
  }
  std::rename((std::string(dir) + "/pids.tmp").c_str(), (std::string(dir) + "/pids").c_str());
  std::abort();
}

TEST(OrphanGuard, AnAbortedTestProgramLeavesNoServerRunning) {
  test::TempDir dir;
  const auto child = test::run_process(
      {"/proc/self/exe", "--gtest_also_run_disabled_tests", "--gtest_filter=OrphanGuardChild.*"},
      {{kDirVariable, dir.path()}}, std::chrono::seconds{60});
  // Killed by its abort (a sanitizer may report it as another fatal signal).
  EXPECT_NE(child.signal, 0) << child.out << child.err;
  std::ifstream pids(dir.file("pids"));
  pid_t server = 0, sleeper = 0;
  ASSERT_TRUE(pids >> server >> sleeper) << child.out << child.err;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while ((running(server) || running(sleeper)) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
  EXPECT_FALSE(running(server)) << "snowidd " << server << " outlived its test program";
  EXPECT_FALSE(running(sleeper)) << "sleep " << sleeper << " outlived its test program";
  // Whatever the outcome, nothing is left behind by this test.
  for (const pid_t pid : {server, sleeper}) {
    if (pid > 0 && running(pid)) ::kill(pid, SIGKILL);
  }
}

}  // namespace
}  // namespace snowid
