// Clock faults under load. A running snowidd's CLOCK_REALTIME is moved
// through libfaketime's timestamp file (tests/support/faketime.h) while HTTP
// and gRPC clients take IDs: steps back by 5 ms, 1 s and 1 h, a step forward
// and back again, and a clock that strobes between two offsets, under each
// clock policy.
//
// Every scenario checks that no ID repeats, that each connection's IDs
// strictly increase, that no request sent once the policy says service is
// back (plus kSlack) is refused, and that the first answer after the last
// refusal comes within kRecoveryBound of the fault's end. What each policy
// must do:
//
//   fault                           reject            wait (20 ms)     monotonic (1500 ms)
//   back 5 ms                       may refuse ~5 ms  never refuses    never refuses
//   back 1 s                        refuses ~1 s      refuses ~1 s     never refuses, <= 1 s ahead
//   back 1 h, set right after 1 s   refuses 1 s       refuses 1 s      refuses 1 s
//   forward 2 s, back after 0.5 s   refuses ~2 s      refuses ~2 s     refuses ~0.5 s
//   strobe 0 / -10 ms every 3 ms    refuses, serves   waits, serves    never refuses
//
// and the strobe must not make snowidd burn CPU: its CPU time per answer
// stays within kStrobeCpuFactor of the same load's without the strobe.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "chaos.h"
#include "faketime.h"
#include "missing.h"
#include "server_process.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using test::Outcome;
using test::SteadyClock;

// A refusal sent this long after the policy says service is back is a failure.
constexpr milliseconds kSlack{100};
// And the first answer after the last refusal must come this soon after the
// fault's end, end to end (it includes the clients' scheduling on a loaded
// machine; the clients pause 0.5 ms between requests).
constexpr milliseconds kRecoveryBound{2000};
// CPU time per answer during the strobe, at most this many times the baseline's.
constexpr double kStrobeCpuFactor = 3.0;

struct Policy {
  const char* name;
  std::vector<std::string> args;
  const char* words;
};

const Policy kReject{"reject", {"--clock-policy", "reject"}, "reject"};
const Policy kWait{
    "wait", {"--clock-policy", "wait", "--max-wait-ms", "20"}, "wait (max_wait 20 ms)"};
const Policy kMonotonic{"monotonic",
                        {"--clock-policy", "monotonic", "--max-drift-ms", "1500"},
                        "monotonic (max_drift 1500 ms)"};

void PrintTo(const Policy& policy, std::ostream* out) { *out << policy.name; }

enum class Refusals { kNever, kMaybe, kMust };

struct ClockFault {
  const char* name;
  const char* words;
  // The offsets written, each this long after the previous one.
  std::vector<std::pair<milliseconds, milliseconds>> steps;
  // How long after the last write the fault is over: the clock is back at
  // (or past) the last ID issued before it went wrong.
  milliseconds catch_up;
};

const ClockFault kBack5ms{"back_5ms",
                          "the clock steps back 5 ms and stays there",
                          {{{}, milliseconds{-5}}},
                          milliseconds{5}};
const ClockFault kBack1s{"back_1s",
                         "the clock steps back 1 s and stays there",
                         {{{}, milliseconds{-1000}}},
                         milliseconds{1000}};
const ClockFault kBack1h{"back_1h",
                         "the clock steps back 1 h; 1 s later it is set right",
                         {{{}, -std::chrono::duration_cast<milliseconds>(std::chrono::hours{1})},
                          {milliseconds{1000}, milliseconds{0}}},
                         milliseconds{0}};
const ClockFault kForwardAndBack{"forward_2s_and_back",
                                 "the clock steps forward 2 s; 0.5 s later it steps back",
                                 {{{}, milliseconds{2000}}, {milliseconds{500}, milliseconds{0}}},
                                 milliseconds{2000}};

void PrintTo(const ClockFault& fault, std::ostream* out) { *out << fault.name; }

struct Expected {
  Refusals refusals;
  milliseconds back_by;  // after the last write: no refusal is sent later (plus kSlack)
  const char* words;
};

Expected expected(const Policy& policy, const ClockFault& fault) {
  const std::string p = policy.name, f = fault.name;
  if (f == "back_5ms") {
    if (p == "reject")
      return {Refusals::kMaybe, fault.catch_up, "may refuse for 5 ms, then serves"};
    return {Refusals::kNever, fault.catch_up,
            p == "wait" ? "waits out the 5 ms, never refuses" : "issues ahead, never refuses"};
  }
  if (f == "back_1s") {
    if (p == "monotonic") {
      return {Refusals::kNever, fault.catch_up, "issues up to 1 s ahead, never refuses"};
    }
    return {Refusals::kMust, fault.catch_up, "refuses until the clock is back, about 1 s"};
  }
  if (f == "back_1h")
    return {Refusals::kMust, fault.catch_up, "refuses until the clock is set right"};
  if (p == "monotonic") {
    return {Refusals::kMust, milliseconds{500},
            "refuses about 0.5 s after the step back (2 s - max_drift), then issues ahead"};
  }
  return {Refusals::kMust, fault.catch_up, "refuses until the clock is back, about 2 s"};
}

std::string injection(const ClockFault& fault) {
  std::string text = "libfaketime timestamp file (FAKETIME_NO_CACHE) in the running snowidd:";
  for (const auto& [after, offset] : fault.steps) {
    if (after.count() > 0) text += ", " + std::to_string(after.count()) + " ms later";
    text += " write " + test::faketime_offset(offset);
  }
  return text;
}

// A snowidd under libfaketime with a moving offset, and a load on it.
class ClockChaos : public test::ChaosTest {
 protected:
  // Here, not in start(): a skip or failure in SetUp keeps the test body from running.
  void SetUp() override {
    if (!clock.available()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  }
  void start(const Policy& policy) {
    std::vector<std::string> args = policy.args;
    args.insert(args.end(), {"--state-dir", scenario.dir.file("state")});
    server = std::make_unique<test::ServerProcess>(SNOWIDD_PATH, args, clock.env());
    ASSERT_TRUE(server->started()) << server->log();
    node.set(server->port(), server->grpc_port());
  }
  // Three HTTP clients and one gRPC client, each pausing `pause` between requests.
  void start_load(std::chrono::microseconds pause = std::chrono::microseconds{500}) {
    test::LoadOptions options;
    options.http_clients = 3;
    options.grpc_clients = 1;
    options.pause = pause;
    load = std::make_unique<test::Load>(std::vector<test::NodeAddress*>{&node}, options);
  }
  // Ends the load; the server must still be running.
  void finish() {
    load->stop();
    EXPECT_EQ(load->unexpected(), "");
    EXPECT_EQ(::kill(server->pid(), 0), 0) << "snowidd died: " << server->log();
  }
  nlohmann::json info() {
    return nlohmann::json::parse(test::http_get(server->port(), "/v1/info").body, nullptr, false);
  }

  test::FaketimeControl clock;
  test::NodeAddress node;
  std::unique_ptr<test::ServerProcess> server;
  std::unique_ptr<test::Load> load;
};

long long ms_between(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration_cast<milliseconds>(to - from).count();
}

class ClockStep : public ClockChaos,
                  public ::testing::WithParamInterface<std::tuple<Policy, ClockFault>> {};

TEST_P(ClockStep, NoRepeatsAndThePolicysBehaviour) {
  const auto& [policy, fault] = GetParam();
  const Expected expect = expected(policy, fault);
  scenario.record.scenario = std::string("clock_step/") + policy.name + "/" + fault.name;
  scenario.record.fault = std::string(fault.words) + "; policy " + policy.words;
  scenario.record.injection = injection(fault);
  scenario.record.expected = expect.words;
  start(policy);
  start_load();
  ASSERT_TRUE(load->wait_served({0}, 50, seconds{10})) << "no service before the fault";
  std::this_thread::sleep_for(milliseconds{300});

  // The offsets in turn, each time taken once it is written (a loaded machine
  // may delay the test's thread); halfway through the first offset, how the
  // node describes itself.
  std::vector<SteadyClock::time_point> written;
  // The last moment before the last offset was written: an answer received
  // by then was decided under the offset before it (`written` may be taken
  // late when the machine delays this thread).
  SteadyClock::time_point before_last_write;
  int readyz_during_hold = 0;
  nlohmann::json info_during_hold;
  auto probe = [&] {
    readyz_during_hold = test::http_get(server->port(), "/readyz").status;
    info_during_hold = info();
  };
  for (std::size_t i = 0; i < fault.steps.size(); ++i) {
    if (i > 0) std::this_thread::sleep_until(written.back() + fault.steps[i].first);
    before_last_write = SteadyClock::now();
    clock.set_offset(fault.steps[i].second);
    written.push_back(SteadyClock::now());
    const milliseconds hold =
        i + 1 < fault.steps.size() ? fault.steps[i + 1].first : fault.catch_up;
    if (i == 0) {
      std::this_thread::sleep_until(written.back() + hold / 2);
      probe();
    }
  }
  const auto fault_start = written.front();
  const auto fault_end = written.back() + fault.catch_up;
  const auto back_by = written.back() + expect.back_by;
  // Then service, for a while and for at least 20 answers.
  std::this_thread::sleep_until(std::max(fault_end, back_by) + kSlack);
  const bool served_after = load->wait_served(load->served_counts(), 20, seconds{10});
  std::this_thread::sleep_until(std::max(fault_end, back_by) + milliseconds{700});
  const int readyz_after = test::http_get(server->port(), "/readyz").status;
  finish();

  const auto samples = load->samples();
  const auto long_after = fault_end + seconds{60};
  const std::size_t refused =
      test::count_sent(samples, Outcome::kRefused, fault_start - seconds{60}, long_after);
  switch (expect.refusals) {
    case Refusals::kNever:
      EXPECT_EQ(refused, 0u) << "refused although the policy absorbs this";
      break;
    case Refusals::kMust:
      EXPECT_GT(refused, 0u) << "served although the policy must refuse";
      break;
    case Refusals::kMaybe:
      break;
  }
  EXPECT_EQ(test::count_sent(samples, Outcome::kRefused, back_by + kSlack, long_after), 0u)
      << "refusals after the service should be back";
  EXPECT_EQ(test::count_sent(samples, Outcome::kFailed, fault_start - seconds{60}, long_after), 0u);
  EXPECT_TRUE(served_after) << "too little service after the fault";
  const auto recovery = test::recovery_time(samples, fault_end);
  ASSERT_TRUE(recovery.has_value()) << "never served again";
  scenario.record.recovery_ms = recovery->count();
  EXPECT_LE(*recovery, kRecoveryBound);

  if (std::string(fault.name) == "back_1h") {
    // An hour behind, every policy refuses everything, and says so on /readyz.
    std::string served_when;  // for the failure message: ms after the step back
    for (const auto& sample : samples) {
      if (sample.outcome == Outcome::kServed && sample.sent >= fault_start + kSlack &&
          sample.received <= before_last_write) {
        served_when += " sent +" + std::to_string(ms_between(fault_start, sample.sent)) +
                       " received +" + std::to_string(ms_between(fault_start, sample.received));
      }
    }
    EXPECT_EQ(served_when, "") << "served an hour behind (the clock was set right at +"
                               << ms_between(fault_start, before_last_write) << ")";
    EXPECT_EQ(readyz_during_hold, 503);
  }
  if (expect.refusals == Refusals::kNever && std::string(policy.name) == "monotonic") {
    // Issuing ahead of the clock, but never further than max_drift.
    ASSERT_TRUE(info_during_hold.is_object());
    EXPECT_LE(info_during_hold["drift_ms"].get<long long>(), 1500);
    EXPECT_EQ(readyz_during_hold, 200);
  }
  EXPECT_EQ(readyz_after, 200);
  scenario.count(*load);
  scenario.check(load->sources());
}

INSTANTIATE_TEST_SUITE_P(EachPolicy, ClockStep,
                         ::testing::Combine(::testing::Values(kReject, kWait, kMonotonic),
                                            ::testing::Values(kBack5ms, kBack1s, kBack1h,
                                                              kForwardAndBack)),
                         [](const auto& param) {
                           return std::string(std::get<0>(param.param).name) + "_" +
                                  std::get<1>(param.param).name;
                         });

class ClockStrobe : public ClockChaos, public ::testing::WithParamInterface<Policy> {};

// The answers and snowidd's CPU time over `length` of load.
struct Phase {
  std::uint64_t answers = 0;
  milliseconds cpu{0};
  double cpu_per_answer() const {
    return static_cast<double>(cpu.count()) /
           static_cast<double>(std::max<std::uint64_t>(answers, 1));
  }
};

TEST_P(ClockStrobe, NoRepeatsAndNoBusySpinning) {
  const Policy& policy = GetParam();
  const std::string p = policy.name;
  const seconds length{test::chaos_quick() ? 5 : 30};
  const milliseconds period{3};
  const milliseconds behind{-10};
  scenario.record.scenario = "clock_strobe/" + p;
  scenario.record.fault = "the clock strobes between +0 and -10 ms every 3 ms for " +
                          std::to_string(length.count()) + " s; policy " + policy.words;
  scenario.record.injection =
      "libfaketime timestamp file rewritten every 3 ms in the running snowidd; snowidd's CPU "
      "time from /proc/PID/stat";
  scenario.record.expected =
      p == "reject" ? "refuses while behind, serves in between, no busy spinning"
      : p == "wait"
          ? "waits out each 10 ms step (a call that meets two may refuse), no busy spinning"
          : "never refuses, no busy spinning";
  start(policy);
  start_load(milliseconds{1});
  ASSERT_TRUE(load->wait_served({0}, 50, seconds{10})) << "no service before the fault";

  auto measure = [&](milliseconds span, const std::function<void()>& during) {
    const auto before_answers = load->served(0) + load->refused(0) + load->failed(0);
    const auto before_cpu = test::cpu_time(server->pid());
    const auto end = SteadyClock::now() + span;
    during();
    std::this_thread::sleep_until(end);
    return Phase{load->served(0) + load->refused(0) + load->failed(0) - before_answers,
                 test::cpu_time(server->pid()) - before_cpu};
  };
  const Phase baseline = measure(seconds{2}, [] {});
  const auto strobe_start = SteadyClock::now();
  const Phase strobe = measure(length, [&] {
    bool back = false;
    for (auto next = SteadyClock::now(); next < strobe_start + length; next += period) {
      std::this_thread::sleep_until(next);
      back = !back;
      clock.set_offset(back ? behind : milliseconds{0});
    }
    clock.set_offset(milliseconds{0});
  });
  const auto fault_end = SteadyClock::now() + (-behind);  // the last step back is caught up
  std::this_thread::sleep_for(milliseconds{700});
  const int port = server->port();
  const double all_requests =
      test::metric(port, "snowid_http_request_duration_seconds_bucket{le=\"+Inf\"}");
  const double quick_requests =
      test::metric(port, "snowid_http_request_duration_seconds_bucket{le=\"0.1\"}");
  finish();

  const auto samples = load->samples();
  const std::size_t refused = test::count_sent(samples, Outcome::kRefused, strobe_start,
                                               strobe_start + length + seconds{60});
  if (p == "reject") {
    EXPECT_GT(refused, 0u);
  } else if (p == "monotonic") {
    EXPECT_EQ(refused, 0u);
  }
  EXPECT_EQ(test::count_sent(samples, Outcome::kFailed, strobe_start, fault_end + seconds{60}), 0u);
  // Served all along: in every second of the strobe in which the node
  // answered at all (a loaded machine may starve the clients for a while).
  for (auto from = strobe_start; from + seconds{1} <= strobe_start + length; from += seconds{1}) {
    const std::size_t served = test::count_sent(samples, Outcome::kServed, from, from + seconds{1});
    const std::size_t answered =
        served + test::count_sent(samples, Outcome::kRefused, from, from + seconds{1});
    EXPECT_TRUE(answered < 20 || served > 0)
        << "no ID served in second "
        << std::chrono::duration_cast<seconds>(from - strobe_start).count() << " of " << answered
        << " answers";
  }
  // Waits are bounded: by snowidd's own histogram, (nearly) every HTTP request
  // took it less than 100 ms, max_wait being 20 ms (the rest: a loaded machine).
  EXPECT_GE(quick_requests, 0.99 * all_requests) << all_requests << " requests";
  const auto recovery = test::recovery_time(samples, fault_end);
  ASSERT_TRUE(recovery.has_value()) << "never served again";
  scenario.record.recovery_ms = recovery->count();
  EXPECT_LE(*recovery, kRecoveryBound);

  RecordProperty("baseline_cpu_ms_per_1000_answers",
                 static_cast<int>(baseline.cpu_per_answer() * 1000));
  RecordProperty("strobe_cpu_ms_per_1000_answers",
                 static_cast<int>(strobe.cpu_per_answer() * 1000));
  std::printf(
      "CPU per 1000 answers: baseline %.1f ms (%llu answers), strobe %.1f ms (%llu answers)\n",
      baseline.cpu_per_answer() * 1000, static_cast<unsigned long long>(baseline.answers),
      strobe.cpu_per_answer() * 1000, static_cast<unsigned long long>(strobe.answers));
  EXPECT_GT(strobe.answers, baseline.answers / 4) << "the strobe starved the clients";
  EXPECT_LE(strobe.cpu_per_answer(), kStrobeCpuFactor * baseline.cpu_per_answer())
      << "snowidd burns CPU while the clock strobes";
  char measured[160];
  std::snprintf(measured, sizeof measured,
                "CPU per 1000 answers %.1f ms during the strobe, %.1f ms before it (%.2f times)",
                strobe.cpu_per_answer() * 1000, baseline.cpu_per_answer() * 1000,
                strobe.cpu_per_answer() / std::max(baseline.cpu_per_answer(), 1e-9));
  scenario.record.measured = measured;
  scenario.count(*load);
  scenario.check(load->sources());
}

INSTANTIATE_TEST_SUITE_P(EachPolicy, ClockStrobe, ::testing::Values(kReject, kWait, kMonotonic),
                         [](const auto& param) { return std::string(param.param.name); });

}  // namespace
}  // namespace snowid
