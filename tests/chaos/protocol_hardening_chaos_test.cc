// Clients and neighbours on the wire (issue "Hardening", items 13, 14, 16,
// 17 and 18): the bearer token is checked before anything else on gRPC and
// compared alike on both APIs, a gRPC count beyond 32 bits is refused rather
// than cut, the token can come from a file, a gRPC port in use is one line
// and exit 2, a cluster node publishes the ports it bound, and the peer clock
// check allows for the age of each peer's published reading.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "chaos.h"
#include "etcd_coordinator.h"
#include "etcd_process.h"
#include "faketime.h"
#include "missing.h"
#include "server_process.h"
#include "snowid/layout.h"
#include "snowid/v1/snowid.grpc.pb.h"
#include "subprocess.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class ProtocolHardening : public test::ChaosTest {
 protected:
  static std::unique_ptr<v1::IdService::Stub> stub_for(const test::ServerProcess& server) {
    return v1::IdService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server.grpc_port()), grpc::InsecureChannelCredentials()));
  }

  static std::unique_ptr<grpc::ClientContext> context(const std::string& authorization = "") {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + seconds{10});
    if (!authorization.empty()) c->AddMetadata("authorization", authorization);
    return c;
  }

  // Counts one answer in the record, and a refusal if it was one.
  void note(bool refused) {
    ++scenario.record.answers;
    if (refused) ++scenario.record.refused;
  }
};

TEST_F(ProtocolHardening, BearerTokenFirstAndAlikeOnBothApis) {
  scenario.describe(
      "hardening/13/grpc_token_first",
      "gRPC reported a bad count before a missing token, compared tokens with !=, and cut "
      "a count above 2^32 to its low bits; the token could only be given as a flag",
      "snowidd --token-file FILE; NextIds with no token and count 0, with the token and "
      "count 2^32 + 5; 'bearer' and 'BEARER' as the scheme on both APIs",
      "UNAUTHENTICATED before anything else; RESOURCE_EXHAUSTED for 2^32 + 5 (above "
      "max_batch, as every count beyond it); the scheme name in any case; a missing or empty "
      "token file stops the start (exit 2)");
  const std::string token_file = scenario.dir.file("token");
  std::ofstream(token_file) << "s3cret\n";
  test::ServerProcess server(SNOWIDD_PATH, {"--token-file", token_file, "--state-dir",
                                            scenario.dir.file("state"), "--max-batch", "100"});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_EQ(server.log().find("s3cret"), std::string::npos) << "the token was logged";
  auto stub = stub_for(server);
  v1::NextIdsRequest request;
  v1::NextIdsResponse response;
  request.set_count(0);
  auto status = stub->NextIds(context().get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  note(true);
  request.set_count((std::uint64_t{1} << 32) + 5);
  status = stub->NextIds(context("Bearer s3cret").get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_EQ(response.ids_size(), 0);
  note(true);
  request.set_count(5);
  for (const char* scheme : {"bearer s3cret", "BEARER s3cret", "Bearer s3cret"}) {
    status = stub->NextIds(context(scheme).get(), request, &response);
    EXPECT_TRUE(status.ok()) << scheme << ": " << status.error_message();
    EXPECT_EQ(
        test::http_get(server.port(), "/v1/id", {std::string("Authorization: ") + scheme}).status,
        200)
        << scheme;
    note(false);
  }
  status = stub->NextIds(context("Bearer s3cre").get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  note(true);

  const std::string empty = scenario.dir.file("empty-token");
  std::ofstream(empty).flush();
  for (const std::string& bad : {empty, scenario.dir.file("no-such-token"), scenario.dir.path()}) {
    auto refused = test::run_process({SNOWIDD_PATH, "--token-file", bad, "--check-config"});
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_NE(refused.err.find(bad), std::string::npos) << refused.err;
    note(true);
  }
}

TEST_F(ProtocolHardening, WaitingForTheClockHoldsNoIoThread) {
  scenario.describe(
      "hardening/9/wait_policy_keeps_io_thread_free",
      "under the wait policy, a request waiting for the clock held its I/O thread: "
      "/healthz on the same thread hung behind it; max_wait_ms was allowed up to a day",
      "snowidd --clock-policy wait --max-wait-ms 8000 --io-threads 1; libfaketime steps "
      "the clock back 3 s; GET /v1/id, and GET /healthz and /readyz meanwhile; "
      "--max-wait-ms 20000",
      "/healthz answers within 500 ms while /v1/id waits about 3 s and then serves an ID "
      "above the earlier ones; max_wait_ms above 10000 stops the start (exit 2)");
  test::FaketimeControl clock;
  if (!clock.available()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  test::ServerProcess server(SNOWIDD_PATH,
                             {"--clock-policy", "wait", "--max-wait-ms", "8000", "--io-threads",
                              "1", "--state-dir", scenario.dir.file("state")},
                             clock.env());
  ASSERT_TRUE(server.started()) << server.log();
  const auto before = test::http_get(server.port(), "/v1/id");
  ASSERT_EQ(before.status, 200);
  clock.set_offset(milliseconds{-3000});
  // Past the millisecond of the last ID, so that the step is what the next
  // request meets (a reading may be reused within its millisecond).
  std::this_thread::sleep_for(milliseconds{50});
  std::atomic<int> waited_status{0};
  std::string waited_body;
  const auto sent = std::chrono::steady_clock::now();
  std::thread waiting([&] {
    const auto reply = test::http_get(server.port(), "/v1/id");
    waited_body = reply.body;
    waited_status = reply.status;
  });
  std::this_thread::sleep_for(milliseconds{300});
  for (const char* route : {"/healthz", "/metrics"}) {
    const auto asked = std::chrono::steady_clock::now();
    const auto reply = test::http_get(server.port(), route);
    const auto took = std::chrono::steady_clock::now() - asked;
    EXPECT_EQ(reply.status, 200) << route;
    EXPECT_LT(took, milliseconds{500}) << route << " waited behind the waiting request";
    note(false);
  }
  EXPECT_EQ(waited_status.load(), 0) << "the request did not wait";
  waiting.join();
  const auto waited = std::chrono::steady_clock::now() - sent;
  EXPECT_EQ(waited_status.load(), 200) << waited_body;
  EXPECT_GE(waited, milliseconds{2500});
  scenario.record.recovery_ms = std::chrono::duration_cast<milliseconds>(waited).count();
  note(false);
  EXPECT_GT(waited_body, before.body);  // {"id":"..."}: same length, so text order is ID order
  auto refused = test::run_process(
      {SNOWIDD_PATH, "--max-wait-ms", "20000", "--clock-policy", "wait", "--check-config"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("max_wait_ms"), std::string::npos) << refused.err;
  note(true);
}

TEST_F(ProtocolHardening, HttpFollowsRfc9112WhereItIsNoRisk) {
  scenario.describe(
      "hardening/11_12/http_head_and_targets",
      "HEAD answered 405 with a body on a kept-alive connection; absolute-form targets, an "
      "empty line before the request line, percent-encoded query values, unknown formats "
      "and parameters, and repeated parameters on probes were mishandled",
      "raw requests on kept-alive connections: HEAD on every GET route followed by a GET; "
      "GET http://host/v1/id; CRLF before GET; ?format=%74ext, ?count=%32; format=xml; "
      "/v1/decode/ID?preset=discord; /healthz?a=1&a=1",
      "HEAD: headers only, no ID issued, the next response intact; the RFC forms served; "
      "unknown formats and parameters 400 with a JSON body; probes ignore their query");
  test::ServerProcess server(SNOWIDD_PATH, {"--state-dir", scenario.dir.file("state")});
  ASSERT_TRUE(server.started()) << server.log();
  const int port = server.port();
  test::HttpConnection conn(port);
  for (const char* target : {"/v1/id", "/v1/ids?count=3", "/healthz", "/metrics"}) {
    ASSERT_TRUE(conn.send(std::string("HEAD ") + target + " HTTP/1.1\r\nHost: x\r\n\r\n" +
                          "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    const auto head = conn.read_head();
    EXPECT_EQ(head.status, 200) << target;
    const auto next = conn.read();
    EXPECT_EQ(next.status, 200) << target;
    EXPECT_NE(next.body.find("ok"), std::string::npos) << target << ": " << next.body;
    note(false);
  }
  const auto expect = [&](const std::string& raw, int status, const std::string& says) {
    const auto reply = test::http_raw(port, raw);
    EXPECT_EQ(reply.status, status) << raw << reply.body;
    EXPECT_NE(reply.body.find(says), std::string::npos) << raw << reply.body;
    note(status != 200);
  };
  expect("GET http://snowid.example/v1/id HTTP/1.1\r\nHost: snowid.example\r\n\r\n", 200, "\"id\"");
  expect("\r\nGET /v1/id HTTP/1.1\r\nHost: x\r\n\r\n", 200, "\"id\"");
  const auto text = test::http_get(port, "/v1/id?format=%74ext");
  EXPECT_EQ(text.headers.at("content-type").rfind("text/plain", 0), 0u) << text.body;
  note(false);
  const auto two = test::http_get(port, "/v1/ids?count=%32&format=text");
  EXPECT_EQ(test::split_lines(two.body).size(), 2u) << two.body;
  note(false);
  expect("GET /v1/id?format=xml HTTP/1.1\r\nHost: x\r\n\r\n", 400, "format 'xml'");
  expect("GET /v1/decode/910499571847892992?preset=discord HTTP/1.1\r\nHost: x\r\n\r\n", 400,
         "unknown query parameter 'preset'");
  expect("GET /v1/id?count=%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "hexadecimal");
  expect("GET /healthz?a=1&a=1 HTTP/1.1\r\nHost: x\r\n\r\n", 200, "ok");
  expect("GET /metrics?x HTTP/1.1\r\nHost: x\r\n\r\n", 200, "snowid_ready");
  EXPECT_NE(test::metric(port, "snowid_ids_issued_total{agent=\"none\"}"), -1);
}

TEST_F(ProtocolHardening, IdleGrpcConnectionsTakeNoDescriptorsFromTheRest) {
  scenario.describe(
      "hardening/7/grpc_idle_connections_under_1024_descriptors",
      "1,200 connections that only send the HTTP/2 preface to the gRPC port of a snowidd "
      "whose open-file limit is 1024",
      "prlimit --nofile=1024:1024 snowidd; 1,200 TCP connections to the gRPC port each "
      "sending the preface and holding; GET /v1/id over HTTP meanwhile",
      "every /v1/id answers 200 throughout; the state file keeps being written (no write "
      "failure, the mark advances); gRPC connections beyond its share are refused and "
      "counted; the budget is logged");
  rlimit files{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &files), 0);
  files.rlim_cur = std::max<rlim_t>(files.rlim_cur, std::min<rlim_t>(files.rlim_max, 4096));
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &files), 0);
  if (files.rlim_cur < 1400) {
    SNOWID_SKIP_MISSING("an open-file limit of 1400 (this test needs 1400 descriptors of its own)");
  }
  test::ServerProcess server("/usr/bin/prlimit", {"--nofile=1024:1024", SNOWIDD_PATH, "--state-dir",
                                                  scenario.dir.file("state")});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_NE(server.log().find("descriptors: open-file limit 1024"), std::string::npos)
      << server.log();
  const double mark_before = test::metric(server.port(), "snowid_high_water_timestamp_seconds");
  std::vector<int> idle;
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  int http_failures = 0;
  for (int i = 0; i < 1200; ++i) {
    const int fd = test::connect_loopback(server.grpc_port());
    if (fd >= 0) {
      (void)::send(fd, preface.data(), preface.size(), MSG_NOSIGNAL);
      idle.push_back(fd);
    }
    if (i % 50 == 0) {
      const auto reply = test::http_get(server.port(), "/v1/id");
      if (reply.status != 200) ++http_failures;
      note(reply.status != 200);
    }
  }
  // Hold them while HTTP keeps being asked and the mark has to move on.
  for (int i = 0; i < 40; ++i) {
    const auto reply = test::http_get(server.port(), "/v1/id");
    if (reply.status != 200) ++http_failures;
    note(reply.status != 200);
    std::this_thread::sleep_for(milliseconds{50});
  }
  EXPECT_EQ(http_failures, 0) << server.log();
  EXPECT_EQ(test::metric(server.port(), "snowid_state_write_failures_total"), 0.0);
  EXPECT_GT(test::metric(server.port(), "snowid_high_water_timestamp_seconds"), mark_before + 1.0);
  EXPECT_GT(test::metric(server.port(), "snowid_grpc_refused_connections_total"), 0.0);
  EXPECT_EQ(test::http_get(server.port(), "/readyz").status, 200);
  for (int fd : idle) ::close(fd);
  // Once they are gone, gRPC serves again.
  ASSERT_TRUE(test::wait_until(
      [&] { return test::metric(server.port(), "snowid_grpc_open_connections") < 10; },
      seconds{5}));
  auto stub = stub_for(server);
  v1::NextIdResponse one;
  EXPECT_TRUE(stub->NextId(context().get(), v1::NextIdRequest{}, &one).ok());
  note(false);
}

TEST_F(ProtocolHardening, GrpcPortInUseIsOneLine) {
  scenario.describe("hardening/18/grpc_port_in_use", "the gRPC port is taken by another process",
                    "snowidd --grpc on the port of a listening socket (and --http likewise)",
                    "exit 2 with one line naming the address and the system's reason");
  test::ServerProcess holder(SNOWIDD_PATH, {"--state-dir", scenario.dir.file("holder")});
  ASSERT_TRUE(holder.started()) << holder.log();
  for (const auto& [flag, port] : {std::pair<std::string, int>{"--grpc", holder.grpc_port()},
                                   std::pair<std::string, int>{"--http", holder.port()}}) {
    std::vector<std::string> argv{SNOWIDD_PATH,
                                  "--state-dir",
                                  scenario.dir.file("second"),
                                  flag == "--grpc" ? "--http" : "--grpc",
                                  "127.0.0.1:0",
                                  flag,
                                  "127.0.0.1:" + std::to_string(port)};
    auto result = test::run_process(argv);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_EQ(test::split_lines(result.err).size(), 1u) << result.err;
    EXPECT_NE(result.err.find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << result.err;
    EXPECT_NE(result.err.find("Address already in use"), std::string::npos) << result.err;
    note(true);
  }
}

TEST_F(ProtocolHardening, ClusterNodesPublishBoundPortsAndAgeCorrectPeerClocks) {
  scenario.describe(
      "hardening/14_17/cluster_ports_and_peer_clock_age",
      "`snowid cluster list` showed the configured port 0; the peer clock check compared "
      "against readings up to a refresh interval old, so a node 9.5 s off looked 11.7 s "
      "off and was refused under a 10 s bound",
      "two etcd-mode nodes on port 0, the second with libfaketime -9.5 s, then a third "
      "with -20 s",
      "the listed addresses are the bound ports; the -9.5 s node starts; the -20 s node "
      "is refused saying how old the samples were");
  const std::string faketime = test::faketime_library();
  if (faketime.empty()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  test::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  ASSERT_EQ(etcd.mark_new_cluster("c"), "");
  const std::vector<std::string> cluster{"--coordinator",
                                         "etcd",
                                         "--etcd-endpoints",
                                         etcd.endpoint(0),
                                         "--cluster",
                                         "c",
                                         "--lease-ttl-s",
                                         "2",
                                         "--lease-safety-margin-ms",
                                         "500"};
  auto node = [&](const std::string& name, const std::string& offset, int worker) {
    std::vector<std::string> args = cluster;
    args.insert(args.end(), {"--state-dir", scenario.dir.file(name), "--worker-id",
                             std::to_string(worker), "--claim-timeout-ms", "25000"});
    std::map<std::string, std::string> env;
    if (!offset.empty()) {
      env = {{"LD_PRELOAD", faketime}, {"FAKETIME", offset}, {"FAKETIME_DONT_FAKE_MONOTONIC", "1"}};
    }
    return std::make_unique<test::ServerProcess>(SNOWIDD_PATH, args, env);
  };
  auto first = node("first", "", 0);
  ASSERT_TRUE(first->started()) << first->log();
  EtcdOptions options;
  options.endpoints = etcd.endpoints();
  options.cluster = "c";
  options.layout = *preset("twitter");
  const std::string http = "http 127.0.0.1:" + std::to_string(first->port());
  const std::string grpc = "grpc 127.0.0.1:" + std::to_string(first->grpc_port());
  EXPECT_TRUE(test::wait_until(
      [&] {
        auto nodes = list_cluster(options);
        if (!nodes.ok()) return false;
        for (const auto& n : *nodes) {
          if (n.node_id == 0) return n.addresses == http + "," + grpc;
        }
        return false;
      },
      seconds{5}))
      << "published: " << [&] {
           auto nodes = list_cluster(options);
           return nodes.ok() && !nodes->empty() ? nodes->front().addresses : std::string("-");
         }();
  note(false);
  // Let the first node's published reading age (it is refreshed every ~2.2 s).
  std::this_thread::sleep_for(milliseconds{1500});
  auto close_enough = node("close", "-9.5", 1);
  EXPECT_TRUE(close_enough->started()) << close_enough->log();
  note(!close_enough->started());
  auto too_far = node("far", "-20", 2);
  EXPECT_FALSE(too_far->started());
  EXPECT_NE(too_far->log().find("s old"), std::string::npos) << too_far->log();
  note(true);
}

}  // namespace
}  // namespace snowid
