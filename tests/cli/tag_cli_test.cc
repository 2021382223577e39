// `snowid tag ...` and `snowid business` against a real snowidd
// (tests/support/business_node.h), over HTTP and HTTPS: what they print,
// the token from a file or SNOWID_TOKEN, and their exit codes.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "business_node.h"
#include "certificates.h"

namespace snowid {
namespace {

using test::ProcessResult;

// Bad input: exit 2, nothing on stdout, one line on stderr naming `says`.
void expect_usage_error(const ProcessResult& r, const std::string& says) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
}

// The node's refusal: exit 1, nothing on stdout, its message on one line.
void expect_refusal(const ProcessResult& r, const std::string& says) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
}

class TagCliTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::unique_ptr<test::ServerProcess> node;
  std::string admin_file = dir.file("admin.token");
  std::string orders_file = dir.file("orders.token");

  void SetUp() override {
    std::ofstream(admin_file) << test::kAdminToken << "\n";
    std::ofstream(orders_file) << test::kOrdersToken << "\n";
  }

  void start(std::vector<std::string> extra = {}) {
    node = test::start_business_node(dir, std::move(extra));
    ASSERT_TRUE(node->started()) << node->log();
  }

  std::string url(const std::string& scheme = "http") const {
    return scheme + "://127.0.0.1:" + std::to_string(node->port());
  }

  // `snowid ARGS --node URL --token-file FILE` (no token file if `file` is empty).
  ProcessResult snowid(std::vector<std::string> args, const std::string& file,
                       const std::map<std::string, std::string>& env = {}) const {
    args.insert(args.begin(), SNOWID_CLI_PATH);
    args.insert(args.end(), {"--node", url()});
    if (!file.empty()) args.insert(args.end(), {"--token-file", file});
    return test::run_process(args, env);
  }
};

TEST_F(TagCliTest, CreateShowChangeListAndRetireATag) {
  start();
  ProcessResult created = snowid({"tag", "create", "orders", "--template", "ORD-{seq:06}",
                                  "--step", "50", "--description", "order numbers"},
                                 admin_file);
  ASSERT_EQ(created.exit_code, 0) << created.err;
  EXPECT_NE(created.out.find("tag            orders\n"), std::string::npos) << created.out;
  EXPECT_NE(created.out.find("template       ORD-{seq:06}\n"), std::string::npos) << created.out;
  EXPECT_NE(created.out.find("business_step  50\n"), std::string::npos) << created.out;
  EXPECT_NE(created.out.find("description    order numbers\n"), std::string::npos);

  const ProcessResult shown = snowid({"tag", "show", "orders", "--json"}, admin_file);
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  const auto tag = nlohmann::json::parse(shown.out);
  EXPECT_EQ(tag["template"], "ORD-{seq:06}");
  EXPECT_EQ(tag["retired"], false);

  const ProcessResult changed = snowid({"tag", "change", "orders", "--step", "20", "--json"},
                                       admin_file);
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  const auto after = nlohmann::json::parse(changed.out);
  EXPECT_EQ(after["business_step"], 20);
  EXPECT_EQ(after["template"], "ORD-{seq:06}");
  EXPECT_EQ(after["version"], tag["version"].get<int>() + 1);

  ASSERT_EQ(snowid({"tag", "create", "invoices"}, admin_file).exit_code, 0);
  const ProcessResult listed = snowid({"tag", "list"}, admin_file);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto lines = test::split_lines(listed.out);
  ASSERT_EQ(lines.size(), 3u) << listed.out;
  EXPECT_EQ(lines[0].rfind("tag       template      zone", 0), 0u) << listed.out;
  EXPECT_EQ(lines[1].rfind("invoices            ", 0), 0u) << listed.out;
  EXPECT_EQ(lines[2].rfind("orders    ORD-{seq:06}  UTC", 0), 0u) << listed.out;

  const ProcessResult retired = snowid({"tag", "retire", "orders"}, admin_file);
  ASSERT_EQ(retired.exit_code, 0) << retired.err;
  EXPECT_NE(retired.out.find("retired        true\n"), std::string::npos) << retired.out;
  expect_refusal(snowid({"business", "orders"}, orders_file), "retired");
}

TEST_F(TagCliTest, BusinessPrintsOneIdALineWithATokenFromTheEnvironment) {
  start();
  ASSERT_EQ(snowid({"tag", "create", "orders", "--template", "ORD-{seq:06}"}, admin_file)
                .exit_code,
            0);
  const ProcessResult one = snowid({"business", "orders"}, "", {{"SNOWID_TOKEN", "orders-secret"}});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "ORD-000001\n");
  const ProcessResult many = snowid({"business", "orders", "--count", "3"}, orders_file);
  ASSERT_EQ(many.exit_code, 0) << many.err;
  EXPECT_EQ(many.out, "ORD-000002\nORD-000003\nORD-000004\n");
  const ProcessResult json = snowid({"business", "orders", "--count", "2", "--json"}, orders_file);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out),
            (nlohmann::json{{"tag", "orders"}, {"ids", {"ORD-000005", "ORD-000006"}}}));
}

// Bad input is exit 2 before anything is sent; the node's refusals exit 1
// with its message; a node that is not there exits 1.
TEST_F(TagCliTest, ExitCodesForBadInputAndRefusals) {
  start({"--max-batch", "100"});
  expect_usage_error(snowid({"business", "orders", "--count", "0"}, orders_file), "--count");
  expect_usage_error(snowid({"tag", "change", "orders"}, admin_file), "--step, --template");
  expect_usage_error(snowid({"tag", "show"}, admin_file), "TAG");
  expect_usage_error(snowid({"tag", "show", "orders"}, dir.file("missing.token")),
                     "--token-file");
  expect_usage_error(
      test::run_process({SNOWID_CLI_PATH, "tag", "list", "--node", "ftp://127.0.0.1:1"}),
      "--node");
  expect_usage_error(snowid({"tag", "list", "--token", "ops-secret"}, admin_file), "--token");

  // The node's refusals.
  expect_refusal(snowid({"tag", "create", "orders"}, orders_file), "");
  expect_refusal(snowid({"tag", "list"}, ""), "");
  expect_refusal(snowid({"tag", "show", "nosuch"}, admin_file), "nosuch");
  expect_refusal(snowid({"tag", "create", "bad", "--template", "{seq}{seq}"}, admin_file),
                 "seq");
  ASSERT_EQ(snowid({"tag", "create", "orders", "--template", "ORD-{seq:06}"}, admin_file)
                .exit_code,
            0);
  expect_refusal(snowid({"tag", "create", "orders"}, admin_file), "orders");
  expect_refusal(snowid({"business", "orders", "--count", "101"}, orders_file), "1..100");
  expect_refusal(snowid({"business", "orders"}, "", {{"SNOWID_TOKEN", "wrong"}}), "");
  // No node there.
  expect_refusal(test::run_process({SNOWID_CLI_PATH, "tag", "list", "--node",
                                    "http://127.0.0.1:1", "--token-file", admin_file}),
                 "does not answer");
}

TEST_F(TagCliTest, HttpsNodeVerifiedWithCacert) {
  const auto certificate = test::make_self_signed_certificate(dir.path(), "node");
  start({"--tls-cert", certificate.cert, "--tls-key", certificate.key});
  const ProcessResult created = test::run_process(
      {SNOWID_CLI_PATH, "tag", "create", "orders", "--template", "ORD-{seq:06}", "--node",
       url("https"), "--cacert", certificate.cert, "--token-file", admin_file});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const ProcessResult one =
      test::run_process({SNOWID_CLI_PATH, "business", "orders", "--node", url("https"),
                         "--cacert", certificate.cert, "--token-file", orders_file});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "ORD-000001\n");
  // Without the CA, the node is not trusted.
  const auto untrusted = test::run_process({SNOWID_CLI_PATH, "business", "orders", "--node",
                                            url("https"), "--token-file", orders_file});
  expect_refusal(untrusted, "does not answer");
}

}  // namespace
}  // namespace snowid
