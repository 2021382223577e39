// What an operator, a tool or a volume can do to a node's persisted state,
// and what must follow (issue "Hardening", items 0, 1, 3, 6, 8 and 15):
//
//   back-to-back `snowid gen` runs without a state file never overlap;
//   a second snowidd never issues from a state directory a live one uses,
//   whatever happens to the files in it, and a live snowidd whose lock file,
//   state file or directory is removed, replaced or moved stops issuing
//   within a bound (503, /readyz 503, a log line naming the cause);
//   a dangling symbolic link as the state file stops the start;
//   a forward glitch of the clock with nothing issued costs nothing at the
//   next start; IDs really issued ahead are refused at restart unless the
//   operator continues above the mark or lowers it with `snowid state lower`
//   to what the audit log proves;
//   an audit log that cannot be written makes /readyz say so;
//   a forged state file gets a message an operator can act on.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
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

// A node that lost its state stops issuing within this (its upkeep runs every
// 100 ms; the rest is slack for a loaded machine).
constexpr milliseconds kStopBound{1000};

class StateHardening : public test::ChaosTest {
 protected:
  // A snowidd on `state` whose clients' IDs are kept in `load`.
  std::unique_ptr<test::ServerProcess> start(const std::string& state,
                                             std::vector<std::string> extra = {},
                                             const std::map<std::string, std::string>& env = {}) {
    extra.insert(extra.begin(), {"--state-dir", state});
    return std::make_unique<test::ServerProcess>(SNOWIDD_PATH, extra, env);
  }

  // Clients taking IDs from `node` until stopped (connections may be lost).
  static std::unique_ptr<test::Load> load_on(test::NodeAddress& node) {
    test::LoadOptions options;
    options.connection_loss_expected = true;
    return std::make_unique<test::Load>(std::vector<test::NodeAddress*>{&node}, options);
  }

  // 20 answers per client from `node`'s current incarnation, counted, their
  // sources added to `sources` with `prefix` before their names.
  void serve_a_little(test::NodeAddress& node, const std::string& prefix,
                      std::vector<test::Source>& sources) {
    test::LoadOptions few;
    few.requests = 20;
    test::Load load({&node}, few);
    load.wait();
    EXPECT_EQ(load.unexpected(), "");
    scenario.count(load);
    for (auto source : load.sources()) {
      source.name = prefix + source.name;
      sources.push_back(std::move(source));
    }
  }

  // Waits until `node` refuses /v1/id and /readyz with 503; the time it took.
  static std::optional<milliseconds> time_until_refusing(int port) {
    const auto began = SteadyClock::now();
    const bool stopped = test::wait_until(
        [&] {
          return test::http_get(port, "/v1/id").status == 503 &&
                 test::http_get(port, "/readyz").status == 503;
        },
        seconds{5});
    if (!stopped) return std::nullopt;
    return std::chrono::duration_cast<milliseconds>(SteadyClock::now() - began);
  }
  // Starts a second snowidd on `state` `times` times: each must exit 1
  // ("in use") without listening.
  static void second_snowidd_is_refused(const std::string& state, int times) {
    for (int i = 0; i < times; ++i) {
      auto second = test::run_process(
          {SNOWIDD_PATH, "--state-dir", state, "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"},
          {}, seconds{20});
      EXPECT_EQ(second.exit_code, 1) << second.out << second.err;
      EXPECT_NE(second.err.find("in use"), std::string::npos) << second.err;
      EXPECT_EQ(second.out.find("starting"), std::string::npos) << "it listened: " << second.out;
    }
  }

  // True once `node` refuses within kStopBound; records the time it took.
  bool stops_within_bound(test::ServerProcess& node) {
    const auto stopped = time_until_refusing(node.port());
    EXPECT_TRUE(stopped.has_value()) << node.log();
    if (!stopped) return false;
    EXPECT_LE(*stopped, kStopBound);
    scenario.record.recovery_ms = stopped->count();
    return true;
  }
};

// Item 0: `snowid gen` without a state file runs ahead of the clock under
// the monotonic policy; the next run starts from the clock.
TEST_F(StateHardening, BackToBackGenRunsNeverOverlap) {
  scenario.describe(
      "hardening/0/back_to_back_gen_runs",
      "`snowid gen` run again right after itself, default flags (no state file)",
      "5 x `snowid gen -n 200000`, then `gen -n 1000000` and `gen -n 1000`",
      "every run's IDs lie above the previous run's: 1,001,000 + 1,000,000 distinct IDs");
  std::vector<std::string> files;
  for (int run = 0; run < 5; ++run) {
    auto result = test::run_process({SNOWID_CLI_PATH, "gen", "-n", "200000"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    files.push_back(scenario.dir.file("gen" + std::to_string(run) + ".ids"));
    std::ofstream(files.back()) << result.out;
  }
  for (const char* count : {"1000000", "1000"}) {
    auto result = test::run_process({SNOWID_CLI_PATH, "gen", "-n", count});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    files.push_back(scenario.dir.file(std::string("gen-") + count + ".ids"));
    std::ofstream(files.back()) << result.out;
  }
  // All runs' IDs in the order they were printed: they must strictly
  // increase as a whole, which no repeat across runs survives.
  std::string all;
  for (const auto& file : files) all += test::read_file(file);
  const std::string all_runs = scenario.dir.file("all-runs.ids");
  std::ofstream(all_runs) << all;
  const test::IdCheck checked = test::check_id_files({all_runs});
  scenario.record.ids_checked = checked.ids_checked;
  scenario.record.duplicates = checked.duplicates;
  scenario.record.order_violations = checked.order_violations;
  EXPECT_TRUE(checked.clean()) << checked.problems;
  EXPECT_EQ(checked.ids_checked, 2'001'000u);
}

// Item 1: the lock file removed under a serving node (a tmpfiles or "stale
// lock" clean-up), then a second snowidd on the directory, under load.
TEST_F(StateHardening, RemovedLockFileLetsNoSecondProcessInAndStopsTheFirst) {
  scenario.describe(
      "hardening/1/lock_file_removed",
      "generator.state.lock removed under a serving node, then a second snowidd started "
      "on the same state directory",
      "rm of the lock file while 2 HTTP and 1 gRPC clients take IDs; second snowidd 3 times",
      "the second exits 1 (directory locked) without listening; the first stops issuing "
      "within 1 s (503, /readyz 503, log names the lock file); 0 duplicates; a restart "
      "serves again above every ID");
  const std::string state = scenario.dir.file("state");
  test::NodeAddress node;
  auto first = start(state);
  ASSERT_TRUE(first->started()) << first->log();
  node.set(first->port(), first->grpc_port());
  auto load = load_on(node);
  ASSERT_TRUE(load->wait_served({0}, 50, seconds{10}));

  std::filesystem::remove(state + "/generator.state.lock");
  second_snowidd_is_refused(state, 3);
  ASSERT_TRUE(stops_within_bound(*first));
  EXPECT_NE(first->log().find("generator.state.lock was removed or replaced"), std::string::npos)
      << first->log();
  const auto body = test::http_get(first->port(), "/readyz").body;
  EXPECT_NE(body.find("lock file"), std::string::npos) << body;

  node.retire();
  load->stop();
  first->signal(SIGTERM);
  EXPECT_EQ(first->wait(), 1) << "a node that lost its state cannot write its exact mark";
  auto again = start(state);
  ASSERT_TRUE(again->started()) << again->log();
  node.set(again->port(), again->grpc_port());
  scenario.count(*load);
  auto sources = load->sources();
  serve_a_little(node, "restarted-", sources);
  scenario.check(sources, /*histories=*/true);
}

// Item 1: the state file or the whole directory replaced under a serving node.
TEST_F(StateHardening, ReplacedStateOrDirectoryStopsTheNode) {
  scenario.describe(
      "hardening/1/state_replaced_or_moved",
      "the state file replaced by an older copy, edited in place, removed; the state "
      "directory removed, or moved away and a new one put in its place",
      "cp + mv over generator.state; cp in place; rm; rm -rf of the directory; mv of the "
      "directory + mkdir; each under load on a fresh node",
      "the node stops issuing within 1 s each time, saying why; 0 duplicates");
  struct Case {
    const char* name;
    std::function<void(const std::string&)> act;
    const char* logged;
  };
  const std::vector<Case> cases = {
      {"older copy renamed over",
       [](const std::string& state) {
         std::filesystem::copy_file(state + "/old", state + "/copy");
         std::filesystem::rename(state + "/copy", state + "/generator.state");
       },
       "removed or replaced by another writer"},
      {"older copy written in place",
       [](const std::string& state) {
         std::ofstream(state + "/generator.state", std::ios::trunc)
             << test::read_file(state + "/old");
       },
       "modified by another writer"},
      {"removed",
       [](const std::string& state) { std::filesystem::remove(state + "/generator.state"); },
       "removed or replaced"},
      {"directory removed",
       [](const std::string& state) { std::filesystem::remove_all(state); },
       "directory was removed, renamed, replaced or unmounted"},
      {"directory moved",
       [this](const std::string& state) {
         std::filesystem::rename(state, scenario.dir.file("moved"));
         std::filesystem::create_directory(state);
       },
       "directory was removed, renamed, replaced or unmounted"},
  };
  std::vector<test::Source> sources;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    const std::string state = scenario.dir.file("state" + std::to_string(i));
    test::NodeAddress node;
    auto server = start(state);
    ASSERT_TRUE(server->started()) << server->log();
    node.set(server->port(), server->grpc_port());
    std::filesystem::copy_file(state + "/generator.state", state + "/old");
    std::this_thread::sleep_for(milliseconds{700});  // the mark moves on past the copy
    auto load_ptr = load_on(node);
    test::Load& load = *load_ptr;
    ASSERT_TRUE(load.wait_served({0}, 50, seconds{10}));
    cases[i].act(state);
    const auto stopped = time_until_refusing(server->port());
    ASSERT_TRUE(stopped.has_value()) << server->log();
    EXPECT_LE(*stopped, kStopBound);
    scenario.record.recovery_ms =
        std::max<long long>(scenario.record.recovery_ms.value_or(0), stopped->count());
    EXPECT_NE(server->log().find(cases[i].logged), std::string::npos) << server->log();
    load.stop();
    EXPECT_EQ(load.unexpected(), "");
    scenario.count(load);
    for (auto source : load.sources()) {
      source.name = "case" + std::to_string(i) + "-" + source.name;
      sources.push_back(std::move(source));
    }
  }
  scenario.check(sources);
}

// Item 1: the state file is a link into a volume, and under a serving node
// the link is pointed at a copy of it on another volume (a volume swapped, a
// backup restored beside it). Before, the node went on writing the file it
// had opened and a second snowidd on the same state directory started from
// the copy: two processes with one node id, issuing the same IDs.
TEST_F(StateHardening, RepointedStateLinkStopsTheNodeAndLetsNoSecondIn) {
  scenario.describe(
      "hardening/1/state_link_repointed",
      "generator.state is a symbolic link into a volume; under a serving node it is pointed "
      "at a copy of the file on another volume, then a second snowidd is started on the same "
      "state directory",
      "ln -s VOLUME1/generator.state STATE/generator.state, snowidd; under load, cp to "
      "VOLUME2 and rename a new link to VOLUME2/generator.state over the old one; a second "
      "snowidd 2 times",
      "the second exits 1 (directory in use) without listening; the first stops issuing "
      "within 1 s (503, /readyz 503, the log names the link); 0 duplicates");
  const std::string state = scenario.dir.file("state");
  const std::string volume1 = scenario.dir.file("volume1");
  const std::string volume2 = scenario.dir.file("volume2");
  {
    auto seed = start(volume1);  // writes VOLUME1/generator.state
    ASSERT_TRUE(seed->started()) << seed->log();
    seed->signal(SIGTERM);
    ASSERT_EQ(seed->wait(), 0) << seed->log();
  }
  std::filesystem::create_directories(state);
  std::filesystem::create_directories(volume2);
  std::filesystem::create_symlink(volume1 + "/generator.state", state + "/generator.state");
  test::NodeAddress node;
  auto first = start(state);
  ASSERT_TRUE(first->started()) << first->log();
  node.set(first->port(), first->grpc_port());
  auto load = load_on(node);
  ASSERT_TRUE(load->wait_served({0}, 50, seconds{10}));

  std::filesystem::copy_file(volume1 + "/generator.state", volume2 + "/generator.state");
  std::filesystem::create_symlink(volume2 + "/generator.state", state + "/new-link");
  std::filesystem::rename(state + "/new-link", state + "/generator.state");
  second_snowidd_is_refused(state, 2);
  ASSERT_TRUE(stops_within_bound(*first));
  EXPECT_NE(first->log().find("no longer leads to this file"), std::string::npos) << first->log();
  node.retire();
  load->stop();
  EXPECT_EQ(load->unexpected(), "");
  scenario.count(*load);
  first->signal(SIGTERM);
  EXPECT_EQ(first->wait(), 1) << "a node that lost its state cannot write its exact mark";
  scenario.check(load->sources());
}

// Item 3: an unmounted state volume leaves a dangling link where the state
// file was; that is not a first start.
TEST_F(StateHardening, DanglingStateLinkStopsTheStart) {
  scenario.describe(
      "hardening/3/dangling_state_link",
      "generator.state is a symbolic link to a file that does not exist (unmounted volume)",
      "ln -s /missing-volume/generator.state STATE/generator.state, then snowidd",
      "exit 1 naming the path; the link is left as it was; no port is opened");
  const std::string state = scenario.dir.file("state");
  std::filesystem::create_directories(state);
  std::filesystem::create_symlink(scenario.dir.file("volume/generator.state"),
                                  state + "/generator.state");
  auto result = test::run_process(
      {SNOWIDD_PATH, "--state-dir", state, "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_NE(result.err.find(state + "/generator.state"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("does not exist"), std::string::npos) << result.err;
  EXPECT_EQ(result.out.find("starting"), std::string::npos) << result.out;
  EXPECT_TRUE(std::filesystem::is_symlink(state + "/generator.state"));
}

// Item 6: a forward glitch of the clock while nothing is issued, then a
// crash: the restart must not be held up by it, under every policy.
TEST_F(StateHardening, ForwardGlitchWithoutIssuanceCostsNothingAtRestart) {
  scenario.describe(
      "hardening/6/forward_glitch_then_kill9",
      "the clock jumps 1 h ahead for 1 s while no request comes, then the node is killed",
      "libfaketime offset +1 h for 1 s, idle clients; SIGKILL; restart at once, under "
      "reject, wait and monotonic",
      "every restart serves within 4 s (reject: the usual reserve_ahead gap, <= 0.5 s); the "
      "mark stays below now + 1 s; IDs after the restart lie above those before");
  test::FaketimeControl clock;
  if (!clock.available()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  std::vector<test::Source> sources;
  for (const char* policy : {"reject", "wait", "monotonic"}) {
    SCOPED_TRACE(policy);
    const std::string state = scenario.dir.file(std::string("state-") + policy);
    clock.set_offset(milliseconds{0});
    test::NodeAddress node;
    auto server = start(state, {"--clock-policy", policy}, clock.env());
    ASSERT_TRUE(server->started()) << server->log();
    node.set(server->port(), server->grpc_port());
    auto load_ptr = load_on(node);
    test::Load& load = *load_ptr;
    ASSERT_TRUE(load.wait_served({0}, 50, seconds{10}));
    load.pause(true);
    std::this_thread::sleep_for(milliseconds{100});
    clock.set_offset(std::chrono::hours{1});
    std::this_thread::sleep_for(seconds{1});
    clock.set_offset(milliseconds{0});
    std::this_thread::sleep_for(milliseconds{300});
    const double mark = test::metric(server->port(), "snowid_high_water_timestamp_seconds");
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    EXPECT_LT(mark, now + 1.0) << "the glitch moved the mark";
    node.retire();
    server->signal(SIGKILL);
    server->wait();
    const auto restart_began = SteadyClock::now();
    std::unique_ptr<test::ServerProcess> again;
    while (!(again = start(state, {"--clock-policy", policy}))->started() &&
           SteadyClock::now() - restart_began < seconds{5}) {
      std::this_thread::sleep_for(milliseconds{100});
    }
    ASSERT_TRUE(again->started()) << again->log();
    const auto restart_ms =
        std::chrono::duration_cast<milliseconds>(SteadyClock::now() - restart_began).count();
    // A poisoned mark would refuse for the hour of the glitch; a process start
    // on a loaded 2-core machine takes up to about 2 s.
    EXPECT_LT(restart_ms, 4000);
    scenario.record.recovery_ms =
        std::max<long long>(scenario.record.recovery_ms.value_or(0), restart_ms);
    node.set(again->port(), again->grpc_port());
    test::LoadOptions after;
    after.requests = 20;
    test::Load second({&node}, after);
    second.wait();
    load.stop();
    EXPECT_EQ(second.unexpected(), "");
    scenario.count(load);
    scenario.count(second);
    test::Number before = 0;
    for (auto source : load.sources()) {
      if (!source.ids.empty()) before = std::max(before, source.ids.back());
      source.name = std::string(policy) + "-" + source.name;
      sources.push_back(std::move(source));
    }
    for (auto source : second.sources()) {
      if (!source.ids.empty()) {
        EXPECT_GT(source.ids.front(), before) << "below the last run's IDs";
      }
      source.name = std::string(policy) + "-restarted-" + source.name;
      sources.push_back(std::move(source));
    }
    again->signal(SIGTERM);
    again->wait();
  }
  scenario.check(sources);
}

// Item 6: IDs really issued during a forward step move the mark with them:
// the restart refuses, and the operator's two ways out keep the promise.
TEST_F(StateHardening, IssuedAheadIsRefusedUntilTheOperatorContinuesOrLowersTheMark) {
  scenario.describe(
      "hardening/6/issued_ahead_ways_out",
      "IDs issued while the clock was 1 h ahead, then a crash and a restart with the clock "
      "set right",
      "libfaketime +1 h for 1 s under load; SIGKILL; restart (reject); restart with "
      "--continue-above-mark true; `snowid state show`; then, on an audited node, SIGKILL "
      "and `snowid state lower --audit --yes`",
      "the plain restart exits 1 naming the mark; continue_above_mark serves above every "
      "earlier ID at once; `state lower` refuses while snowidd runs, changes nothing "
      "without --yes, and after it a reject restart serves at once; 0 duplicates");
  test::FaketimeControl clock;
  if (!clock.available()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  const std::string state = scenario.dir.file("state");
  const std::string audit = scenario.dir.file("audit.log");
  const std::vector<std::string> base{"--clock-policy", "reject", "--audit-log", audit};
  test::NodeAddress node;
  auto server = start(state, base, clock.env());
  ASSERT_TRUE(server->started()) << server->log();
  node.set(server->port(), server->grpc_port());
  auto load = load_on(node);
  ASSERT_TRUE(load->wait_served({0}, 20, seconds{10}));
  clock.set_offset(std::chrono::hours{1});
  const auto ahead_served = load->served_counts();
  ASSERT_TRUE(load->wait_served(ahead_served, 20, seconds{10}));
  node.retire();
  server->signal(SIGKILL);
  server->wait();
  load->stop();
  clock.set_offset(milliseconds{0});

  auto refused = test::run_process({SNOWIDD_PATH, "--state-dir", state, "--http", "127.0.0.1:0",
                                    "--grpc", "127.0.0.1:0", "--clock-policy", "reject"});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find("behind the high-water mark"), std::string::npos) << refused.err;

  auto shown = test::run_process({SNOWID_CLI_PATH, "state", "show", "--state-dir", state});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("ahead of the clock"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("continue_above_mark"), std::string::npos) << shown.out;

  std::vector<std::string> continued_args = base;
  continued_args.insert(continued_args.end(), {"--continue-above-mark", "true"});
  auto continued = start(state, continued_args);
  ASSERT_TRUE(continued->started()) << continued->log();
  EXPECT_NE(continued->log().find("logical clock"), std::string::npos) << continued->log();
  node.set(continued->port(), continued->grpc_port());
  scenario.count(*load);
  auto sources = load->sources();
  serve_a_little(node, "continued-", sources);

  // `state lower` needs the node stopped, and --yes.
  auto while_running = test::run_process(
      {SNOWID_CLI_PATH, "state", "lower", "--state-dir", state, "--audit", audit, "--yes"});
  EXPECT_EQ(while_running.exit_code, 1) << while_running.out << while_running.err;
  EXPECT_NE(while_running.err.find("another process"), std::string::npos) << while_running.err;
  node.retire();
  continued->signal(SIGKILL);
  continued->wait();
  const std::string mark_before = test::read_file(state + "/generator.state");
  auto dry = test::run_process(
      {SNOWID_CLI_PATH, "state", "lower", "--state-dir", state, "--audit", audit});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("run again with --yes"), std::string::npos) << dry.out;
  EXPECT_EQ(test::read_file(state + "/generator.state"), mark_before);
  auto lowered = test::run_process(
      {SNOWID_CLI_PATH, "state", "lower", "--state-dir", state, "--audit", audit, "--yes"});
  EXPECT_EQ(lowered.exit_code, 0) << lowered.out << lowered.err;
  // The audited IDs lie 1 h ahead (the logical clock), so the mark stays
  // ahead: continuing is still needed, and the restart starts above them.
  auto last = start(state, continued_args);
  ASSERT_TRUE(last->started()) << last->log();
  node.set(last->port(), last->grpc_port());
  serve_a_little(node, "lowered-", sources);

  scenario.max_drift = "2h";  // the IDs of the logical clock lie 1 h ahead, as they must
  scenario.check(sources, /*histories=*/true);
}

// Item 6: `snowid state lower` on an ordinary crash: the mark lies up to
// reserve_ahead past the last ID, which the reject policy waits out; lowered
// to the last audited ID, the restart serves at once.
TEST_F(StateHardening, StateLowerLetsARejectRestartServeAtOnce) {
  scenario.describe(
      "hardening/6/state_lower_after_kill9",
      "a crash leaves the mark up to 500 ms past the last ID; the reject policy would "
      "refuse a restart until then",
      "SIGKILL under load (audit log on), `snowid state lower --audit FILE --yes`, restart",
      "the mark is lowered to the last audited ID's time unit; the restart serves at once "
      "and above every earlier ID");
  const std::string state = scenario.dir.file("state");
  const std::string audit = scenario.dir.file("audit.log");
  const std::vector<std::string> args{"--clock-policy", "reject", "--audit-log", audit};
  test::NodeAddress node;
  auto server = start(state, args);
  ASSERT_TRUE(server->started()) << server->log();
  node.set(server->port(), server->grpc_port());
  auto load = load_on(node);
  ASSERT_TRUE(load->wait_served({0}, 50, seconds{10}));
  node.retire();
  server->signal(SIGKILL);
  server->wait();
  load->stop();
  auto lowered = test::run_process(
      {SNOWID_CLI_PATH, "state", "lower", "--state-dir", state, "--audit", audit, "--yes"});
  ASSERT_EQ(lowered.exit_code, 0) << lowered.out << lowered.err;
  EXPECT_NE(lowered.out.find("lowered"), std::string::npos) << lowered.out;
  auto again = start(state, args);
  ASSERT_TRUE(again->started()) << again->log();
  node.set(again->port(), again->grpc_port());
  scenario.count(*load);
  auto sources = load->sources();
  serve_a_little(node, "restarted-", sources);
  scenario.check(sources, /*histories=*/true);
}

// Item 8: with the audit log unwritable every request is refused, so the
// node must not say it is ready.
TEST_F(StateHardening, ReadinessFollowsTheAuditLog) {
  scenario.describe(
      "hardening/8/readyz_audit_log_full",
      "the audit log cannot grow (its file size limit is reached, as on a full disk)",
      "snowidd under RLIMIT_FSIZE = 64 KiB with audit_log on; requests until it is full",
      "once /v1/id answers 503, /readyz is 503 naming the audit log and snowid_ready is 0");
  const std::string state = scenario.dir.file("state");
  const std::string audit = scenario.dir.file("audit.log");
  // The limit applies to files snowidd writes; the state file stays far below it.
  auto server = std::make_unique<test::ServerProcess>(
      "/usr/bin/prlimit", std::vector<std::string>{"--fsize=65536", SNOWIDD_PATH, "--state-dir",
                                                   state, "--audit-log", audit});
  ASSERT_TRUE(server->started()) << server->log();
  EXPECT_EQ(test::http_get(server->port(), "/readyz").status, 200);
  int answers = 0;
  int status = 200;
  while (status == 200 && answers < 100'000) {
    status = test::http_get(server->port(), "/v1/ids?count=100").status;
    ++answers;
  }
  scenario.record.answers = static_cast<std::uint64_t>(answers);
  ASSERT_EQ(status, 503);
  scenario.record.refused = 1;
  const auto ready = test::http_get(server->port(), "/readyz");
  EXPECT_EQ(ready.status, 503) << ready.body;
  EXPECT_NE(ready.body.find("audit log"), std::string::npos) << ready.body;
  EXPECT_EQ(test::metric(server->port(), "snowid_ready"), 0.0);
}

// Item 19: a restart under the wait policy with the clock behind the mark
// listens at once and says what it waits for.
TEST_F(StateHardening, WaitPolicyRestartAnswersProbesWhileItWaits) {
  scenario.describe(
      "hardening/19/wait_start_answers_probes",
      "a restart under the wait policy with the clock 3 s behind the high-water mark",
      "a node stopped cleanly, then restarted with libfaketime FAKETIME=-3 s, "
      "--clock-policy wait",
      "it listens at once and logs what it waits for and until when; /healthz 200, "
      "/readyz and /v1/id 503 until the clock passes the mark, then IDs above the earlier "
      "ones");
  if (test::faketime_library().empty()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  const std::string state = scenario.dir.file("state");
  const std::vector<std::string> args{"--clock-policy", "wait"};
  test::NodeAddress node;
  auto first = start(state, args);
  ASSERT_TRUE(first->started()) << first->log();
  node.set(first->port(), first->grpc_port());
  auto load = load_on(node);
  ASSERT_TRUE(load->wait_served({0}, 50, seconds{10}));
  node.retire();
  load->stop();
  first->signal(SIGTERM);
  ASSERT_EQ(first->wait(), 0) << first->log();

  const auto began = SteadyClock::now();
  auto waiting = start(state, args, test::faketime_fixed_env(milliseconds{-3000}));
  ASSERT_TRUE(waiting->started()) << waiting->log();
  const auto listening_after = std::chrono::duration_cast<milliseconds>(SteadyClock::now() - began);
  EXPECT_LT(listening_after.count(), 1500) << "it did not listen while it waited";
  EXPECT_EQ(test::http_get(waiting->port(), "/healthz").status, 200);
  const auto ready = test::http_get(waiting->port(), "/readyz");
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.body.find("behind"), std::string::npos) << ready.body;
  EXPECT_EQ(test::http_get(waiting->port(), "/v1/id").status, 503);
  EXPECT_NE(waiting->log().find("waits until"), std::string::npos) << waiting->log();
  ASSERT_TRUE(test::wait_until(
      [&] { return test::http_get(waiting->port(), "/readyz").status == 200; }, seconds{10}));
  scenario.record.recovery_ms =
      std::chrono::duration_cast<milliseconds>(SteadyClock::now() - began).count();
  EXPECT_TRUE(test::wait_until(
      [&] { return waiting->log().find("passed the high-water mark") != std::string::npos; },
      seconds{2}))
      << waiting->log();
  node.set(waiting->port(), waiting->grpc_port());
  scenario.count(*load);
  auto sources = load->sources();
  serve_a_little(node, "restarted-", sources);
  scenario.check(sources, /*histories=*/true);
}

// Item 15: errors about the state in words an operator acts on.
TEST_F(StateHardening, ForgedOrMisplacedStateIsNamedForWhatItIs) {
  scenario.describe(
      "hardening/15/state_messages",
      "a state file with a forged mark of INT64_MAX, and a state path that is a directory",
      "a hand-made file with a valid checksum; mkdir STATE/generator.state",
      "exit 1 with 'lies after the year 9999' (never a negative year) and 'is a "
      "directory, not a file'");
  const std::string state = scenario.dir.file("state");
  std::filesystem::create_directories(state + "/generator.state");
  auto directory = test::run_process(
      {SNOWIDD_PATH, "--state-dir", state, "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"});
  EXPECT_EQ(directory.exit_code, 1) << directory.err;
  EXPECT_NE(directory.err.find("is a directory, not a file"), std::string::npos) << directory.err;
  std::filesystem::remove(state + "/generator.state");

  // The file a forger would write: the real format and checksum (FNV-1a).
  std::string layout;
  {
    auto written = test::run_process(
        {SNOWID_CLI_PATH, "gen", "-n", "1", "--state-file", state + "/generator.state"});
    ASSERT_EQ(written.exit_code, 0) << written.err;
    for (const auto& line : test::split_lines(test::read_file(state + "/generator.state"))) {
      if (line.rfind("layout=", 0) == 0) layout = line;
    }
  }
  const std::string covered = "# snowid state file: written by snowid, do not edit\nversion=1\n" +
                              layout + "\nhigh_water_unix_ms=9223372036854775807\n";
  std::uint64_t hash = 14695981039346656037ULL;
  for (char c : covered) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  char sum[17];
  std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(hash));
  std::ofstream(state + "/generator.state", std::ios::trunc)
      << covered << "checksum=" << sum << "\n";
  auto forged = test::run_process(
      {SNOWIDD_PATH, "--state-dir", state, "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"});
  EXPECT_EQ(forged.exit_code, 1) << forged.err;
  EXPECT_NE(forged.err.find("lies after the year 9999"), std::string::npos) << forged.err;
  EXPECT_EQ(forged.err.find("-6911"), std::string::npos) << forged.err;
}

}  // namespace
}  // namespace snowid
