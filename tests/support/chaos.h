// What every fault scenario (tests/chaos) is made of: a load of concurrent
// clients against real snowidd nodes that keeps every ID it is handed, per
// source and in order; the check those IDs must pass; when service came back;
// and one result record per scenario for docs/reliability.md.
//
// A SOURCE is one client connection (an HTTP keep-alive connection or a gRPC
// channel) to one incarnation of one node. Its IDs must strictly increase; no
// ID may appear twice across all sources. A NODE's history (each incarnation's
// IDs, incarnations in order) must strictly increase too: after a restart,
// every ID is above every ID of the previous incarnation.
//
// Thread-safety: NodeAddress may be used from any thread; a Load's methods
// from the thread that made it.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "subprocess.h"

namespace snowid::test {

using SteadyClock = std::chrono::steady_clock;
using Number = std::int64_t;  // a Snowflake ID or a segment number

// True when SNOWID_CHAOS_QUICK is set (for a quick run by hand): long
// phases are shortened, e.g. the 30 s clock strobe runs for 5 s.
bool chaos_quick();

// Where a node's clients connect: the ports of its current incarnation.
// Call retire() BEFORE killing or stopping the process and set() once the next
// incarnation listens. A client checks the incarnation number again after
// connecting and drops a connection made across a change, and drops a gRPC
// channel (which would reconnect by itself) once the number changes, so each
// connection (and each of its IDs) belongs to exactly one incarnation even
// when a new incarnation reuses the old port.
class NodeAddress {
 public:
  struct Ports {
    std::uint64_t incarnation = 0;
    int http = 0;  // 0: no process to talk to right now
    int grpc = 0;
  };
  void set(int http_port, int grpc_port);
  void retire();
  Ports get() const;

 private:
  mutable std::mutex mutex_;
  Ports ports_;
};

enum class Outcome : std::uint8_t {
  kServed,   // HTTP 200 / gRPC OK
  kRefused,  // HTTP 503 / gRPC UNAVAILABLE: the node says "not now"
  kFailed,   // anything else: another status, no answer, a lost connection
};

struct LoadOptions {
  int http_clients = 2;  // per node
  int grpc_clients = 1;  // per node (NextIds)
  // Requested by the HTTP clients; the answer must be bare numbers, one per line.
  std::string http_target = "/v1/ids?count=10&format=text";
  std::uint32_t grpc_count = 10;
  std::chrono::microseconds pause{500};  // each client's pause between requests
  int requests = 0;                      // per client, then it stops; 0: until stop()
  // Lost connections and missing answers are expected (processes get killed):
  // counted as kFailed but not reported by unexpected().
  bool connection_loss_expected = false;
};

// Nodes that stop, start and lose their claims under load: batches of 20
// IDs over HTTP every 0.3 ms, lost connections expected.
inline LoadOptions batches_across_restarts() {
  return {.http_target = "/v1/ids?count=20&format=text",
          .pause = std::chrono::microseconds{300},
          .connection_loss_expected = true};
}

struct Source {
  std::string name;  // "n0-http1-c2": node 0, HTTP client 1, its connection 2
  std::size_t node = 0;
  std::uint64_t incarnation = 0;
  std::vector<Number> ids;  // in the order they were handed out
};

struct Sample {
  SteadyClock::time_point sent;
  SteadyClock::time_point received;
  std::size_t node = 0;
  Outcome outcome = Outcome::kServed;
};

// Clients on their own threads, started by the constructor.
class Load {
 public:
  Load(std::vector<NodeAddress*> nodes, LoadOptions options);
  ~Load();
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

  void wait();  // until every client made its `requests`
  void stop();  // tells the clients to stop and joins them
  // Paused clients send nothing (a request under way finishes).
  void pause(bool paused) { paused_ = paused; }

  std::uint64_t served(std::size_t node) const { return counters_[node].served; }
  std::uint64_t refused(std::size_t node) const { return counters_[node].refused; }
  std::uint64_t failed(std::size_t node) const { return counters_[node].failed; }
  std::size_t nodes() const { return nodes_.size(); }
  // Waits until every node has served `more` answers beyond `before` (its
  // count when the caller read it); false after `limit`.
  bool wait_served(const std::vector<std::uint64_t>& before, std::uint64_t more,
                   std::chrono::milliseconds limit) const;
  std::vector<std::uint64_t> served_counts() const;

  // After stop() or wait():
  std::vector<Source> sources() const;
  std::vector<Sample> samples() const;  // of all clients, by time sent
  // The first few answers that were neither served nor refused (and lost
  // connections unless expected); "" if none.
  std::string unexpected() const;

  class Channel;  // one client connection (chaos.cc)

 private:
  struct Client;
  struct Counters {
    std::atomic<std::uint64_t> served{0}, refused{0}, failed{0};
  };
  void run(Client& client);
  void note(Client& client, Sample sample, const std::string& detail);

  std::vector<NodeAddress*> nodes_;
  LoadOptions options_;
  std::unique_ptr<Counters[]> counters_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::atomic<bool> stop_{false}, paused_{false};
  mutable std::mutex unexpected_mutex_;
  std::string unexpected_;
};

// Milliseconds from `fault_end` until service was back: to the first served
// answer received after the last answer that was not served. 0 if nothing
// went wrong after `fault_end`; nullopt if nothing was served afterwards.
std::optional<std::chrono::milliseconds> recovery_time(const std::vector<Sample>& samples,
                                                       SteadyClock::time_point fault_end);

// The number of samples with `outcome` sent within [from, to).
std::size_t count_sent(const std::vector<Sample>& samples, Outcome outcome,
                       SteadyClock::time_point from, SteadyClock::time_point to);
// The number of samples with `outcome` sent at or after `from` and received
// by `to`: the node decided them within [from, to], however late a loaded
// machine let the client send or read.
std::size_t count_within(const std::vector<Sample>& samples, Outcome outcome,
                         SteadyClock::time_point from, SteadyClock::time_point to);

// Each node's history as one source: per incarnation its IDs in increasing
// order, incarnations in order. Strictly increasing exactly when no ID
// repeats within an incarnation and every incarnation starts above the last.
std::vector<Source> node_histories(const std::vector<Source>& sources);

struct IdCheck {
  std::uint64_t ids_checked = 0;
  std::uint64_t duplicates = 0;        // IDs seen more than once, counted per extra copy
  std::uint64_t order_violations = 0;  // places where a file's next ID is not greater
  std::string problems;                // examples, for a failure message
  bool clean() const { return duplicates == 0 && order_violations == 0 && problems.empty(); }
};

// Writes each non-empty source to DIR/NAME.ids (one decimal ID per line, in
// order) and returns the paths.
std::vector<std::string> write_id_files(const std::string& dir, const std::vector<Source>& sources);

// THE check, and the one place that decides how it is made: the real
// `snowid check --json FILE...` (each file a source), which fails on an ID
// in two places across `files`, a file not strictly increasing, or an ID
// more than `max_drift` (a `snowid check --max-drift` duration) ahead of the clock.
IdCheck check_id_files(const std::vector<std::string>& files, const std::string& max_drift = "1s");

// User plus system CPU time `pid` has used (from /proc/PID/stat).
std::chrono::milliseconds cpu_time(pid_t pid);

// The value of `series` (name and labels, exactly) in a node's /metrics; -1 if absent.
double metric(int port, const std::string& series);
// The value of the sample `name` (with its labels, as written) in
// Prometheus text output, if present.
std::optional<double> metric(const std::string& text, const std::string& name);

// Polls `condition` every 10 ms; false if it did not hold within `limit`.
bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds limit);

// One line of the results file: what a scenario did and what it found.
struct ScenarioRecord {
  std::string scenario;       // "clock_step/reject/back_1s"
  std::string fault;          // what went wrong, in words
  std::string injection;      // how the test made it happen
  std::string expected;       // the behaviour the scenario asserts
  std::uint64_t answers = 0;  // requests answered or failed, all clients
  std::uint64_t refused = 0;  // of which refused (503, UNAVAILABLE)
  std::uint64_t ids_checked = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t order_violations = 0;
  // What it measured against the bounds it asserts, in words ("A's last ID
  // 2.93 s after the fault, ..."); "" if nothing beyond these counts.
  std::string measured;
  std::optional<long long> recovery_ms;
  std::string result;  // pass, fail or skipped
  long long duration_ms = 0;
};

// Appends `record` as one JSON line, with the date, to the file named by
// SNOWID_CHAOS_REPORT (nothing if it is unset). Safe from several processes.
void append_record(const ScenarioRecord& record);

// One scenario's temporary directory and record: the scenario fills in the
// record, check() adds the counts, finish() (from the fixture's TearDown)
// writes it with the test's result.
//
// The directory (state directories, ID files) is in memory (/dev/shm) where
// there is one: a process's crash keeps what it wrote either way, and the
// scenarios then measure their own fault, not the stalls of a disk shared
// with compilers (a state-file fsync that takes seconds makes requests wait:
// docs/reliability.md, "Not guaranteed").
class Scenario {
 public:
  Scenario();
  // Names the scenario in the results (docs/reliability.md).
  void describe(std::string name, std::string fault, std::string injection, std::string expected);
  // Checks `sources` (and, with `histories`, each node's history across
  // restarts), adds the counts to the record and fails the test on a problem.
  void check(const std::vector<Source>& sources, bool histories = false);
  // Adds the load's answers and refusals to the record.
  void count(const Load& load);
  void finish();

  TempDir dir;
  ScenarioRecord record;
  // How far ahead of the clock an ID may lie (snowid check --max-drift): more
  // only where a scenario issues ahead on purpose (a logical clock).
  std::string max_drift = "1s";

 private:
  SteadyClock::time_point began_ = SteadyClock::now();
};

// The fixture of a chaos scenario.
class ChaosTest : public ::testing::Test {
 protected:
  void TearDown() override { scenario.finish(); }

  Scenario scenario;
};

}  // namespace snowid::test
