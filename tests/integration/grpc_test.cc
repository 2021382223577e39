// The real snowidd over gRPC (a generated stub on a real channel), and both
// APIs at once.
#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "Snowflake.h"
#include "chaos.h"  // wait_until
#include "faketime.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "id_checks.h"
#include "missing.h"
#include "resp_ids.h"
#include "server_process.h"
#include "snowid/decode.h"
#include "snowid/v1/snowid.grpc.pb.h"
#include "subprocess.h"

namespace snowid {
namespace {

namespace v1 = ::snowid::v1;
using test::ServerProcess;

class GrpcTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::unique_ptr<ServerProcess> server;
  std::unique_ptr<v1::IdService::Stub> stub;

  void start(std::vector<std::string> args = {}) {
    args.push_back("--state-dir");
    args.push_back(dir.file("state"));
    server = std::make_unique<ServerProcess>(SNOWIDD_PATH, args);
    ASSERT_TRUE(server->started()) << server->log();
    stub = v1::IdService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server->grpc_port()), grpc::InsecureChannelCredentials()));
  }
  static std::unique_ptr<grpc::ClientContext> context(const std::string& token = "") {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{10});
    if (!token.empty()) c->AddMetadata("authorization", "Bearer " + token);
    return c;
  }
};

TEST_F(GrpcTest, NextIdAndNextIds) {
  start();
  v1::NextIdResponse one;
  ASSERT_TRUE(stub->NextId(context().get(), v1::NextIdRequest{}, &one).ok());
  EXPECT_GT(one.id(), 0u);
  v1::NextIdsRequest request;
  request.set_count(1000);
  v1::NextIdsResponse many;
  ASSERT_TRUE(stub->NextIds(context().get(), request, &many).ok());
  ASSERT_EQ(many.ids_size(), 1000);
  EXPECT_GT(many.ids(0), one.id());
  for (int i = 1; i < many.ids_size(); ++i) EXPECT_GT(many.ids(i), many.ids(i - 1));
}

TEST_F(GrpcTest, StatusCodes) {
  start({"--max-batch", "100"});
  v1::NextIdsRequest request;
  v1::NextIdsResponse response;
  request.set_count(0);
  EXPECT_EQ(stub->NextIds(context().get(), request, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // One rule for every count above max_batch, however far.
  for (const std::uint64_t count :
       {std::uint64_t{101}, (std::uint64_t{1} << 32) + 5, std::uint64_t{UINT64_MAX}}) {
    SCOPED_TRACE(count);
    request.set_count(count);
    EXPECT_EQ(stub->NextIds(context().get(), request, &response).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  request.set_count(5);
  request.set_agent("9bad");
  EXPECT_EQ(stub->NextIds(context().get(), request, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::DecodeRequest decode_request;
  v1::DecodeResponse decoded;
  decode_request.set_id(std::uint64_t{1} << 63);
  EXPECT_EQ(stub->Decode(context().get(), decode_request, &decoded).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(GrpcTest, DecodeAndInfo) {
  start({"--worker-id", "5"});
  v1::DecodeRequest request;
  request.set_id(910499571847892992ULL);
  v1::DecodeResponse decoded;
  ASSERT_TRUE(stub->Decode(context().get(), request, &decoded).ok());
  EXPECT_EQ(decoded.timestamp_ms(), 1505914988849);
  EXPECT_EQ(decoded.time(), "2017-09-20T13:43:08.849Z");
  EXPECT_EQ(decoded.datacenter(), 17u);
  EXPECT_EQ(decoded.worker(), 25u);
  v1::InfoResponse info;
  ASSERT_TRUE(stub->Info(context().get(), v1::InfoRequest{}, &info).ok());
  EXPECT_EQ(info.worker_id(), 5u);
  EXPECT_EQ(info.clock_policy(), "monotonic");
  EXPECT_TRUE(nlohmann::json::parse(info.info_json()).contains("layout"));
}

TEST_F(GrpcTest, BearerToken) {
  start({"--bearer-token", "t0ken"});
  v1::NextIdResponse response;
  EXPECT_EQ(stub->NextId(context().get(), v1::NextIdRequest{}, &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(stub->NextId(context("t0ken").get(), v1::NextIdRequest{}, &response).ok());
}

// The token comes first on every method: a caller without it learns
// nothing about its arguments (here each one bad in its own way).
TEST_F(GrpcTest, EveryMethodChecksTheTokenBeforeItsArguments) {
  start({"--bearer-token", "t0ken"});
  v1::NextIdsRequest ids;  // count 0
  v1::NextIdsResponse ids_response;
  EXPECT_EQ(stub->NextIds(context().get(), ids, &ids_response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  v1::NextSegmentIdsRequest segment;  // no tag
  v1::NextSegmentIdsResponse segment_response;
  EXPECT_EQ(stub->NextSegmentIds(context().get(), segment, &segment_response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  v1::DecodeTextRequest text;  // no text
  v1::DecodeTextResponse text_response;
  EXPECT_EQ(stub->DecodeText(context().get(), text, &text_response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  for (const v1::IdKind kind : {v1::ID_KIND_UNSPECIFIED, static_cast<v1::IdKind>(99)}) {
    v1::NextFormattedIdsRequest formatted;
    formatted.set_kind(kind);
    formatted.set_count(1);
    v1::NextFormattedIdsResponse formatted_response;
    const grpc::Status status =
        stub->NextFormattedIds(context().get(), formatted, &formatted_response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << kind << ": " << status.error_message();
    EXPECT_EQ(
        stub->NextFormattedIds(context("t0ken").get(), formatted, &formatted_response).error_code(),
        grpc::StatusCode::INVALID_ARGUMENT);
  }
}

// StreamIds answers each request on the stream in order; a request NextIds
// would refuse ends the stream with NextIds's status; the token is checked.
TEST_F(GrpcTest, StreamIdsAnswersEachRequestInOrder) {
  start({"--max-batch", "1000", "--bearer-token", "t0ken"});
  {
    auto ctx = context("t0ken");
    auto stream = stub->StreamIds(ctx.get());
    std::vector<Id> ids;
    for (std::uint64_t count : {1u, 10u, 1000u, 7u}) {
      v1::NextIdsRequest request;
      request.set_count(count);
      request.set_agent("streamer");
      ASSERT_TRUE(stream->Write(request));
      v1::NextIdsResponse response;
      ASSERT_TRUE(stream->Read(&response));
      ASSERT_EQ(static_cast<std::uint64_t>(response.ids_size()), count);
      for (auto id : response.ids()) ids.push_back(static_cast<Id>(id));
    }
    ASSERT_TRUE(stream->WritesDone());
    v1::NextIdsResponse none;
    EXPECT_FALSE(stream->Read(&none));
    EXPECT_TRUE(stream->Finish().ok());
    EXPECT_EQ(ids.size(), 1018u);
    EXPECT_EQ(test::check_unique_and_increasing({ids}), "");
  }
  for (const auto& [token, count, code] :
       std::vector<std::tuple<std::string, std::uint64_t, grpc::StatusCode>>{
           {"t0ken", 1001, grpc::StatusCode::RESOURCE_EXHAUSTED},
           {"t0ken", 0, grpc::StatusCode::INVALID_ARGUMENT},
           {"wrong", 1, grpc::StatusCode::UNAUTHENTICATED}}) {
    auto ctx = context(token);
    auto stream = stub->StreamIds(ctx.get());
    v1::NextIdsRequest request;
    request.set_count(count);
    stream->Write(request);
    v1::NextIdsResponse response;
    EXPECT_FALSE(stream->Read(&response));
    EXPECT_EQ(stream->Finish().error_code(), code) << token << " " << count;
  }
  EXPECT_NE(test::http_get(server->port(), "/metrics", {"Authorization: Bearer t0ken"})
                .body.find("snowid_ids_issued_total{agent=\"streamer\"} 1018"),
            std::string::npos);
}

// Concurrent clients over HTTP, gRPC, Thrift and RESP: the union of all IDs
// has no duplicate, and every ID is counted.
// One connection holds at most 100 calls at once (HTTP/2's recommended
// minimum): calls held open without a message cost the server memory, so a
// client may not pile them up. The gRPC client queues a call beyond the
// limit until one ends.
TEST_F(GrpcTest, OneConnectionHoldsAtMostOneHundredCalls) {
  start();
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReaderWriter<v1::NextIdsRequest, v1::NextIdsResponse>>>
      open;
  for (int i = 0; i < 100; ++i) {
    contexts.push_back(context());
    open.push_back(stub->StreamIds(contexts.back().get()));
  }
  // The 100 calls are open at the server: a message on the last one is answered.
  v1::NextIdsRequest request;
  request.set_count(1);
  v1::NextIdsResponse response;
  ASSERT_TRUE(open.back()->Write(request));
  ASSERT_TRUE(open.back()->Read(&response));
  EXPECT_EQ(response.ids_size(), 1);

  grpc::ClientContext queued;
  queued.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds{1500});
  v1::NextIdResponse one;
  EXPECT_EQ(stub->NextId(&queued, v1::NextIdRequest{}, &one).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);

  contexts.front()->TryCancel();  // one call ends: room for another
  EXPECT_TRUE(stub->NextId(context().get(), v1::NextIdRequest{}, &one).ok());
  for (auto& c : contexts) c->TryCancel();
  for (auto& stream : open) (void)stream->Finish();
}

TEST_F(GrpcTest, EveryProtocolTogetherNeverSharesAnId) {
  start({"--thrift", "127.0.0.1:0", "--resp", "127.0.0.1:0"});
  std::vector<std::vector<Id>> per_client(8);
  std::vector<std::thread> clients;
  for (int c = 0; c < 2; ++c) {
    clients.emplace_back([this, &mine = per_client[static_cast<std::size_t>(c)]] {
      v1::NextIdsRequest request;
      request.set_count(100);
      for (int i = 0; i < 300; ++i) {
        v1::NextIdsResponse response;
        const grpc::Status status = stub->NextIds(context().get(), request, &response);
        if (!status.ok()) {
          ADD_FAILURE() << status.error_message();
          return;
        }
        for (auto id : response.ids()) mine.push_back(static_cast<Id>(id));
      }
    });
  }
  for (int c = 2; c < 4; ++c) {
    clients.emplace_back([this, &mine = per_client[static_cast<std::size_t>(c)]] {
      test::HttpConnection conn(server->port());
      for (int i = 0; i < 300; ++i) {
        if (!conn.send("GET /v1/ids?count=100 HTTP/1.1\r\nHost: x\r\n\r\n")) return;
        const auto reply = conn.read();
        if (reply.status != 200) return;
        const auto body = nlohmann::json::parse(reply.body);
        for (const auto& s : body["ids"]) mine.push_back(*parse_id(s.get<std::string>()));
      }
    });
  }
  // Twitter's Thrift service, through the C++ client thrift-compiler generates.
  const int thrift_port = std::stoi(test::digits_after(server->log(), "thrift 127.0.0.1:"));
  for (int c = 4; c < 6; ++c) {
    clients.emplace_back([thrift_port, &mine = per_client[static_cast<std::size_t>(c)]] {
      auto socket = std::make_shared<apache::thrift::transport::TSocket>("127.0.0.1", thrift_port);
      auto transport = std::make_shared<apache::thrift::transport::TFramedTransport>(socket);
      thrift::SnowflakeClient client(
          std::make_shared<apache::thrift::protocol::TBinaryProtocol>(transport));
      transport->open();
      for (int i = 0; i < 3000; ++i) mine.push_back(client.get_id("thrift"));
    });
  }
  // The Redis protocol, through hiredis, 100 IDs per SNOWID.IDS.
  const int resp_port = std::stoi(test::digits_after(server->log(), "resp 127.0.0.1:"));
  for (int c = 6; c < 8; ++c) {
    clients.emplace_back([resp_port, &mine = per_client[static_cast<std::size_t>(c)]] {
      redisContext* redis = redisConnect("127.0.0.1", resp_port);
      for (int i = 0; redis != nullptr && redis->err == 0 && i < 300; ++i) {
        auto* reply = static_cast<redisReply*>(redisCommand(redis, "SNOWID.IDS 100"));
        if (reply == nullptr) break;
        test::append_resp_ids(reply, mine);
        freeReplyObject(reply);
      }
      redisFree(redis);
    });
  }
  for (auto& t : clients) t.join();
  for (std::size_t c = 0; c < per_client.size(); ++c) {
    EXPECT_EQ(per_client[c].size(), c == 4 || c == 5 ? 3000u : 30000u) << "client " << c;
  }
  EXPECT_EQ(test::check_unique_and_increasing(per_client), "");
  // Every ID counted, whatever protocol carried it.
  const std::string metrics = test::http_get(server->port(), "/metrics").body;
  EXPECT_NE(metrics.find("snowid_ids_issued_total{agent=\"thrift\"} 6000\n"), std::string::npos);
  EXPECT_NE(metrics.find("snowid_ids_issued_total{agent=\"none\"} 180000\n"), std::string::npos)
      << metrics;
}

// The project's own load tool against the real server: it must see every
// call succeed and no ID twice, and refuse bad options with exit code 2.
TEST_F(GrpcTest, LoadToolRunsAndVerifies) {
  start({"--max-batch", "500"});
  const std::string target = "127.0.0.1:" + std::to_string(server->grpc_port());
  const auto batched = test::run_process({SNOWID_CLI_PATH, "bench", "grpc", "--target", target,
                                          "--duration", "0.5", "--batch", "500",
                                          "--concurrency", "8", "--verify"});
  EXPECT_EQ(batched.exit_code, 0) << batched.out << batched.err;
  EXPECT_NE(batched.out.find("0 failed"), std::string::npos) << batched.out;
  EXPECT_NE(batched.out.find("verify    0 duplicate IDs"), std::string::npos) << batched.out;

  // Over the batch limit: every call fails, and the tool says so.
  const auto too_big = test::run_process({SNOWID_CLI_PATH, "bench", "grpc", "--target", target,
                                          "--duration", "0.2", "--batch", "501"});
  EXPECT_EQ(too_big.exit_code, 1);
  EXPECT_NE(too_big.out.find("RESOURCE_EXHAUSTED"), std::string::npos) << too_big.out;

  const auto bad = test::run_process({SNOWID_CLI_PATH, "bench", "grpc", "--concurrency", "0"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(test::split_lines(bad.err).size(), 1u) << bad.err;
  // More streams per connection than snowidd holds would leave some waiting.
  const auto crowded =
      test::run_process({SNOWID_CLI_PATH, "bench", "grpc", "--target", target, "--stream",
                         "--batch", "1", "--concurrency", "202", "--channels", "2"});
  EXPECT_EQ(crowded.exit_code, 2);
  EXPECT_NE(crowded.err.find("use --channels 3 or more"), std::string::npos) << crowded.err;
}

// The TCP ports process `pid` listens on (IPv4 and IPv6): its socket
// descriptors' inodes, looked up among the listening sockets of
// /proc/net/tcp and tcp6.
std::set<int> listening_ports(pid_t pid) {
  std::set<std::string> inodes;
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& entry : std::filesystem::directory_iterator(fds)) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) {
      inodes.insert(target.substr(8, target.size() - 9));
    }
  }
  std::set<int> ports;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the column names
    while (std::getline(in, line)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (state == "0A" && inodes.count(inode) > 0) {  // 0A: LISTEN
        ports.insert(std::stoi(local.substr(local.rfind(':') + 1), nullptr, 16));
      }
    }
  }
  return ports;
}

// grpc off (here over an address the environment gives): snowidd serves
// HTTP, listens on no other port, names no gRPC address in /v1/info or its
// start-up line, and the load tool pointed at where gRPC would be says
// nothing serves gRPC there.
TEST_F(GrpcTest, OffServesHttpAndListensForNoGrpc) {
  const int would_be = test::free_loopback_ports(1).at(0);
  const std::string would_be_address = "127.0.0.1:" + std::to_string(would_be);
  server = std::make_unique<ServerProcess>(
      SNOWIDD_PATH, std::vector<std::string>{"--grpc", "off", "--state-dir", dir.file("state")},
      std::map<std::string, std::string>{{"SNOWID_GRPC", would_be_address}});
  ASSERT_TRUE(server->started()) << server->log();
  EXPECT_EQ(server->grpc_port(), 0) << server->log();
  EXPECT_EQ(server->listener_port("grpc"), 0) << server->log();

  const auto id = test::http_get(server->port(), "/v1/id");
  EXPECT_EQ(id.status, 200) << id.body;
  EXPECT_NE(id.body.find("\"id\""), std::string::npos) << id.body;
  const auto info = nlohmann::json::parse(test::http_get(server->port(), "/v1/info").body);
  EXPECT_EQ(info["http"], "127.0.0.1:" + std::to_string(server->port())) << info.dump();
  EXPECT_FALSE(info.contains("grpc")) << info.dump();

  const std::string log = server->log();
  const std::size_t start = log.find(" starting: ");
  ASSERT_NE(start, std::string::npos) << log;
  const std::string line = log.substr(start, log.find('\n', start) - start);
  EXPECT_NE(line.find(", http 127.0.0.1:"), std::string::npos) << line;
  EXPECT_EQ(line.find("grpc"), std::string::npos) << line;

  EXPECT_EQ(listening_ports(server->pid()), std::set<int>{server->port()});
  EXPECT_LT(test::connect_loopback(would_be), 0);

  const auto began = std::chrono::steady_clock::now();
  const auto bench = test::run_process(
      {SNOWID_CLI_PATH, "bench", "grpc", "--target", would_be_address, "--duration", "0.2"});
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds{5});
  EXPECT_EQ(bench.exit_code, 1) << bench.err;
  EXPECT_EQ(bench.out, "");
  ASSERT_EQ(test::split_lines(bench.err).size(), 1u) << bench.err;
  EXPECT_NE(bench.err.find("cannot connect to " + would_be_address + ": nothing serves gRPC"),
            std::string::npos)
      << bench.err;

  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0) << server->log();
}

// The status the standard health service gives `service`; UNKNOWN with the
// call's error if the call failed.
struct HealthAnswer {
  grpc::StatusCode code = grpc::StatusCode::OK;
  grpc::health::v1::HealthCheckResponse::ServingStatus status =
      grpc::health::v1::HealthCheckResponse::UNKNOWN;
};
HealthAnswer check_health(int grpc_port, const std::string& service) {
  auto health = grpc::health::v1::Health::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(grpc_port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{5});
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = health->Check(&context, request, &response);
  return {status.error_code(), response.status()};
}

TEST_F(GrpcTest, HealthServiceAnswersAsTheProbesDo) {
  const std::string faketime = test::faketime_library();
  if (faketime.empty()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  using grpc::health::v1::HealthCheckResponse;
  const std::vector<std::string> args{"--clock-policy", "wait",        "--max-start-wait-ms",
                                      "8000",           "--state-dir", dir.file("state")};
  {
    ServerProcess first(SNOWIDD_PATH, args);
    ASSERT_TRUE(first.started()) << first.log();
    EXPECT_EQ(check_health(first.grpc_port(), "").status, HealthCheckResponse::SERVING);
    EXPECT_EQ(check_health(first.grpc_port(), "snowid.v1.IdService").status,
              HealthCheckResponse::SERVING);
    EXPECT_EQ(check_health(first.grpc_port(), "no.such.Service").code, grpc::StatusCode::NOT_FOUND);
    ASSERT_EQ(test::http_get(first.port(), "/v1/ids?count=1000").status, 200);
    first.signal(SIGKILL);
    first.wait();
  }
  // Restarted with the clock 2 s behind its mark, the node waits for its
  // clock: alive ("" SERVING), not ready (NOT_SERVING, as /readyz's 503),
  // then ready once its clock has passed the mark.
  ServerProcess restarted(SNOWIDD_PATH, args,
                          {{"LD_PRELOAD", faketime},
                           {"FAKETIME", "-2s"},
                           {"ASAN_OPTIONS", "verify_asan_link_order=0"}});
  ASSERT_TRUE(restarted.started()) << restarted.log();
  EXPECT_EQ(check_health(restarted.grpc_port(), "").status, HealthCheckResponse::SERVING);
  EXPECT_EQ(check_health(restarted.grpc_port(), "snowid.v1.IdService").status,
            HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(test::http_get(restarted.port(), "/readyz").status, 503);
  EXPECT_TRUE(test::wait_until(
      [&] {
        return check_health(restarted.grpc_port(), "snowid.v1.IdService").status ==
               HealthCheckResponse::SERVING;
      },
      std::chrono::seconds{10}))
      << restarted.log();
  EXPECT_EQ(test::http_get(restarted.port(), "/readyz").status, 200);
  // Stopping: NOT_SERVING is not required of a stopped server, only that
  // the stop is clean.
  restarted.signal(SIGTERM);
  EXPECT_EQ(restarted.wait(), 0) << restarted.log();
}

TEST_F(GrpcTest, ReflectionListsTheServicesAndDescribesThem) {
  start();
  namespace reflection = grpc::reflection::v1alpha;
  auto stub_of_reflection = reflection::ServerReflection::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(server->grpc_port()), grpc::InsecureChannelCredentials()));
  auto call = context();
  auto stream = stub_of_reflection->ServerReflectionInfo(call.get());
  reflection::ServerReflectionRequest list;
  list.set_list_services("");
  ASSERT_TRUE(stream->Write(list));
  reflection::ServerReflectionResponse listed;
  ASSERT_TRUE(stream->Read(&listed));
  std::set<std::string> names;
  for (const auto& service : listed.list_services_response().service()) {
    names.insert(service.name());
  }
  EXPECT_TRUE(names.count("snowid.v1.IdService")) << testing::PrintToString(names);
  EXPECT_TRUE(names.count("grpc.reflection.v1alpha.ServerReflection"))
      << testing::PrintToString(names);

  // The file that defines the service, as grpcurl fetches it to call
  // NextId without the .proto.
  reflection::ServerReflectionRequest file;
  file.set_file_containing_symbol("snowid.v1.IdService");
  ASSERT_TRUE(stream->Write(file));
  reflection::ServerReflectionResponse described;
  ASSERT_TRUE(stream->Read(&described));
  ASSERT_TRUE(described.has_file_descriptor_response()) << described.DebugString();
  bool found = false;
  for (const std::string& bytes : described.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto proto;
    ASSERT_TRUE(proto.ParseFromString(bytes));
    if (proto.name() != "snowid/v1/snowid.proto") continue;
    for (const auto& service : proto.service()) {
      if (service.name() != "IdService") continue;
      for (const auto& method : service.method()) found |= method.name() == "NextId";
    }
  }
  EXPECT_TRUE(found) << described.DebugString();
  ASSERT_TRUE(stream->WritesDone());
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace snowid
