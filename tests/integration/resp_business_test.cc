// SNOWID.BUSINESS on snowidd's RESP listener against a real node
// (tests/support/business_node.h), with redis-cli and hiredis: the IDs, the
// token that must open the tag, the refusals, MULTI and COMMAND.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "business_node.h"
#include "chaos.h"  // metric

namespace snowid {
namespace {

// A hiredis reply, freed when it goes.
using Reply = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

class RespBusinessTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::unique_ptr<test::ServerProcess> node;
  int port = 0;

  void SetUp() override {
    node = test::start_business_node(dir, {"--resp", "127.0.0.1:0", "--max-batch", "100"});
    ASSERT_TRUE(node->started()) << node->log();
    port = node->listener_port("resp");
    ASSERT_GT(port, 0) << node->log();
    ASSERT_EQ(test::create_tag(*node, "orders", "ORD-{seq:06}").status, 201);
  }

  // redis-cli's output (stdout and stderr, trailing newlines removed) for
  // one command on a connection authenticated with `token`.
  std::string cli(const std::string& token, std::vector<std::string> command) const {
    std::vector<std::string> argv{"/usr/bin/redis-cli", "-p", std::to_string(port)};
    if (!token.empty()) argv.insert(argv.end(), {"--no-auth-warning", "-a", token});
    argv.insert(argv.end(), command.begin(), command.end());
    const auto result = test::run_process(argv);
    std::string out = result.out + result.err;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }

  // A hiredis connection authenticated with `token`.
  std::unique_ptr<redisContext, decltype(&redisFree)> connect(const std::string& token) const {
    std::unique_ptr<redisContext, decltype(&redisFree)> context(redisConnect("127.0.0.1", port),
                                                                &redisFree);
    Reply auth(static_cast<redisReply*>(redisCommand(context.get(), "AUTH %s", token.c_str())),
               &freeReplyObject);
    EXPECT_TRUE(auth && auth->type == REDIS_REPLY_STATUS);
    return context;
  }

  static Reply command(redisContext* context, const char* format, const char* tag,
                       const char* count) {
    return Reply(static_cast<redisReply*>(redisCommand(context, format, tag, count)),
                 &freeReplyObject);
  }
};

TEST_F(RespBusinessTest, RedisCliAndHiredisGetDistinctBusinessIds) {
  EXPECT_EQ(cli(test::kOrdersToken, {"SNOWID.BUSINESS", "orders"}), "ORD-000001");
  const std::vector<std::string> three =
      test::split_lines(cli(test::kOrdersToken, {"snowid.business", "orders", "3"}));
  EXPECT_EQ(three, (std::vector<std::string>{"ORD-000002", "ORD-000003", "ORD-000004"}));

  auto context = connect(test::kOrdersToken);
  const Reply batch = command(context.get(), "SNOWID.BUSINESS %s %s", "orders", "100");
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(batch->elements, 100u);
  std::set<std::string> seen{"ORD-000001", "ORD-000002", "ORD-000003", "ORD-000004"};
  for (std::size_t i = 0; i < batch->elements; ++i) {
    const redisReply* id = batch->element[i];
    ASSERT_EQ(id->type, REDIS_REPLY_STRING);
    EXPECT_TRUE(seen.emplace(id->str, id->len).second) << id->str;
  }
  EXPECT_NE(test::metric(node->port(), "snowid_resp_commands_total{command=\"snowid.business\"}"),
            -1);
}

TEST_F(RespBusinessTest, RefusalsUseTheListenersErrorPrefixes) {
  // Before AUTH, and with a token that does not open the tag.
  EXPECT_EQ(cli("", {"SNOWID.BUSINESS", "orders"}), "NOAUTH Authentication required.");
  ASSERT_EQ(test::create_tag(*node, "invoices", "INV-{seq:06}").status, 201);
  EXPECT_EQ(cli(test::kOrdersToken, {"SNOWID.BUSINESS", "invoices"}),
            "NOAUTH Authentication required.");
  EXPECT_EQ(cli(test::kAdminToken, {"SNOWID.BUSINESS", "invoices"}), "INV-000001");
  // Counts: not positive, above max_batch; arity.
  EXPECT_EQ(cli(test::kOrdersToken, {"SNOWID.BUSINESS", "orders", "0"}),
            "ERR count must be a positive integer");
  EXPECT_EQ(cli(test::kOrdersToken, {"SNOWID.BUSINESS", "orders", "x"}),
            "ERR count must be a positive integer");
  EXPECT_EQ(cli(test::kOrdersToken, {"SNOWID.BUSINESS", "orders", "101"}).rfind("ERR ", 0), 0u);
  EXPECT_EQ(cli(test::kOrdersToken, {"SNOWID.BUSINESS"}),
            "ERR wrong number of arguments for 'SNOWID.BUSINESS' command");
  EXPECT_EQ(cli(test::kOrdersToken, {"SNOWID.BUSINESS", "orders", "1", "2"}),
            "ERR wrong number of arguments for 'SNOWID.BUSINESS' command");
  // No such tag; a tag without a template; a retired tag.
  EXPECT_EQ(cli(test::kAdminToken, {"SNOWID.BUSINESS", "nosuch"}).rfind("ERR ", 0), 0u);
  ASSERT_EQ(test::create_tag(*node, "plain", "").status, 201);
  EXPECT_EQ(cli(test::kOrdersToken, {"SNOWID.BUSINESS", "plain"}).rfind("ERR ", 0), 0u);
  ASSERT_EQ(test::http_with_token(node->port(), "DELETE", "/v1/tags/orders", test::kAdminToken)
                .status,
            200);
  const std::string retired = cli(test::kOrdersToken, {"SNOWID.BUSINESS", "orders"});
  EXPECT_EQ(retired.rfind("ERR ", 0), 0u) << retired;
  EXPECT_NE(retired.find("retired"), std::string::npos) << retired;
}

// Inside MULTI the command is checked when queued (a token that does not
// open the tag aborts the transaction) and runs at EXEC; COMMAND describes it.
TEST_F(RespBusinessTest, MultiQueuesItAndCommandDescribesIt) {
  auto context = connect(test::kOrdersToken);
  Reply(static_cast<redisReply*>(redisCommand(context.get(), "MULTI")), &freeReplyObject);
  const Reply queued = command(context.get(), "SNOWID.BUSINESS %s %s", "orders", "2");
  ASSERT_TRUE(queued);
  EXPECT_EQ(std::string(queued->str, queued->len), "QUEUED");
  const Reply exec(static_cast<redisReply*>(redisCommand(context.get(), "EXEC")),
                   &freeReplyObject);
  ASSERT_TRUE(exec);
  ASSERT_EQ(exec->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(exec->elements, 1u);
  ASSERT_EQ(exec->element[0]->type, REDIS_REPLY_ARRAY);
  EXPECT_EQ(exec->element[0]->elements, 2u);

  Reply(static_cast<redisReply*>(redisCommand(context.get(), "MULTI")), &freeReplyObject);
  const Reply refused = command(context.get(), "SNOWID.BUSINESS %s %s", "invoices", "1");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->type, REDIS_REPLY_ERROR);
  const Reply aborted(static_cast<redisReply*>(redisCommand(context.get(), "EXEC")),
                      &freeReplyObject);
  ASSERT_TRUE(aborted);
  EXPECT_EQ(std::string(aborted->str, aborted->len).rfind("EXECABORT", 0), 0u);

  const std::string info = cli(test::kOrdersToken, {"COMMAND", "INFO", "snowid.business"});
  EXPECT_EQ(test::split_lines(info).at(0), "snowid.business") << info;
  EXPECT_EQ(test::split_lines(info).at(1), "-2") << info;
}

}  // namespace
}  // namespace snowid
