// snowidd's audit log, checked by the real `snowid check --audit`: every ID
// sent over HTTP, gRPC, Thrift and RESP is covered, across kill -9 and restarts; a log
// that cannot be opened stops the start; a write that fails answers 503
// and lets no unaudited ID out.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "Snowflake.h"
#include "resp_ids.h"
#include "server_process.h"
#include "snowid/decode.h"
#include "snowid/v1/snowid.grpc.pb.h"
#include "subprocess.h"

namespace snowid {
namespace {

namespace v1 = ::snowid::v1;
using test::http_get;
using test::HttpReply;
using test::ProcessResult;
using test::ServerProcess;

// IDs a client received, each with the name of the source (route) it came from.
struct Received {
  std::vector<std::pair<std::string, Id>> ids;

  void add_json(const std::string& source, const HttpReply& r) {
    ASSERT_EQ(r.status, 200) << r.body;
    const auto json = nlohmann::json::parse(r.body);
    if (json.contains("id")) ids.emplace_back(source, *parse_id(json["id"].get<std::string>()));
    if (json.contains("ids")) {
      for (const auto& s : json["ids"]) ids.emplace_back(source, *parse_id(s.get<std::string>()));
    }
  }
  void add_text(const std::string& source, const HttpReply& r) {
    ASSERT_EQ(r.status, 200) << r.body;
    for (const auto& line : test::split_lines(r.body)) ids.emplace_back(source, *parse_id(line));
  }
  // "source<TAB>id" lines, the input `snowid check` reads.
  void write(const std::string& path) const {
    std::ofstream out(path);
    for (const auto& [source, id] : ids) out << source << '\t' << id << '\n';
  }
};

class AuditTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::string log_path = dir.file("audit.log");
  std::unique_ptr<ServerProcess> server;

  void start(std::vector<std::string> args = {}) {
    for (const char* arg : {"--audit-log", log_path.c_str()}) args.emplace_back(arg);
    args.push_back("--state-dir");
    args.push_back(dir.file("state"));
    server = std::make_unique<ServerProcess>(SNOWIDD_PATH, args);
    ASSERT_TRUE(server->started()) << server->log();
  }
  std::unique_ptr<v1::IdService::Stub> grpc_stub() const {
    return v1::IdService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server->grpc_port()), grpc::InsecureChannelCredentials()));
  }
  static std::unique_ptr<grpc::ClientContext> context() {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{10});
    return c;
  }
  // The real `snowid check --audit <log> <received>`.
  ProcessResult check(const Received& received, const std::string& audit_log = "") const {
    const std::string ids = dir.file("received.txt");
    received.write(ids);
    return test::run_process(
        {SNOWID_CLI_PATH, "check", "--audit", audit_log.empty() ? log_path : audit_log, ids});
  }
  long metric(const std::string& name) const {
    const std::string body = http_get(server->port(), "/metrics").body;
    std::smatch m;
    if (!std::regex_search(body, m, std::regex("\n" + name + " ([0-9]+)"))) return -1;
    return std::stol(m[1]);
  }
};

TEST_F(AuditTest, EveryIdSentOverEveryProtocolIsAudited) {
  start({"--thrift", "127.0.0.1:0", "--resp", "127.0.0.1:0"});
  const int port = server->port();
  Received received;
  for (int i = 0; i < 30; ++i) received.add_json("http-id", http_get(port, "/v1/id"));
  // 5000 IDs take two time units at least: one record per block.
  for (int i = 0; i < 5; ++i) received.add_json("http-ids", http_get(port, "/v1/ids?count=5000"));
  received.add_text("http-text", http_get(port, "/v1/ids?count=100&format=text"));
  for (int i = 0; i < 20; ++i) {
    const HttpReply r = http_get(port, "/api/snowflake/get/orders");
    ASSERT_EQ(r.status, 200);
    received.ids.emplace_back("leaf", *parse_id(r.body));
  }
  auto stub = grpc_stub();
  for (int i = 0; i < 30; ++i) {
    v1::NextIdResponse one;
    ASSERT_TRUE(stub->NextId(context().get(), v1::NextIdRequest{}, &one).ok());
    received.ids.emplace_back("grpc-id", static_cast<Id>(one.id()));
  }
  v1::NextIdsRequest request;
  request.set_count(3000);
  for (int i = 0; i < 5; ++i) {
    v1::NextIdsResponse many;
    ASSERT_TRUE(stub->NextIds(context().get(), request, &many).ok());
    for (auto id : many.ids()) received.ids.emplace_back("grpc-ids", static_cast<Id>(id));
  }
  // Twitter's Thrift service, through the C++ client thrift-compiler generates.
  {
    const int thrift_port = std::stoi(test::digits_after(server->log(), "thrift 127.0.0.1:"));
    auto socket = std::make_shared<apache::thrift::transport::TSocket>("127.0.0.1", thrift_port);
    auto transport = std::make_shared<apache::thrift::transport::TFramedTransport>(socket);
    thrift::SnowflakeClient client(
        std::make_shared<apache::thrift::protocol::TBinaryProtocol>(transport));
    transport->open();
    for (int i = 0; i < 25; ++i) received.ids.emplace_back("thrift", client.get_id("audited"));
  }
  // The Redis protocol, through hiredis.
  {
    const int resp_port = std::stoi(test::digits_after(server->log(), "resp 127.0.0.1:"));
    redisContext* redis = redisConnect("127.0.0.1", resp_port);
    ASSERT_TRUE(redis != nullptr && redis->err == 0);
    for (int i = 0; i < 12; ++i) {
      auto* reply =
          static_cast<redisReply*>(redisCommand(redis, i < 10 ? "SNOWID.ID" : "SNOWID.IDS 500"));
      ASSERT_TRUE(reply != nullptr);
      std::vector<Id> ids;
      test::append_resp_ids(reply, ids);
      for (Id id : ids) received.ids.emplace_back(i < 10 ? "resp-id" : "resp-ids", id);
      freeReplyObject(reply);
    }
    redisFree(redis);
  }
  ASSERT_EQ(received.ids.size(), 30u + 25000 + 100 + 20 + 30 + 15000 + 25 + 10 + 1000);

  ProcessResult r = check(received);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("from 9 sources"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 incarnation,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("missing           0"), std::string::npos) << r.out;

  // One record per single-ID request, at least one per block of the batches.
  const long records = metric("snowid_audit_records_total");
  EXPECT_GE(records, 30 + 5 * 2 + 1 + 20 + 30 + 5 + 25 + 10 + 2);
  EXPECT_EQ(metric("snowid_audit_write_errors_total"), 0);
  const auto info = nlohmann::json::parse(http_get(port, "/v1/info").body);
  EXPECT_EQ(info["audit_log"]["path"], log_path);
  const std::string incarnation = info["audit_log"]["incarnation"];
  const std::string log = test::read_file(log_path);
  EXPECT_NE(log.find("# snowid-audit v1 incarnation=" + incarnation), std::string::npos) << log;
  EXPECT_EQ(static_cast<long>(test::split_lines(log).size()), records + 1);

  // Without the record of the first /v1/id answer, the check must fail.
  const std::string first = std::to_string(received.ids.front().second);
  std::string trimmed;
  for (const auto& line : test::split_lines(log)) {
    if (line.find(" " + first + " " + first) == std::string::npos) trimmed += line + "\n";
  }
  ASSERT_LT(trimmed.size(), log.size());
  std::ofstream(dir.file("trimmed.log")) << trimmed;
  r = check(received, dir.file("trimmed.log"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("missing           1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  " + first + " ("), std::string::npos) << r.out;
}

// Records reach the kernel before the response is sent, so a kill -9 in
// the middle of load loses none that a client saw; a restart appends a new
// incarnation to the same log.
TEST_F(AuditTest, KillNineAndRestartLoseNoRecord) {
  Received received;
  start();
  std::atomic<bool> stop{false};
  std::thread load([&] {
    test::HttpConnection conn(server->port());
    while (!stop) {
      if (!conn.send("GET /v1/ids?count=100 HTTP/1.1\r\nHost: x\r\n\r\n")) break;
      const HttpReply r = conn.read();
      if (r.status != 200) break;
      received.add_json("before", r);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  server->signal(SIGKILL);
  stop = true;
  load.join();
  ASSERT_GT(received.ids.size(), 1000u);
  server->wait();

  start();
  for (int i = 0; i < 10; ++i) {
    received.add_json("after", http_get(server->port(), "/v1/ids?count=10"));
  }
  const ProcessResult r = check(received);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 incarnations,"), std::string::npos) << r.out;
}

TEST_F(AuditTest, AnAuditLogThatCannotBeOpenedStopsTheStart) {
  const std::string state = dir.file("state");
  for (const std::string& path : {dir.file("no-such-dir/audit.log"), dir.path()}) {
    const ProcessResult r =
        test::run_process({SNOWIDD_PATH, "--audit-log", path, "--state-dir", state, "--http",
                           "127.0.0.1:0", "--grpc", "127.0.0.1:0"},
                          {}, std::chrono::seconds{20});
    EXPECT_FALSE(r.timed_out) << "snowidd ran without its audit log";
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("snowidd: audit_log " + path + ": "), std::string::npos) << r.err;
    EXPECT_EQ(test::split_lines(r.err).size(), 1u) << r.err;
  }
  const ProcessResult fsync_alone =
      test::run_process({SNOWIDD_PATH, "--audit-fsync", "true", "--check-config"});
  EXPECT_EQ(fsync_alone.exit_code, 2);
  EXPECT_NE(fsync_alone.err.find("audit_fsync needs audit_log"), std::string::npos)
      << fsync_alone.err;
  const ProcessResult shown = test::run_process(
      {SNOWIDD_PATH, "--audit-log", "/var/log/snowid/audit.log", "--check-config"});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("audit_log = \"/var/log/snowid/audit.log\""), std::string::npos);
  EXPECT_NE(shown.out.find("audit_fsync = \"false\""), std::string::npos);
}

// A file size limit (ulimit -f) makes the audit log's writes fail after a
// few records: from then on requests get 503 / UNAVAILABLE, and every ID a
// client did receive is still covered (the torn last record is dropped).
TEST_F(AuditTest, AFailedWriteAnswers503AndLetsNoUnauditedIdOut) {
  // dash counts ulimit -f in 512-byte blocks: the log may grow to 4 KiB.
  server = std::make_unique<ServerProcess>(
      "/bin/sh", std::vector<std::string>{"-c", "ulimit -f 8 && exec \"$0\" \"$@\"", SNOWIDD_PATH,
                                          "--audit-log", log_path, "--state-dir", dir.file("state"),
                                          "--segment-store", "off"});
  ASSERT_TRUE(server->started()) << server->log();
  Received received;
  HttpReply refused;
  for (int i = 0; i < 1000 && refused.status == 0; ++i) {
    const HttpReply r = http_get(server->port(), "/v1/id");
    if (r.status == 200) {
      received.add_json("http", r);
    } else {
      refused = r;
    }
  }
  ASSERT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(refused.body.find("audit log"), std::string::npos) << refused.body;
  EXPECT_GT(received.ids.size(), 20u);
  EXPECT_EQ(http_get(server->port(), "/v1/ids?count=10").status, 503);
  v1::NextIdResponse one;
  EXPECT_EQ(grpc_stub()->NextId(context().get(), v1::NextIdRequest{}, &one).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_GE(metric("snowid_audit_write_errors_total"), 3);
  EXPECT_EQ(metric("snowid_audit_records_total"), static_cast<long>(received.ids.size()));

  const ProcessResult r = check(received);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("missing           0"), std::string::npos) << r.out;
}

TEST_F(AuditTest, FsyncModeGroupsConcurrentRequests) {
  start({"--audit-fsync", "true"});
  std::vector<Received> per_client(4);
  std::vector<std::thread> clients;
  for (std::size_t c = 0; c < per_client.size(); ++c) {
    clients.emplace_back([this, c, &mine = per_client[c]] {
      test::HttpConnection conn(server->port());
      for (int i = 0; i < 50; ++i) {
        if (!conn.send("GET /v1/id HTTP/1.1\r\nHost: x\r\n\r\n")) return;
        mine.add_json("client-" + std::to_string(c), conn.read());
      }
    });
  }
  for (auto& t : clients) t.join();
  Received all;
  for (const auto& mine : per_client)
    all.ids.insert(all.ids.end(), mine.ids.begin(), mine.ids.end());
  ASSERT_EQ(all.ids.size(), 200u);
  EXPECT_EQ(metric("snowid_audit_records_total"), 200);
  const long fsyncs = metric("snowid_audit_fsyncs_total");
  EXPECT_GT(fsyncs, 0);
  EXPECT_LE(fsyncs, 201);  // the header's too
  const ProcessResult r = check(all);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace snowid
