// Connections that never authenticate cannot lock real clients out of the
// stream listeners (RESP and Thrift, stream_server.h): against the real
// snowidd, 100 idle connections without the token, then a real client
// (redis-cli; the Python client thrift-compiler generates from the IDL)
// that must get in within a few seconds, and the counters in /metrics.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <thread>

#include "id_checks.h"
#include "server_process.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::ServerProcess;
using Clock = std::chrono::steady_clock;

constexpr int kFlood = 100;
// What "a few seconds" means here: the default auth timeout (5 s) plus the
// sweep, the retries and a loaded machine.
constexpr std::chrono::seconds kAdmittedWithin{9};

std::unique_ptr<ServerProcess> start(const test::TempDir& dir, std::vector<std::string> args) {
  args.insert(args.end(), {"--state-dir", dir.file("state")});
  auto server = std::make_unique<ServerProcess>(SNOWIDD_PATH, args);
  EXPECT_TRUE(server->started()) << server->log();
  return server;
}

// The value of `name` in /metrics; nullopt if absent.
std::optional<double> metric(const ServerProcess& server, const std::string& name) {
  const std::string body = test::http_get(server.port(), "/metrics").body;
  std::smatch m;
  if (!std::regex_search(body, m, std::regex("\n" + name + " ([0-9.e+]+)"))) return std::nullopt;
  return std::stod(m[1]);
}

// `count` connections that each send `greeting` and then nothing, ever.
std::vector<std::unique_ptr<test::RawSocket>> idle_connections(int port, int count,
                                                               const std::string& greeting) {
  std::vector<std::unique_ptr<test::RawSocket>> sockets;
  for (int i = 0; i < count; ++i) {
    sockets.push_back(std::make_unique<test::RawSocket>(port));
    if (!greeting.empty()) (void)sockets.back()->send(greeting);
  }
  return sockets;
}

// Runs `attempt` (a real client's try) every 200 ms until it succeeds;
// true if it did within kAdmittedWithin (then says after how long).
template <typename Attempt>
bool admitted(const std::string& who, Attempt attempt) {
  const auto begin = Clock::now();
  while (Clock::now() - begin < kAdmittedWithin) {
    if (attempt()) {
      std::cout
          << who << " admitted after "
          << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - begin).count()
          << " ms" << std::endl;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{200});
  }
  return false;
}

// The flood's connections, all from 127.0.0.1, held at most the half of the
// share (the default 0.1 of 100) one address may hold: each one beyond it
// closed the oldest that had had its chance (or, if none had, was refused at
// once), and the last few were closed at the auth timeout (5 s), which runs
// from each one's opening: the counts settle by then, the sweep and the time
// the flood took to open (a few seconds at most under a sanitizer) after.
void expect_flood_counted(const ServerProcess& server, const std::string& protocol) {
  const std::string prefix = "snowid_" + protocol;
  const auto settle_by = Clock::now() + std::chrono::seconds{9};
  while (Clock::now() < settle_by &&
         metric(server, prefix + "_unauthenticated_connections").value_or(-1) != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  const double timed_out = metric(server, prefix + "_auth_timeouts_total").value_or(0);
  EXPECT_GE(timed_out, 1);
  EXPECT_LE(timed_out, 5);
  EXPECT_GE(metric(server, prefix + "_refused_unauthenticated_total").value_or(0) +
                metric(server, prefix + "_evicted_unauthenticated_total").value_or(0) + timed_out,
            kFlood);
  EXPECT_EQ(metric(server, prefix + "_unauthenticated_connections").value_or(-1), 0);
}

bool all_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

// SNOWID.ID's whole reply: the ID as a bulk string.
bool id_reply(const std::string& reply) {
  return std::regex_match(reply, std::regex("\\$[0-9]+\r\n[0-9]+\r\n"));
}

class StreamAuthTest : public ::testing::Test {
 protected:
  test::TempDir dir;
};

// Before: with resp_max_connections = 100, 100 sockets that sent PING and
// never AUTH held every slot for the idle timeout (300 s), and redis-cli got
// "max number of clients reached" throughout.
TEST_F(StreamAuthTest, IdleRespConnectionsWithoutAuthDoNotKeepRedisCliOut) {
  auto server = start(dir, {"--resp", "127.0.0.1:0", "--bearer-token", "s3cret",
                            "--resp-max-connections", std::to_string(kFlood)});
  const int port = server->listener_port("resp");
  ASSERT_GT(port, 0) << server->log();
  // A client that authenticated before the flood keeps its connection.
  test::RawSocket authenticated(port);
  ASSERT_TRUE(authenticated.send("AUTH s3cret\r\n"));
  ASSERT_TRUE(authenticated.read_until([](const std::string& r) { return r == "+OK\r\n"; },
                                       std::chrono::seconds{5}));
  authenticated.received().clear();

  const auto flood = idle_connections(port, kFlood, "PING\r\n");
  EXPECT_TRUE(admitted("redis-cli",
                       [&] {
                         const auto r =
                             test::run_process({"/usr/bin/redis-cli", "-p", std::to_string(port),
                                                "-a", "s3cret", "--no-auth-warning", "SNOWID.ID"});
                         std::string out = r.out;
                         while (!out.empty() && out.back() == '\n') out.pop_back();
                         return all_digits(out);
                       }))
      << "redis-cli was kept out for " << kAdmittedWithin.count() << " s";
  expect_flood_counted(*server, "resp");
  int closed = 0;
  for (const auto& socket : flood) closed += socket->closed_by_peer(std::chrono::milliseconds{10});
  EXPECT_EQ(closed, kFlood);
  // Authenticated, it is past the auth timeout and still served.
  ASSERT_TRUE(authenticated.send("SNOWID.ID\r\n"));
  EXPECT_TRUE(authenticated.read_until(id_reply, std::chrono::seconds{5}))
      << authenticated.received();
}

// A client of the same network as trusted_networks needs no AUTH, and is
// not counted as unauthenticated.
TEST_F(StreamAuthTest, RespClientsFromTrustedNetworksNeedNoAuth) {
  auto server =
      start(dir, {"--resp", "127.0.0.1:0", "--bearer-token", "s3cret", "--resp-trusted-networks",
                  "127.0.0.0/8", "--resp-auth-timeout-ms", "300"});
  const int port = server->listener_port("resp");
  test::RawSocket trusted(port);
  ASSERT_TRUE(trusted.send("SNOWID.ID\r\n"));
  EXPECT_TRUE(trusted.read_until(id_reply, std::chrono::seconds{5})) << trusted.received();
  // Past the auth timeout, still open.
  EXPECT_FALSE(trusted.closed_by_peer(std::chrono::seconds{1}));
  EXPECT_EQ(metric(*server, "snowid_resp_auth_timeouts_total").value_or(-1), 0);
}

// The generated Python client's findings (thrift_client.py), with its exit
// code.
struct PythonClient {
  int exit_code = -1;
  nlohmann::json out;
};
PythonClient thrift_python(int port, std::vector<std::string> args) {
  std::vector<std::string> argv{"/usr/bin/python3", THRIFT_CLIENT_SCRIPT, std::to_string(port)};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = test::run_process(argv, {{"PYTHONPATH", THRIFT_PY_DIR}});
  return {r.exit_code, nlohmann::json::parse(r.out, nullptr, false)};
}

// Thrift with the token required of callers outside thrift_trusted_networks
// (here: all of them): a connection must call authenticate(token) first.
TEST_F(StreamAuthTest, ThriftCallersOutsideTrustedNetworksAuthenticateWithTheToken) {
  auto server = start(dir, {"--thrift", "127.0.0.1:0", "--bearer-token", "s3cret",
                            "--thrift-trusted-networks", "10.255.255.0/24"});
  const int port = server->listener_port("thrift");
  const PythonClient without = thrift_python(port, {"one"});
  EXPECT_NE(without.out.value("error", "").find("Unauthenticated"), std::string::npos)
      << without.out;
  const PythonClient wrong = thrift_python(port, {"auth", "guess"});
  EXPECT_NE(wrong.out.value("error", "").find("Unauthenticated"), std::string::npos) << wrong.out;
  const PythonClient right = thrift_python(port, {"auth", "s3cret"});
  EXPECT_GT(right.out.value("id", std::int64_t{0}), 0) << right.out;
}

// Before: Thrift had no authentication and 150 idle connections reset every
// real client. Now, with the token required, 100 idle connections from one
// address hold at most half the unauthenticated share (5 of 100), each new
// one closing the oldest, until thrift_auth_timeout_ms.
TEST_F(StreamAuthTest, IdleThriftConnectionsDoNotKeepTheGeneratedClientOut) {
  auto server = start(
      dir, {"--thrift", "127.0.0.1:0", "--bearer-token", "s3cret", "--thrift-trusted-networks",
            "10.255.255.0/24", "--thrift-max-connections", std::to_string(kFlood)});
  const int port = server->listener_port("thrift");
  const auto flood = idle_connections(port, kFlood, "");
  EXPECT_TRUE(admitted(
      "the Thrift client",
      [&] {
        return thrift_python(port, {"auth", "s3cret"}).out.value("id", std::int64_t{0}) > 0;
      }))
      << "the Thrift client was kept out for " << kAdmittedWithin.count() << " s";
  expect_flood_counted(*server, "thrift");
}

}  // namespace
}  // namespace snowid
