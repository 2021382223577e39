// Slow clients from slowhttptest (Debian package slowhttptest) against the
// real snowidd, while a probe client keeps asking for IDs:
//
//   -H  slow headers (Slowloris): requests whose header never ends, one more
//       field line every second;
//   -B  slow body (R-U-Dead-Yet): a POST announcing a 4 KiB body sent a few
//       bytes at a time;
//   -X  slow read: pipelined requests for large answers, read a few bytes a
//       second through a tiny TCP window.
//
// snowidd runs with a 2 s read timeout (the time a request, or writing its
// answer, may take once begun), so the attack connections are cut a few
// seconds in, and slowhttptest, which does not reconnect, ends early.
// Checked: the probe gets an ID for every request, all distinct, with a
// bounded latency; open connections never exceed max_connections (an attack
// beyond the limit is refused with 503 while existing clients carry on);
// snowidd's resident memory stays bounded; it closes every slow connection
// by itself; it stops cleanly (exit 0, no leak under LeakSanitizer).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "abuse_server.h"
#include "missing.h"

namespace snowid {
namespace {

using test::AbuseTest;
using test::HttpConnection;
using test::IdProbe;
using Clock = std::chrono::steady_clock;

constexpr const char* kSlowHttpTest = "/usr/bin/slowhttptest";
constexpr auto kReadTimeout = std::chrono::milliseconds{2000};
// The probe's 99th percentile latency must stay under this; a server whose
// connection threads or acceptor were held by slow clients would answer in
// seconds (the read timeout) or not at all.
constexpr auto kProbeP99 = std::chrono::milliseconds{test::kSanitized ? 500 : 200};
// Growth of snowidd's resident memory during an attack of a few hundred
// connections: a few tens of KiB each at most (buffers capped by
// max_header_bytes + max_body_bytes and 64 KiB of gathered answers), more
// under the sanitizers' shadow memory and quarantine.
constexpr long kRssGrowthKib = test::kSanitized ? 512 * 1024 : 96 * 1024;

struct Attack {
  std::vector<std::string> mode;  // slowhttptest's flags for the attack
  std::string target;             // path and query
  int connections = 300;
  int seconds = 15;  // slowhttptest's -l: the attack's longest run
};

struct Observed {
  std::vector<int> attacker_connected;  // slowhttptest's view, once a second
  int attacker_exit = -1;
  std::string attacker_output;
  double peak_open_connections = 0;       // snowidd's view, sampled every 100 ms
  bool released_while_attacking = false;  // back to the probe's and ours before the attack ended
  double refused_connections = 0;
  long rss_growth_kib = 0;
  IdProbe::Report probe;
};

class SlowClientsTest : public AbuseTest {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kSlowHttpTest)) {
      SNOWID_SKIP_MISSING("slowhttptest is not installed (scripts/install-deps.sh installs it)");
    }
  }

  // Runs the attack against a started snowidd, with the probe running and
  // snowidd's open connections and memory sampled, and waits until snowidd
  // has closed every attack connection (20 s past the attack's -l at most).
  Observed run(const Attack& attack, IdProbe::Connections probe_connections) {
    Observed seen;
    // Warm up, so the baseline includes what any first requests allocate.
    for (int i = 0; i < 20; ++i)
      EXPECT_EQ(test::http_get(port(), "/v1/ids?count=1000").status, 200);
    HttpConnection observer(port());  // opened before the attack fills the connection slots
    EXPECT_TRUE(test::read_metric(observer, "snowid_open_connections").has_value());
    const long baseline_kib = test::rss_kib(server().pid());
    long peak_kib = baseline_kib;

    IdProbe probe(port(), probe_connections);
    test::TempDir out;
    std::vector<std::string> argv{kSlowHttpTest};
    argv.insert(argv.end(), attack.mode.begin(), attack.mode.end());
    for (const std::string& arg :
         {std::string("-c"), std::to_string(attack.connections), std::string("-r"),
          std::to_string(attack.connections), std::string("-l"), std::to_string(attack.seconds),
          std::string("-p"), std::string("3"), std::string("-g"), std::string("-o"),
          out.file("stats"), std::string("-u"),
          "http://127.0.0.1:" + std::to_string(port()) + attack.target}) {
      argv.push_back(arg);
    }
    auto attacker = std::async(std::launch::async, [argv, limit = attack.seconds + 30] {
      return test::run_process(argv, {}, std::chrono::seconds{limit});
    });
    // The observer's connection and the probe's: what is open when no
    // attack connection is.
    constexpr double ours = 2;
    bool attacking = true;
    bool attack_seen = false;
    const auto give_up = Clock::now() + std::chrono::seconds{attack.seconds + 20};
    while (Clock::now() < give_up) {
      if (attacking &&
          attacker.wait_for(std::chrono::milliseconds{100}) == std::future_status::ready) {
        attacking = false;
        const auto result = attacker.get();
        seen.attacker_exit = result.exit_code;
        seen.attacker_output = result.out + result.err;
      }
      if (!attacking) std::this_thread::sleep_for(std::chrono::milliseconds{100});
      const auto open = test::read_metric(observer, "snowid_open_connections");
      EXPECT_TRUE(open.has_value()) << "the observer lost its connection";
      if (!open) break;
      seen.peak_open_connections = std::max(seen.peak_open_connections, *open);
      peak_kib = std::max(peak_kib, test::rss_kib(server().pid()));
      if (*open > ours + 10) attack_seen = true;
      if (attack_seen && *open <= ours) {
        seen.released_while_attacking = seen.released_while_attacking || attacking;
        if (!attacking) break;
      }
      if (!attacking && !attack_seen) break;  // the attack never got through: fail below
    }
    if (attacking) {
      const auto result = attacker.get();
      seen.attacker_exit = result.exit_code;
      seen.attacker_output = result.out + result.err;
    }
    seen.refused_connections =
        test::read_metric(observer, "snowid_refused_connections_total").value_or(-1);
    seen.probe = probe.stop();
    seen.rss_growth_kib = peak_kib - baseline_kib;

    std::istringstream csv(test::read_file(out.file("stats.csv")));
    std::string line;
    std::getline(csv, line);  // Seconds,Closed,Pending,Connected,Service Available
    while (std::getline(csv, line)) {
      std::vector<std::string> cells;
      std::istringstream row(line);
      for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
      if (cells.size() >= 4) seen.attacker_connected.push_back(std::stoi(cells[3]));
    }
    std::cout << "probe: " << seen.probe.latencies.size() << " requests, p50 "
              << seen.probe.quantile(0.5).count() << " us, p99 "
              << seen.probe.quantile(0.99).count() << " us, max "
              << seen.probe.quantile(1.0).count() << " us; snowidd: peak "
              << seen.peak_open_connections << " connections, " << seen.refused_connections
              << " refused, RSS +" << seen.rss_growth_kib << " KiB; slowhttptest connected: ";
    for (int c : seen.attacker_connected) std::cout << c << ' ';
    std::cout << std::endl;
    return seen;
  }

  static void expect_probe_served(const IdProbe::Report& probe) {
    EXPECT_EQ(probe.problems(), "");
    EXPECT_GE(probe.latencies.size(), 100u);
    EXPECT_LT(probe.quantile(0.99), kProbeP99);
  }
};

std::vector<std::string> server_args(int max_connections) {
  return {"--read-timeout-ms", std::to_string(kReadTimeout.count()), "--max-connections",
          std::to_string(max_connections)};
}

// Slowloris, within the connection limit: new clients keep being served
// (the probe connects anew for every ID), and the slow connections are
// closed after the read timeout, so slowhttptest, which holds 300 at its
// peak, runs out of them long before its 15 s.
TEST_F(SlowClientsTest, SlowHeadersAreCutOffAndOthersServed) {
  start(server_args(1000));
  const Observed seen = run({{"-H", "-i", "1"}, "/v1/id"}, IdProbe::Connections::kFreshConnections);
  EXPECT_EQ(seen.attacker_exit, 0) << seen.attacker_output;
  ASSERT_FALSE(seen.attacker_connected.empty()) << seen.attacker_output;
  EXPECT_GE(*std::max_element(seen.attacker_connected.begin(), seen.attacker_connected.end()), 200);
  EXPECT_NE(seen.attacker_output.find("No open connections left"), std::string::npos)
      << "the slow connections outlived the attack: " << seen.attacker_output;
  EXPECT_LE(seen.peak_open_connections, 1000);
  expect_probe_served(seen.probe);
  EXPECT_LT(seen.rss_growth_kib, kRssGrowthKib);
}

// Slowloris with three times more connections than snowidd takes: the
// extra ones get 503 at once, the probe's connection (opened before) is
// served throughout, and the limit holds.
TEST_F(SlowClientsTest, SlowHeadersBeyondTheLimitAreRefused) {
  start(server_args(100));
  const Observed seen = run({{"-H", "-i", "1"}, "/v1/id"}, IdProbe::Connections::kKeptAlive);
  EXPECT_EQ(seen.attacker_exit, 0) << seen.attacker_output;
  EXPECT_LE(seen.peak_open_connections, 100);
  EXPECT_GE(seen.refused_connections, 150);
  expect_probe_served(seen.probe);
  EXPECT_LT(seen.rss_growth_kib, kRssGrowthKib);
  EXPECT_EQ(test::http_get(port(), "/v1/id").status, 200);  // new clients are let in again
}

// R-U-Dead-Yet: each POST announces a 4 KiB body (max_body_bytes) and
// sends it a few bytes a second; cut off like slow headers.
TEST_F(SlowClientsTest, SlowBodiesAreCutOffAndOthersServed) {
  start(server_args(1000));
  const Observed seen =
      run({{"-B", "-i", "1", "-s", "4096"}, "/v1/id"}, IdProbe::Connections::kFreshConnections);
  EXPECT_EQ(seen.attacker_exit, 0) << seen.attacker_output;
  ASSERT_FALSE(seen.attacker_connected.empty()) << seen.attacker_output;
  EXPECT_GE(*std::max_element(seen.attacker_connected.begin(), seen.attacker_connected.end()), 200);
  EXPECT_NE(seen.attacker_output.find("No open connections left"), std::string::npos)
      << "the slow connections outlived the attack: " << seen.attacker_output;
  expect_probe_served(seen.probe);
  EXPECT_LT(seen.rss_growth_kib, kRssGrowthKib);
}

// Slow read: each connection pipelines four requests for 1000 IDs (about
// 25 KiB each) and advertises a receive window of at most 64 bytes. The
// kernel's send buffer takes the answers (snowidd's memory does not grow
// with them), and the connection then waits for a next request, so the idle
// timeout (here 2 s, like the read timeout) ends it: snowidd's open
// connections fall back to the probe's and ours while slowhttptest still
// counts its connections as open (it reads too slowly to see the close).
// A reader slower still, whose answers fill the kernel's buffers, is cut
// off by the write deadline instead (next test).
TEST_F(SlowClientsTest, SlowReadersAreCutOffAndOthersServed) {
  auto args = server_args(1000);
  args.insert(args.end(), {"--idle-timeout-ms", std::to_string(kReadTimeout.count())});
  start(args);
  const Observed seen = run({{"-X", "-w", "1", "-y", "64", "-n", "1", "-z", "16", "-k", "4"},
                             "/v1/ids?count=1000",
                             200,
                             8},
                            IdProbe::Connections::kFreshConnections);
  EXPECT_EQ(seen.attacker_exit, 0) << seen.attacker_output;
  ASSERT_FALSE(seen.attacker_connected.empty()) << seen.attacker_output;
  EXPECT_GE(*std::max_element(seen.attacker_connected.begin(), seen.attacker_connected.end()), 150);
  EXPECT_GE(seen.peak_open_connections, 150);
  EXPECT_TRUE(seen.released_while_attacking);
  expect_probe_served(seen.probe);
  EXPECT_LT(seen.rss_growth_kib, kRssGrowthKib);
}

class NeverReadingClientTest : public AbuseTest {};

// A client with a 4 KiB receive buffer pipelines 30 requests for 10000 IDs
// (7 MB of answers) and reads nothing. Once the kernel's buffers are full,
// snowidd's write cannot finish; the write deadline (the read timeout)
// closes the connection, and snowidd holds at most one gathered answer for
// it meanwhile.
TEST_F(NeverReadingClientTest, IsCutOffAtTheWriteDeadline) {
  start(server_args(1000));
  HttpConnection observer(port());
  const long baseline_kib = test::rss_kib(server().pid());
  test::RawConnection reader(port(), 4096);
  std::string requests;
  for (int i = 0; i < 30; ++i) requests += "GET /v1/ids?count=10000 HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(reader.send(requests));
  const auto begin = Clock::now();
  double open = 0;
  while (Clock::now() - begin < std::chrono::seconds{15}) {
    open = test::read_metric(observer, "snowid_open_connections").value_or(-1);
    if (open <= 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  const auto took = Clock::now() - begin;
  EXPECT_EQ(open, 1) << "the reader's connection is still open";
  EXPECT_LT(took, kReadTimeout + std::chrono::seconds{3});
  EXPECT_LT(test::rss_kib(server().pid()) - baseline_kib, kRssGrowthKib);
  EXPECT_EQ(test::http_get(port(), "/v1/id").status, 200);
}

}  // namespace
}  // namespace snowid
