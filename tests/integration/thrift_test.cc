// snowidd's Thrift listener (Twitter Snowflake's service) over real sockets:
// the Python client Debian's thrift-compiler generates from the IDL, the
// C++ client it generates, and hostile byte streams.
#include <gtest/gtest.h>
#include <thrift/TApplicationException.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "Snowflake.h"
#include "faketime.h"
#include "id_checks.h"
#include "missing.h"
#include "server_process.h"
#include "snowid/decode.h"
#include "snowid/layout.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::ServerProcess;

std::unique_ptr<ServerProcess> start(const test::TempDir& dir, std::vector<std::string> args = {},
                                     const std::map<std::string, std::string>& env = {}) {
  args.insert(args.end(), {"--thrift", "127.0.0.1:0", "--state-dir", dir.file("state")});
  auto server = std::make_unique<ServerProcess>(SNOWIDD_PATH, args, env);
  EXPECT_TRUE(server->started()) << server->log();
  return server;
}

// The generated Python client's findings (thrift_client.py).
nlohmann::json python_client(int port, const std::string& mode) {
  const auto r =
      test::run_process({"/usr/bin/python3", THRIFT_CLIENT_SCRIPT, std::to_string(port), mode},
                        {{"PYTHONPATH", THRIFT_PY_DIR}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// A connection of the generated C++ client.
struct CppClient {
  explicit CppClient(int port)
      : socket(std::make_shared<apache::thrift::transport::TSocket>("127.0.0.1", port)),
        transport(std::make_shared<apache::thrift::transport::TFramedTransport>(socket)),
        client(std::make_shared<apache::thrift::protocol::TBinaryProtocol>(transport)) {
    socket->setRecvTimeout(10000);
    transport->open();
  }
  std::shared_ptr<apache::thrift::transport::TSocket> socket;
  std::shared_ptr<apache::thrift::transport::TTransport> transport;
  thrift::SnowflakeClient client;
};

constexpr std::chrono::seconds kAnswerWait{5};

// One framed answer's payload from `raw`; "" if none came within 5 s.
std::string receive_frame(test::RawSocket& raw) {
  const auto frame_length = [](const std::string& bytes) {
    const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
    return (std::size_t{b[0]} << 24) | (std::size_t{b[1]} << 16) | (std::size_t{b[2]} << 8) | b[3];
  };
  const auto whole = [&](const std::string& got) {
    return got.size() >= 4 && got.size() >= 4 + frame_length(got);
  };
  if (!raw.read_until(whole, kAnswerWait)) return "";
  std::string payload = raw.received().substr(4, frame_length(raw.received()));
  raw.received().erase(0, 4 + payload.size());
  return payload;
}

std::string frame(const std::string& payload) {
  const auto n = static_cast<std::uint32_t>(payload.size());
  std::string out{static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                  static_cast<char>(n)};
  return out + payload;
}

class ThriftTest : public ::testing::Test {
 protected:
  test::TempDir dir;
};

TEST_F(ThriftTest, TheGeneratedPythonClientCallsEveryMethod) {
  auto server = start(dir, {"--datacenter-id", "7", "--worker-id", "19"});
  const int port = server->listener_port("thrift");
  ASSERT_GT(port, 0) << server->log();
  const auto got = python_client(port, "all");
  ASSERT_TRUE(got.is_object());
  EXPECT_EQ(got["worker_id"], 19);
  EXPECT_EQ(got["datacenter_id"], 7);
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  EXPECT_LE(std::abs(got["timestamp"].get<std::int64_t>() - now), 10000);
  std::vector<Id> ids;
  for (const auto& id : got["ids"]) ids.push_back(id.get<Id>());
  ids.push_back(got["after"].get<Id>());
  ASSERT_EQ(ids.size(), 201u);
  EXPECT_EQ(test::check_unique_and_increasing({ids}), "");
  const IdFields fields = *decode(*resolve(LayoutSpec{}), ids.front());
  EXPECT_EQ(fields.datacenter, 7u);
  EXPECT_EQ(fields.worker, 19u);
  // A bad agent: a Thrift application exception naming Twitter's exception.
  EXPECT_EQ(got["bad_agent"]["error_type"], 0) << got.dump();
  EXPECT_NE(got["bad_agent"]["error"].get<std::string>().find("InvalidUserAgentError: agent"),
            std::string::npos)
      << got.dump();
  EXPECT_NE(got["empty_agent"]["error"].get<std::string>().find("InvalidUserAgentError"),
            std::string::npos)
      << got.dump();
  // Counted under the agent and the protocol.
  const std::string metrics = test::http_get(server->port(), "/metrics").body;
  EXPECT_NE(metrics.find("snowid_ids_issued_total{agent=\"python-client\"} 201"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find(
                "snowid_requests_total{protocol=\"thrift\",call=\"next_id\",outcome=\"ok\"} 201"),
            std::string::npos);
  EXPECT_NE(metrics.find("protocol=\"thrift\",call=\"next_id\",outcome=\"invalid_argument\"} 2"),
            std::string::npos);
  const auto info = nlohmann::json::parse(test::http_get(server->port(), "/v1/info").body);
  EXPECT_EQ(info["thrift"], "127.0.0.1:" + std::to_string(port)) << info.dump();
}

TEST_F(ThriftTest, AClockSteppedBackIsRefusedAsInvalidSystemClock) {
  test::FaketimeControl clock;
  if (!clock.available()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  auto server = start(dir, {"--clock-policy", "reject"}, clock.env());
  const int port = server->listener_port("thrift");
  ASSERT_TRUE(python_client(port, "one").contains("id"));
  clock.set_offset(std::chrono::milliseconds{-60000});
  const auto refused = python_client(port, "one");
  ASSERT_TRUE(refused.contains("error")) << refused.dump();
  EXPECT_NE(refused["error"].get<std::string>().find("InvalidSystemClock: "), std::string::npos)
      << refused.dump();
  clock.set_offset(std::chrono::milliseconds{0});
  EXPECT_TRUE(python_client(port, "one").contains("id"));
}

// Many C++ clients at once: no ID twice, all counted.
TEST_F(ThriftTest, ConcurrentClientsNeverShareAnId) {
  auto server = start(dir);
  const int port = server->listener_port("thrift");
  std::vector<std::vector<Id>> per_client(6);
  std::vector<std::thread> clients;
  for (auto& mine : per_client) {
    clients.emplace_back([port, &mine] {
      CppClient c(port);
      for (int i = 0; i < 3000; ++i) mine.push_back(static_cast<Id>(c.client.get_id("cpp")));
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(test::check_unique_and_increasing(per_client), "");
  EXPECT_NE(test::http_get(server->port(), "/metrics")
                .body.find("snowid_ids_issued_total{agent=\"cpp\"} 18000"),
            std::string::npos);
}

TEST_F(ThriftTest, AnUnknownMethodIsAnApplicationExceptionAndTheConnectionGoesOn) {
  auto server = start(dir);
  const int port = server->listener_port("thrift");
  // A call of "get_nothing" (binary protocol, strict): version|CALL, name, seqid, empty struct.
  std::string call = std::string("\x80\x01\x00\x01", 4) + std::string("\x00\x00\x00\x0b", 4) +
                     "get_nothing" + std::string("\x00\x00\x00\x01", 4) + std::string(1, '\0');
  CppClient c(port);
  test::RawSocket raw(port);
  ASSERT_TRUE(raw.send(frame(call)));
  const std::string answer = receive_frame(raw);
  // version|EXCEPTION (3), then TApplicationException{message, type UNKNOWN_METHOD (1)}.
  ASSERT_GE(answer.size(), 4u);
  EXPECT_EQ(answer.substr(0, 4), std::string("\x80\x01\x00\x03", 4));
  EXPECT_NE(answer.find("Invalid method name: 'get_nothing'"), std::string::npos) << answer;
  // The same connection goes on: a real call of get_worker_id.
  ASSERT_TRUE(
      raw.send(frame(std::string("\x80\x01\x00\x01\x00\x00\x00\x0dget_worker_id"
                                 "\x00\x00\x00\x02\x00",
                                 26))));
  EXPECT_NE(receive_frame(raw).find("get_worker_id"), std::string::npos);
  EXPECT_GT(c.client.get_id("after"), 0);
}

TEST_F(ThriftTest, HostileStreamsAreClosedAndServingGoesOn) {
  auto server = start(dir, {"--thrift-max-frame-bytes", "1024"});
  const int port = server->listener_port("thrift");
  const std::vector<std::string> hostile{
      // Unframed (buffered transport): its first word reads as a 2 GB frame.
      std::string("\x80\x01\x00\x01\x00\x00\x00\x06get_id", 14),
      // A frame longer than thrift_max_frame_bytes.
      std::string("\x00\x00\x10\x00", 4) + std::string(100, 'x'),
      // A zero-length frame.
      std::string(4, '\0'),
      // A frame of garbage.
      frame("garbage, not a Thrift message"),
      // A string claiming 2 GB inside a small frame.
      frame(std::string("\x80\x01\x00\x01\x00\x00\x00\x06get_id\x00\x00\x00\x01"
                        "\x0b\x00\x01\x7f\xff\xff\xff",
                        25)),
      // A reply sent to the server.
      frame(std::string("\x80\x01\x00\x02\x00\x00\x00\x06get_id\x00\x00\x00\x01\x00", 19)),
  };
  for (const std::string& bytes : hostile) {
    test::RawSocket raw(port);
    ASSERT_TRUE(raw.send(bytes));
    EXPECT_TRUE(raw.closed_by_peer(kAnswerWait)) << testing::PrintToString(bytes);
  }
  CppClient c(port);
  EXPECT_GT(c.client.get_id("after"), 0);
  EXPECT_NE(server->log().find("thrift"), std::string::npos);
}

TEST_F(ThriftTest, IdleConnectionsAreClosedAtTheIdleTimeout) {
  auto server = start(dir, {"--thrift-idle-timeout-ms", "300"});
  test::RawSocket raw(server->listener_port("thrift"));
  EXPECT_TRUE(raw.closed_by_peer(kAnswerWait));
}

TEST_F(ThriftTest, ConnectionsBeyondTheLimitAreClosed) {
  auto server = start(dir, {"--thrift-max-connections", "2"});
  const int port = server->listener_port("thrift");
  CppClient first(port);
  CppClient second(port);
  EXPECT_GT(first.client.get_id("a"), 0);
  EXPECT_GT(second.client.get_id("a"), 0);
  test::RawSocket third(port);
  EXPECT_TRUE(third.closed_by_peer(kAnswerWait));
  EXPECT_NE(test::http_get(server->port(), "/metrics")
                .body.find("snowid_thrift_refused_connections_total 1"),
            std::string::npos);
}

// A token protects Thrift as every listener. Clients built for Twitter's
// service cannot send one, so callers from thrift_trusted_networks (this
// machine by default) are trusted; any other caller first calls snowid's
// authenticate(token), and every other call before it is refused.
TEST_F(ThriftTest, ATokenIsAskedOfCallersOutsideTheTrustedNetworks) {
  const auto anywhere = test::run_process(
      {SNOWIDD_PATH, "--bearer-token", "secret", "--thrift", "0.0.0.0:7609", "--check-config"});
  EXPECT_EQ(anywhere.exit_code, 0) << anywhere.err;
  const auto bad =
      test::run_process({SNOWIDD_PATH, "--thrift", "127.0.0.1:7609", "--thrift-trusted-networks",
                         "10.0.0.0/33", "--check-config"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("thrift_trusted_networks"), std::string::npos) << bad.err;
  {
    // On loopback, trusted by default: the token-less client gets IDs.
    auto server = start(dir, {"--bearer-token", "secret"});
    CppClient c(server->listener_port("thrift"));
    EXPECT_GT(c.client.get_id("trusted"), 0);
  }
  auto server = start(
      dir, {"--bearer-token", "secret", "--thrift-trusted-networks", "10.255.255.0/24, fd00::/8"});
  CppClient c(server->listener_port("thrift"));
  try {
    c.client.get_id("untrusted");
    ADD_FAILURE() << "get_id answered before authenticate";
  } catch (const apache::thrift::TApplicationException& e) {
    EXPECT_NE(std::string(e.what()).find("Unauthenticated"), std::string::npos) << e.what();
  }
  EXPECT_THROW(c.client.authenticate("guess"), apache::thrift::TApplicationException);
  c.client.authenticate("secret");
  EXPECT_GT(c.client.get_id("untrusted"), 0);
  EXPECT_GT(c.client.get_worker_id(), -1);
  // Options of an off listener are refused, not ignored.
  const auto stray =
      test::run_process({SNOWIDD_PATH, "--thrift-max-connections", "5", "--check-config"});
  EXPECT_EQ(stray.exit_code, 2);
  EXPECT_NE(stray.err.find("thrift = \"ADDR:PORT\""), std::string::npos) << stray.err;
}

}  // namespace
}  // namespace snowid
