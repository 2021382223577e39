// Misconfiguration: a second process pointed at the state directory of a
// snowidd that is serving under load. Whatever else differs (worker id, clock
// policy, the directory named through a symbolic link, the `snowid gen` CLI
// on the same state file), the second process must refuse to start (exit 1,
// naming the directory and the pid that holds it) without listening, and the
// first must keep serving without a refusal; its state survives a clean
// restart, which starts above every ID handed out.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <thread>

#include "chaos.h"
#include "faketime.h"
#include "missing.h"
#include "server_process.h"
#include "subprocess.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using test::Outcome;
using test::SteadyClock;

class StateDirChaos : public test::ChaosTest {};

TEST_F(StateDirChaos, SecondProcessOnTheStateDirectoryRefusesAndTheFirstServesOn) {
  scenario.record.scenario = "state_dir_shared";
  scenario.record.fault =
      "a second snowidd (same or other worker id and policy, or through a symlink) "
      "and `snowid gen` pointed at a serving node's state directory (its state file or "
      "another file in it)";
  scenario.record.injection =
      "the processes started with --state-dir of the running node, 4 times each";
  scenario.record.expected =
      "each second process exits 1 naming the directory and the holder's pid, never "
      "listens; the first serves on with no refusal";
  const std::string state = scenario.dir.file("state");
  std::filesystem::create_directories(state);
  std::filesystem::create_symlink(state, scenario.dir.file("alias"));

  test::NodeAddress node;
  auto first = std::make_unique<test::ServerProcess>(
      SNOWIDD_PATH, std::vector<std::string>{"--state-dir", state});
  ASSERT_TRUE(first->started()) << first->log();
  node.set(first->port(), first->grpc_port());
  auto load =
      std::make_unique<test::Load>(std::vector<test::NodeAddress*>{&node}, test::LoadOptions{});
  ASSERT_TRUE(load->wait_served({0}, 50, seconds{10}));
  const auto fault_start = SteadyClock::now();

  const std::string holder = "pid " + std::to_string(first->pid());
  const std::vector<std::vector<std::string>> intruders = {
      {SNOWIDD_PATH, "--state-dir", state},
      {SNOWIDD_PATH, "--state-dir", state, "--worker-id", "1", "--clock-policy", "reject"},
      {SNOWIDD_PATH, "--state-dir", scenario.dir.file("alias")},
      {SNOWID_CLI_PATH, "gen", "-n", "5", "--state-file", state + "/generator.state"},
      // Another file in the directory: before, it issued the node's IDs beside it.
      {SNOWID_CLI_PATH, "gen", "-n", "5", "--state-file", state + "/other.state"},
  };
  for (int round = 0; round < 4; ++round) {
    for (auto argv : intruders) {
      const bool server = argv[0] == SNOWIDD_PATH;
      if (server) argv.insert(argv.end(), {"--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"});
      const auto result = test::run_process(argv, {}, seconds{30});
      SCOPED_TRACE(argv[0] + " " + argv[1] + " " + argv[2]);
      EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
      EXPECT_NE(result.err.find("in use"), std::string::npos) << result.err;
      // The holder's pid is in the lock file of the state file it holds.
      if (argv.back() != state + "/other.state") {
        EXPECT_NE(result.err.find(holder), std::string::npos) << result.err;
      }
      if (server) {
        EXPECT_NE(result.err.find("state directory"), std::string::npos) << result.err;
        EXPECT_EQ(result.out.find("starting"), std::string::npos) << "it listened: " << result.out;
      } else {
        EXPECT_EQ(result.out, "") << "it issued IDs";
      }
    }
  }
  std::this_thread::sleep_for(milliseconds{300});
  const auto fault_end = SteadyClock::now();
  EXPECT_EQ(test::http_get(first->port(), "/readyz").status, 200);
  load->stop();
  EXPECT_EQ(load->unexpected(), "");
  EXPECT_EQ(load->refused(0) + load->failed(0), 0u) << "the first node was disturbed";
  const auto samples = load->samples();
  EXPECT_GT(test::count_sent(samples, Outcome::kServed, fault_start, fault_end), 10u);
  scenario.record.recovery_ms = test::recovery_time(samples, fault_start)->count();

  // The state the first node keeps is intact: a clean restart starts above
  // every ID handed out (each incarnation above the previous one).
  node.retire();
  first->signal(SIGTERM);
  ASSERT_EQ(first->wait(), 0) << first->log();
  auto again = std::make_unique<test::ServerProcess>(
      SNOWIDD_PATH, std::vector<std::string>{"--state-dir", state});
  ASSERT_TRUE(again->started()) << again->log();
  node.set(again->port(), again->grpc_port());
  test::LoadOptions after;
  after.requests = 20;
  test::Load second_load({&node}, after);
  second_load.wait();
  EXPECT_EQ(second_load.unexpected(), "");
  auto sources = load->sources();
  for (auto source : second_load.sources()) {
    source.name = "restarted-" + source.name;  // a file name of its own
    sources.push_back(std::move(source));
  }
  scenario.count(*load);
  scenario.count(second_load);
  scenario.check(sources, /*histories=*/true);
}

// Issue 22, item 11: the state directory put back from a copy taken during
// the load, and the node restarted with its clock 4 s behind its last ID,
// its audit log kept outside the directory. The audit log holds IDs above
// the restored mark: `snowid check --state-file` says so, and the node
// refuses to start (the audited IDs lie beyond max_drift above its clock),
// saying why; with its clock right it starts above them.
TEST_F(StateDirChaos, AStateDirectoryRestoredFromAnOlderCopyIsCaughtByTheAuditLog) {
  if (test::faketime_library().empty()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  scenario.describe(
      "state_dir_restored_from_older_copy",
      "the state directory replaced by a copy taken 1 s into the load, the clock 4 s behind the "
      "node's last ID at the restart",
      "copy of state_dir under load; SIGTERM after 3 more s; the copy put back; restart with "
      "FAKETIME set 4 s behind the stop, plus the time since; audit_log outside state_dir",
      "snowid check --audit --state-file fails naming the restore; the restart with the clock "
      "behind is refused, saying why; the one with the clock right starts above the audited "
      "IDs; 0 repeated IDs");
  const std::string state = scenario.dir.file("state");
  const std::string copy = scenario.dir.file("state-copy");
  const std::string audit_log = scenario.dir.file("audit.log");
  const std::vector<std::string> args = {"--state-dir", state, "--audit-log", audit_log};

  test::NodeAddress node;
  test::LoadOptions options;
  options.http_clients = 2;
  options.grpc_clients = 1;
  options.http_target = "/v1/ids?count=20&format=text";
  options.connection_loss_expected = true;
  test::Load load({&node}, options);
  auto first = std::make_unique<test::ServerProcess>(SNOWIDD_PATH, args);
  ASSERT_TRUE(first->started()) << first->log();
  EXPECT_EQ(first->log().find("lies inside state_dir"), std::string::npos) << first->log();
  node.set(first->port(), first->grpc_port());
  ASSERT_TRUE(load.wait_served({0}, 50, seconds{10}));
  std::this_thread::sleep_for(seconds{1});
  std::filesystem::copy(state, copy, std::filesystem::copy_options::recursive);
  std::this_thread::sleep_for(seconds{3});
  node.retire();
  first->signal(SIGTERM);
  ASSERT_EQ(first->wait(), 0) << first->log();
  const auto stopped = SteadyClock::now();
  std::filesystem::remove_all(state);
  std::filesystem::rename(copy, state);

  // The operator's check finds the restore before anything starts.
  const auto checked = test::run_process(
      {SNOWID_CLI_PATH, "check", "--audit", audit_log, "--state-file", state + "/generator.state"},
      {}, seconds{30});
  EXPECT_EQ(checked.exit_code, 1) << checked.out << checked.err;
  EXPECT_NE(checked.out.find("state file behind the audit logs"), std::string::npos) << checked.out;

  // Restarted with the clock 4 s behind the moment the node stopped (however
  // long the check took): the audited IDs lie up to 4 s above the clock,
  // less the start-up's own time, far beyond max_drift (1 s), so the
  // monotonic policy refuses.
  const auto since_stop = std::chrono::duration_cast<milliseconds>(SteadyClock::now() - stopped);
  auto behind = std::make_unique<test::ServerProcess>(
      SNOWIDD_PATH, args, test::faketime_fixed_env(-milliseconds{4000} - since_stop));
  if (behind->started()) {
    ADD_FAILURE() << "started with its clock behind its audited IDs: " << behind->log();
    behind->signal(SIGTERM);
  }
  EXPECT_EQ(behind->wait(), 1) << behind->log();
  EXPECT_NE(behind->log().find("restored from an older copy"), std::string::npos) << behind->log();
  EXPECT_NE(behind->log().find(audit_log), std::string::npos) << behind->log();

  // With the clock right it starts above every audited ID.
  auto right = std::make_unique<test::ServerProcess>(SNOWIDD_PATH, args);
  ASSERT_TRUE(right->started()) << right->log();
  node.set(right->port(), right->grpc_port());
  ASSERT_TRUE(load.wait_served(load.served_counts(), 50, seconds{10}));
  load.stop();
  EXPECT_EQ(load.unexpected(), "");
  scenario.count(load);
  scenario.check(load.sources(), /*histories=*/true);
}

// The node warns when its audit log lies inside its state directory, where a
// restore of the directory would put back an older audit log with it.
TEST_F(StateDirChaos, AnAuditLogInsideTheStateDirectoryIsWarnedAbout) {
  scenario.describe("audit_log_inside_state_dir", "audit_log inside state_dir",
                    "--audit-log STATE_DIR/audit.log", "a warning at start naming both");
  const std::string state = scenario.dir.file("state");
  std::filesystem::create_directories(state);
  test::ServerProcess server(SNOWIDD_PATH,
                             {"--state-dir", state, "--audit-log", state + "/audit.log"});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_NE(server.log().find(" warning audit_log " + state + "/audit.log lies inside state_dir"),
            std::string::npos)
      << server.log();
}

}  // namespace
}  // namespace snowid
