// Tokens per tag (tokens_file, access_tokens.h) against the real snowidd:
// a token for one tag is refused on another on HTTP, gRPC, RESP and Thrift
// with the answer a wrong token gets; the file is read again when it changes
// (and on SIGHUP), a removed token is refused at the next request, also on a
// RESP or Thrift connection that authenticated with it, and a broken file
// keeps the tokens in force; bad files stop the start with one line.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <thrift/Thrift.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "Snowflake.h"
#include "raw_socket.h"
#include "server_process.h"
#include "snowid/v1/snowid.grpc.pb.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::HttpReply;
using test::ServerProcess;
using Clock = std::chrono::steady_clock;

const char* const kTokens = R"([[token]]
name = "orders-svc"
token = "orders-secret"
tags = ["orders"]

[[token]]
name = "ops"
token = "ops-secret"
admin = true

[[token]]
name = "ids"
token = "ids-secret"
snowflake = true
)";

void write_file(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".new";
  std::ofstream(temporary, std::ios::trunc) << text;
  std::rename(temporary.c_str(), path.c_str());  // as an editor or a Secret's update does
}

// Polls `condition` every 100 ms for up to `limit`.
bool eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds limit = std::chrono::milliseconds{8000}) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  return condition();
}

HttpReply get(const ServerProcess& server, const std::string& target, const std::string& token) {
  return test::http_get(server.port(), target, {"Authorization: Bearer " + token});
}

// One RESP reply to `command`, read whole (a bulk string's two lines).
std::string resp(test::RawSocket& socket, const std::string& command) {
  socket.received().clear();
  if (!socket.send(command + "\r\n")) return "(not sent)";
  socket.read_until(
      [](const std::string& r) {
        const auto first = r.find("\r\n");
        if (first == std::string::npos) return false;
        return r[0] != '$' || r.find("\r\n", first + 2) != std::string::npos;
      },
      std::chrono::seconds{5});
  return socket.received();
}

struct ThriftClient {
  explicit ThriftClient(int port)
      : socket(std::make_shared<apache::thrift::transport::TSocket>("127.0.0.1", port)),
        transport(std::make_shared<apache::thrift::transport::TFramedTransport>(socket)),
        client(std::make_shared<apache::thrift::protocol::TBinaryProtocol>(transport)) {
    socket->setRecvTimeout(10000);
    transport->open();
  }
  // The ID, or the refusal's message.
  std::string get_id() {
    try {
      return std::to_string(client.get_id("tokens"));
    } catch (const apache::thrift::TApplicationException& e) {
      return std::string("refused: ") + e.what();
    }
  }
  std::shared_ptr<apache::thrift::transport::TSocket> socket;
  std::shared_ptr<apache::thrift::transport::TFramedTransport> transport;
  thrift::SnowflakeClient client;
};

class TagTokenTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::string tokens_file = dir.file("tokens.toml");
  std::unique_ptr<ServerProcess> server;
  std::unique_ptr<v1::IdService::Stub> stub;

  void start() {
    server = std::make_unique<ServerProcess>(
        SNOWIDD_PATH,
        std::vector<std::string>{"--tokens-file", tokens_file, "--state-dir", dir.file("state"),
                                 "--resp", "127.0.0.1:0", "--thrift", "127.0.0.1:0",
                                 // No caller is trusted without a token (the default
                                 // trusts this machine's Thrift callers).
                                 "--thrift-trusted-networks", "10.255.255.0/24",
                                 "--segment-auto-create", "true"});
    ASSERT_TRUE(server->started()) << server->log();
    stub = v1::IdService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server->grpc_port()), grpc::InsecureChannelCredentials()));
  }

  grpc::Status segment_over_grpc(const std::string& tag, const std::string& token) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{10});
    context.AddMetadata("authorization", "Bearer " + token);
    v1::NextSegmentIdsRequest request;
    request.set_tag(tag);
    request.set_count(2);
    v1::NextSegmentIdsResponse response;
    return stub->NextSegmentIds(&context, request, &response);
  }
  grpc::Status id_over_grpc(const std::string& token) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{10});
    context.AddMetadata("authorization", "Bearer " + token);
    v1::NextIdResponse response;
    return stub->NextId(&context, v1::NextIdRequest{}, &response);
  }
  std::string metrics() const { return test::http_get(server->port(), "/metrics").body; }
};

TEST_F(TagTokenTest, ATagsTokenIsRefusedOnOtherTagsOnEveryListenerAsAWrongTokenIs) {
  write_file(tokens_file, kTokens);
  start();

  // HTTP: its own tag, on both segment routes; another tag, or Snowflake
  // IDs, answered exactly as a wrong token.
  EXPECT_EQ(get(*server, "/v1/segment/orders", "orders-secret").status, 200);
  EXPECT_EQ(get(*server, "/api/segment/get/orders", "orders-secret").status, 200);
  EXPECT_EQ(get(*server, "/v1/segment/payments", "ops-secret").status, 200);
  const HttpReply wrong = get(*server, "/v1/segment/payments", "guess");
  EXPECT_EQ(wrong.status, 401);
  for (const char* target : {"/v1/segment/payments", "/api/segment/get/payments", "/v1/id"}) {
    SCOPED_TRACE(target);
    const HttpReply other = get(*server, target, "orders-secret");
    EXPECT_EQ(other.status, wrong.status);
    EXPECT_EQ(other.body, wrong.body);
    for (const char* header : {"www-authenticate", "content-type"}) {
      EXPECT_EQ(other.headers.count(header), 1u) << header;
      EXPECT_EQ(other.headers.at(header), wrong.headers.at(header)) << header;
    }
  }
  EXPECT_EQ(get(*server, "/v1/id", "ids-secret").status, 200);
  EXPECT_EQ(get(*server, "/v1/segment/orders", "ids-secret").status, 401);
  // The pages that list every tag need an admin token.
  EXPECT_EQ(get(*server, "/cache", "orders-secret").status, 401);
  EXPECT_EQ(get(*server, "/cache", "ops-secret").status, 200);

  // gRPC.
  EXPECT_TRUE(segment_over_grpc("orders", "orders-secret").ok());
  const grpc::Status grpc_wrong = segment_over_grpc("payments", "guess");
  EXPECT_EQ(grpc_wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  for (const grpc::Status& other :
       {segment_over_grpc("payments", "orders-secret"), id_over_grpc("orders-secret")}) {
    EXPECT_EQ(other.error_code(), grpc_wrong.error_code());
    EXPECT_EQ(other.error_message(), grpc_wrong.error_message());
  }
  EXPECT_TRUE(id_over_grpc("ids-secret").ok());

  // RESP: AUTH takes the token; its tag's INCR is served, another's
  // answered as on a connection that never authenticated.
  const int resp_port = server->listener_port("resp");
  test::RawSocket never(resp_port);
  const std::string unauthenticated = resp(never, "INCR payments");
  EXPECT_EQ(unauthenticated, "-NOAUTH Authentication required.\r\n");
  test::RawSocket orders(resp_port);
  EXPECT_EQ(resp(orders, "AUTH guess"),
            "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  EXPECT_EQ(resp(orders, "AUTH orders-secret"), "+OK\r\n");
  EXPECT_EQ(resp(orders, "INCR orders").rfind(':', 0), 0u) << orders.received();
  EXPECT_EQ(resp(orders, "INCR payments"), unauthenticated);
  EXPECT_EQ(resp(orders, "SNOWID.ID"), unauthenticated);
  EXPECT_EQ(resp(orders, "INCR orders").rfind(':', 0), 0u) << "the connection goes on";
  test::RawSocket ops(resp_port);
  EXPECT_EQ(resp(ops, "AUTH ops ops-secret"), "+OK\r\n");  // the token's name as the user
  EXPECT_EQ(resp(ops, "INCR payments").rfind(':', 0), 0u) << ops.received();

  // Thrift (Twitter's calls are Snowflake IDs): a tag's token is answered
  // as a connection that never authenticated.
  const int thrift_port = server->listener_port("thrift");
  ThriftClient without(thrift_port);
  const std::string thrift_refusal = without.get_id();
  EXPECT_EQ(thrift_refusal.rfind("refused: Unauthenticated", 0), 0u) << thrift_refusal;
  ThriftClient tag_only(thrift_port);
  tag_only.client.authenticate("orders-secret");
  EXPECT_EQ(tag_only.get_id(), thrift_refusal);
  ThriftClient snowflake(thrift_port);
  snowflake.client.authenticate("ids-secret");
  EXPECT_GT(std::stoll(snowflake.get_id()), 0);

  // /metrics: per token name and tag, never a token.
  const std::string text = metrics();
  EXPECT_NE(
      text.find("snowid_token_calls_total{token=\"orders-svc\",tag=\"orders\",outcome=\"ok\"}"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("snowid_token_calls_total{token=\"orders-svc\",tag=\"payments\","
                      "outcome=\"refused\"}"),
            std::string::npos);
  EXPECT_NE(text.find("snowid_token_calls_total{token=\"orders-svc\",tag=\"#snowflake\","
                      "outcome=\"refused\"}"),
            std::string::npos);
  // Each call counted once: /v1/id, gRPC NextId, Thrift get_id.
  EXPECT_NE(
      text.find("snowid_token_calls_total{token=\"ids\",tag=\"#snowflake\",outcome=\"ok\"} 3\n"),
      std::string::npos);
  // A tag neither the store nor the file knows is counted as "#other".
  EXPECT_EQ(get(*server, "/v1/segment/unknown-tag-1", "orders-secret").status, 401);
  EXPECT_EQ(get(*server, "/v1/segment/unknown-tag-2", "orders-secret").status, 401);
  const std::string after = metrics();
  EXPECT_EQ(after.find("unknown-tag"), std::string::npos);
  EXPECT_NE(after.find("{token=\"orders-svc\",tag=\"#other\",outcome=\"refused\"} 2\n"),
            std::string::npos)
      << after;
  for (const char* secret : {"orders-secret", "ops-secret", "ids-secret"}) {
    EXPECT_EQ(after.find(secret), std::string::npos) << secret << " in /metrics";
  }
}

TEST_F(TagTokenTest, AChangedFileTakesEffectAndRevokesConnectionsABrokenOneKeepsTheTokens) {
  write_file(tokens_file, kTokens);
  start();
  const int resp_port = server->listener_port("resp");
  test::RawSocket orders(resp_port);
  ASSERT_EQ(resp(orders, "AUTH orders-secret"), "+OK\r\n");
  ASSERT_EQ(resp(orders, "INCR orders").rfind(':', 0), 0u) << orders.received();
  ThriftClient ids(server->listener_port("thrift"));
  ids.client.authenticate("ids-secret");
  ASSERT_GT(std::stoll(ids.get_id()), 0);
  EXPECT_EQ(get(*server, "/v1/segment/payments", "payments-secret").status, 401);

  // orders-svc and ids removed, payments-svc added.
  write_file(tokens_file, R"([[token]]
name = "payments-svc"
token = "payments-secret"
tags = ["payments"]

[[token]]
name = "ops"
token = "ops-secret"
admin = true
)");
  const auto changed = Clock::now();
  ASSERT_TRUE(eventually([&] {
    return get(*server, "/v1/segment/payments", "payments-secret").status == 200;
  })) << server->log();
  std::cout << "new token admitted "
            << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - changed).count()
            << " ms after the file changed" << std::endl;
  EXPECT_EQ(get(*server, "/v1/segment/orders", "orders-secret").status, 401);
  EXPECT_EQ(segment_over_grpc("orders", "orders-secret").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(resp(orders, "INCR orders"), "-NOAUTH Authentication required.\r\n");
  EXPECT_EQ(ids.get_id().rfind("refused: Unauthenticated", 0), 0u);
  EXPECT_NE(server->log().find("tokens_file " + tokens_file + ": read again, 2 tokens in force"),
            std::string::npos)
      << server->log();

  // A broken file: one error line, the tokens in force stay.
  write_file(tokens_file, "[[token]]\nname = \"payments-svc\"\ntoken = \"other\"\ntgas = []\n");
  ASSERT_TRUE(eventually([&] { return server->log().find("stay in force") != std::string::npos; }))
      << server->log();
  std::this_thread::sleep_for(std::chrono::milliseconds{2500});  // more polls of the same file
  const std::string log = server->log();
  const auto first = log.find("stay in force");
  EXPECT_EQ(log.find("stay in force", first + 1), std::string::npos) << "logged more than once";
  EXPECT_NE(log.find("unknown key 'tgas'"), std::string::npos) << log;
  EXPECT_EQ(get(*server, "/v1/segment/payments", "payments-secret").status, 200);
  EXPECT_EQ(get(*server, "/v1/segment/payments", "other").status, 401);
  EXPECT_EQ(get(*server, "/v1/segment/orders", "orders-secret").status, 401);
}

// A token read from its own file (token_file in an entry): the tokens file
// does not change when that file does, so the change waits for SIGHUP.
TEST_F(TagTokenTest, SighupReadsTheTokensAgain) {
  const std::string secret = dir.file("orders.secret");
  write_file(secret, "first-secret\n");
  write_file(tokens_file, "[[token]]\nname = \"orders-svc\"\ntoken_file = \"" + secret +
                              "\"\ntags = [\"orders\"]\n");
  start();
  ASSERT_EQ(get(*server, "/v1/segment/orders", "first-secret").status, 200);
  write_file(secret, "second-secret\n");
  std::this_thread::sleep_for(std::chrono::milliseconds{1500});
  EXPECT_EQ(get(*server, "/v1/segment/orders", "second-secret").status, 401)
      << "read again without SIGHUP";
  server->signal(SIGHUP);
  EXPECT_TRUE(eventually([&] {
    return get(*server, "/v1/segment/orders", "second-secret").status == 200;
  })) << server->log();
  EXPECT_EQ(get(*server, "/v1/segment/orders", "first-secret").status, 401);
}

// Each bad file stops the start (exit 2) with one line naming tokens_file.
TEST_F(TagTokenTest, BadTokensFilesStopTheStartWithOneLine) {
  struct Case {
    std::string text;
    std::vector<std::string> extra;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"[[token]]\nname = \"a\"\ntoken = \"x\"\ntags = [\"t\"]\nadmn = true\n", {}, "unknown key"},
      {"[[token]]\nname = \"a\"\ntoken = \"x\"\nadmin = true\n"
       "[[token]]\nname = \"a\"\ntoken = \"y\"\nadmin = true\n",
       {},
       "the name is taken"},
      {"[[token]]\nname = \"a\"\ntoken = \"x\"\nadmin = true\n"
       "[[token]]\nname = \"b\"\ntoken = \"x\"\nadmin = true\n",
       {},
       "the same token"},
      {"[[token]]\nname = \"a\"\ntoken = \"\"\nadmin = true\n", {}, "the token is empty"},
      {kTokens, {"--bearer-token", "s3cret"}, "tokens_file and bearer_token are both set"},
      {"", {}, "holds no [[token]]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.says);
    write_file(tokens_file, c.text);
    std::vector<std::string> argv{SNOWIDD_PATH,  "--tokens-file",   tokens_file,
                                  "--state-dir", dir.file("state"), "--check-config"};
    argv.insert(argv.end(), c.extra.begin(), c.extra.end());
    const auto r = test::run_process(argv, {}, std::chrono::seconds{30});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err.rfind("snowidd: tokens_file", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
  }
  const auto missing = test::run_process({SNOWIDD_PATH, "--tokens-file", dir.file("none.toml"),
                                          "--state-dir", dir.file("state"), "--check-config"},
                                         {{"SNOWID_TOKENS_FILE", ""}}, std::chrono::seconds{30});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("not a readable file"), std::string::npos) << missing.err;
  // The environment variable, like every option's.
  write_file(tokens_file, "[[token]]\nname = \"a\"\ntoken = \"x\"\n");
  const auto from_environment =
      test::run_process({SNOWIDD_PATH, "--state-dir", dir.file("state"), "--check-config"},
                        {{"SNOWID_TOKENS_FILE", tokens_file}}, std::chrono::seconds{30});
  EXPECT_EQ(from_environment.exit_code, 2);
  EXPECT_NE(from_environment.err.find("opens nothing"), std::string::npos) << from_environment.err;
}

}  // namespace
}  // namespace snowid
