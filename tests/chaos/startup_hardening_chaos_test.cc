// What snowidd does with a start-up that would otherwise run a fleet as the
// wrong node or fail every request later (issue "Hardening", items 2, 4, 10,
// 21 and 22): a config path that is no file, options that have no meaning in
// the chosen mode, a StatefulSet ordinal in static mode, layouts that cannot
// issue an ID now, --check-config output that must load back, and
// scripts/run.sh letting the user's flags win.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "chaos.h"
#include "faketime.h"
#include "missing.h"
#include "server_process.h"
#include "subprocess.h"

namespace snowid {
namespace {

class StartupHardening : public test::ChaosTest {
 protected:
  // snowidd with `args` on free ports and a state directory of the scenario's.
  test::ProcessResult run_snowidd(std::vector<std::string> args) {
    args.insert(args.begin(), {SNOWIDD_PATH, "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0",
                               "--state-dir", scenario.dir.file("state")});
    return test::run_process(args);
  }

  // Expects a refusal: exit 2, one line on stderr holding every one of `words`,
  // and no port opened.
  void expect_refused(const test::ProcessResult& result, const std::vector<std::string>& words) {
    EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
    EXPECT_EQ(test::split_lines(result.err).size(), 1u) << result.err;
    for (const auto& word : words) {
      EXPECT_NE(result.err.find(word), std::string::npos) << "'" << word << "' in " << result.err;
    }
    EXPECT_EQ(result.out.find("starting"), std::string::npos) << "it listened: " << result.out;
    ++scenario.record.refused;
    ++scenario.record.answers;
  }
};

TEST_F(StartupHardening, ConfigPathThatIsNoFileStopsTheStart) {
  scenario.describe(
      "hardening/2/config_path_not_a_file",
      "--config names a directory (a ConfigMap mounted at the file's path), a dangling "
      "symbolic link, a missing file; or an empty file",
      "snowidd --config DIR | LINK | MISSING | EMPTY",
      "exit 2 with one line naming the path and why; an empty file starts with a warning "
      "that it sets no option");
  const std::string dir = scenario.dir.file("configmap");
  std::filesystem::create_directories(dir);
  const std::string link = scenario.dir.file("link.toml");
  std::filesystem::create_symlink(scenario.dir.file("gone.toml"), link);
  expect_refused(run_snowidd({"--config", dir}), {dir, "a directory"});
  expect_refused(run_snowidd({"--config", link}), {link, "does not exist"});
  expect_refused(run_snowidd({"--config", scenario.dir.file("missing.toml")}),
                 {"missing.toml", "no such file"});
  const std::string empty = scenario.dir.file("empty.toml");
  std::ofstream(empty).flush();
  test::ServerProcess server(SNOWIDD_PATH,
                             {"--config", empty, "--state-dir", scenario.dir.file("state")});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_NE(server.log().find("sets no option"), std::string::npos) << server.log();
}

TEST_F(StartupHardening, OptionsWithoutMeaningAreRefusedAndTheOrdinalWorksInStaticMode) {
  scenario.describe(
      "hardening/4/options_without_meaning",
      "options set in a mode where they mean nothing (node_id_from_hostname on a host "
      "without an ordinal, etcd options in static mode, max_drift_ms under reject), and a "
      "StatefulSet pod in static mode",
      "snowidd with each option, and --check-config; snowidd in a UTS namespace whose "
      "hostname is snowid-5 with --node-id-from-hostname true",
      "exit 2 naming the option and where it applies; the pod snowid-5 serves as node 5");
  expect_refused(run_snowidd({"--lease-ttl-s", "30"}), {"lease_ttl_s", "coordinator = \"etcd\""});
  expect_refused(run_snowidd({"--etcd-endpoints", "10.0.0.5:2379", "--check-config"}),
                 {"etcd_endpoints"});
  expect_refused(run_snowidd({"--clock-policy", "reject", "--max-drift-ms", "5000"}),
                 {"max_drift_ms", "monotonic"});
  expect_refused(run_snowidd({"--segment-store", "off", "--segment-max-step", "10"}),
                 {"segment_max_step"});
  // A hostname without an ordinal (this machine's, unless it is a pod's).
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  if (!std::isdigit(static_cast<unsigned char>(std::string(host).back()))) {
    expect_refused(run_snowidd({"--node-id-from-hostname", "true", "--check-config"}),
                   {"node_id_from_hostname", host});
  }
  if (test::run_process({"/usr/bin/unshare", "--uts", "/bin/true"}).exit_code != 0) {
    SNOWID_SKIP_MISSING("no UTS namespace here (needs root): the StatefulSet part is not run");
  }
  test::ServerProcess pod(
      "/usr/bin/unshare",
      {"--uts", "/bin/sh", "-c", "hostname snowid-5 && exec \"$0\" \"$@\"", SNOWIDD_PATH,
       "--node-id-from-hostname", "true", "--state-dir", scenario.dir.file("pod")});
  ASSERT_TRUE(pod.started()) << pod.log();
  const auto info = nlohmann::json::parse(test::http_get(pod.port(), "/v1/info").body);
  EXPECT_EQ(info["worker_id"], 5);
  EXPECT_EQ(info["datacenter_id"], 0);
  ++scenario.record.answers;
}

TEST_F(StartupHardening, PeersGuardStaticModeAgainstASharedNodeId) {
  scenario.describe(
      "hardening/5/static_peers",
      "static mode: a node configured with the node id a running peer already serves, or "
      "with a clock far from the peer's",
      "node A (worker 1); node B --worker-id 1 --peers A; node C --worker-id 2 --peers A; "
      "node D --worker-id 3 with libfaketime +20 s --peers A; node E --peers A and a dead "
      "port",
      "B exits 1 naming A and the node id; C starts; D exits 1 naming the clock; E starts "
      "with a warning about the dead peer");
  test::ServerProcess a(SNOWIDD_PATH, {"--worker-id", "1", "--state-dir", scenario.dir.file("a")});
  ASSERT_TRUE(a.started()) << a.log();
  const std::string peer = "127.0.0.1:" + std::to_string(a.port());
  auto same = run_snowidd({"--worker-id", "1", "--peers", peer});
  EXPECT_EQ(same.exit_code, 1) << same.err;
  EXPECT_NE(same.err.find("peer " + peer + " already serves as datacenter 0 worker 1"),
            std::string::npos)
      << same.err;
  EXPECT_EQ(same.out.find("starting"), std::string::npos) << same.out;
  ++scenario.record.refused;
  test::ServerProcess c(
      SNOWIDD_PATH, {"--worker-id", "2", "--peers", peer, "--state-dir", scenario.dir.file("c")});
  EXPECT_TRUE(c.started()) << c.log();
  EXPECT_NE(c.log().find("peer " + peer + " checked"), std::string::npos) << c.log();
  const std::string faketime = test::faketime_library();
  if (!faketime.empty()) {
    auto skewed = test::run_process(
        {SNOWIDD_PATH, "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--state-dir",
         scenario.dir.file("d"), "--worker-id", "3", "--peers", peer},
        {{"LD_PRELOAD", faketime}, {"FAKETIME", "+20"}, {"FAKETIME_DONT_FAKE_MONOTONIC", "1"}});
    EXPECT_EQ(skewed.exit_code, 1) << skewed.err;
    EXPECT_NE(skewed.err.find("ahead of peer " + peer), std::string::npos) << skewed.err;
    ++scenario.record.refused;
  }
  const int dead = test::connect_loopback(1) >= 0 ? 2 : 1;  // a port nothing listens on
  test::ServerProcess e(SNOWIDD_PATH,
                        {"--worker-id", "4", "--peers", peer + ",127.0.0.1:" + std::to_string(dead),
                         "--state-dir", scenario.dir.file("e")});
  EXPECT_TRUE(e.started()) << e.log();
  EXPECT_NE(e.log().find("not checked"), std::string::npos) << e.log();
  scenario.record.answers += 4;
  if (faketime.empty()) {
    SNOWID_SKIP_MISSING(std::string(test::kFaketimeMissing) +
                        ": node D, whose clock runs 20 s ahead, was left out (the rest ran)");
  }
}

TEST_F(StartupHardening, UnusableLayoutsStopTheStart) {
  scenario.describe(
      "hardening/10/unusable_layout",
      "a layout that cannot issue an ID now: an epoch in the future, the Baidu preset "
      "whose 28-bit seconds ran out in 2024",
      "snowidd --epoch 2999-01-01T00:00:00Z; snowidd --preset baidu",
      "exit 2 with the same one-line message as `snowid gen`; never a 500 later");
  const auto future = run_snowidd({"--epoch", "2999-01-01T00:00:00Z"});
  expect_refused(future, {"in the future"});
  const auto baidu = run_snowidd({"--preset", "baidu"});
  expect_refused(baidu, {"overflowed"});
  const auto gen = test::run_process({SNOWID_CLI_PATH, "gen", "--preset", "baidu"});
  EXPECT_EQ(gen.exit_code, 2);
  EXPECT_EQ(gen.err.substr(gen.err.find(':')), baidu.err.substr(baidu.err.find(':')))
      << "snowid gen and snowidd say it differently";
}

TEST_F(StartupHardening, CheckConfigOutputLoadsBack) {
  scenario.describe("hardening/21/check_config_round_trip",
                    "--check-config prints a configuration snowidd then refuses",
                    "snowidd --check-config [--preset sonyflake ...] > FILE; snowidd --config FILE "
                    "--check-config",
                    "the output loads back and prints the same again, for the defaults and others");
  for (const std::vector<std::string>& flags : std::vector<std::vector<std::string>>{
           {},
           {"--preset", "sonyflake", "--worker-id", "9"},
           {"--coordinator", "etcd", "--cluster", "prod", "--clock-policy", "wait"}}) {
    auto first = test::run_process([&] {
      std::vector<std::string> argv{SNOWIDD_PATH, "--check-config"};
      argv.insert(argv.end(), flags.begin(), flags.end());
      return argv;
    }());
    ASSERT_EQ(first.exit_code, 0) << first.err;
    const std::string file = scenario.dir.file("effective.toml");
    std::ofstream(file, std::ios::trunc) << first.out;
    auto again = test::run_process({SNOWIDD_PATH, "--config", file, "--check-config"});
    ASSERT_EQ(again.exit_code, 0) << again.err << first.out;
    EXPECT_EQ(again.out, first.out);
    ++scenario.record.answers;
  }
}

// scripts/run.sh as a user runs it, with the build replaced by the binary
// under test (a copy of the script in a scratch repository layout).
TEST_F(StartupHardening, RunScriptLetsTheUsersFlagsWin) {
  scenario.describe("hardening/22/run_sh_user_flags",
                    "scripts/run.sh --state-dir X failed with 'At Most 1 required but received 2'",
                    "the real scripts/run.sh in a scratch layout whose install and build steps do "
                    "nothing and whose build/src/server/snowidd is the binary under test",
                    "--state-dir and --config given to run.sh take effect");
  const std::string root = scenario.dir.file("repo");
  std::filesystem::create_directories(root + "/scripts");
  std::filesystem::create_directories(root + "/build/src/server");
  std::filesystem::copy_file(SNOWID_SOURCE_DIR "/scripts/run.sh", root + "/scripts/run.sh");
  for (const char* step : {"install-deps.sh", "build.sh"}) {
    std::ofstream(root + "/scripts/" + step) << "#!/bin/sh\nexit 0\n";
    std::filesystem::permissions(root + "/scripts/" + step, std::filesystem::perms::owner_all);
  }
  std::filesystem::create_symlink(SNOWIDD_PATH, root + "/build/src/server/snowidd");
  const std::string state = scenario.dir.file("mine");
  auto result = test::run_process(
      {"/bin/bash", root + "/scripts/run.sh", "--state-dir", state, "--check-config"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("state_dir = \"" + state + "\""), std::string::npos) << result.out;
  ++scenario.record.answers;
}

}  // namespace
}  // namespace snowid
