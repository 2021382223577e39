// The real snowidd with opaque IDs (opaque_key_file) and fixed-width text:
// the routes, the bearer token, the errors, the key kept out of every
// output, the audit log recording the Snowflake IDs behind opaque ones, and
// the snowid CLI mapping the same IDs with the same key file.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "http_checks.h"
#include "server_process.h"
#include "snowid/decode.h"
#include "snowid/id_encoding.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::expect_json_error;
using test::http_get;
using test::HttpReply;
using test::ProcessResult;
using test::run_process;
using test::texts_of;

// A key whose hex text and raw bytes are both easy to look for.
constexpr const char* kKey = "6f70617175652d6b65792d746573742d3031323334353637383961626364";
constexpr const char* kToken = "opaque-test-token-0123456789";

class OpaqueTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::string key_file = dir.file("opaque.key");
  std::vector<std::string> auth = {std::string("Authorization: Bearer ") + kToken};

  void SetUp() override { std::ofstream(key_file) << kKey << '\n'; }

  std::unique_ptr<test::ServerProcess> start(std::vector<std::string> args = {}) {
    args.insert(args.end(), {"--opaque-key-file", key_file, "--bearer-token", kToken});
    return test::start(dir, args);
  }
  HttpReply get(int port, const std::string& target) const { return http_get(port, target, auth); }
  // `snowid opaque decode` of opaque IDs in `encoding`: their Snowflake IDs.
  std::vector<Id> cli_decode(const std::vector<std::string>& opaque,
                             const std::string& encoding = "decimal") const {
    std::vector<std::string> argv = {SNOWID_CLI_PATH, "opaque",     "decode", "--key-file",
                                     key_file,        "--encoding", encoding};
    argv.insert(argv.end(), opaque.begin(), opaque.end());
    const ProcessResult r = run_process(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<Id> ids;
    for (const auto& line : test::split_lines(r.out)) ids.push_back(*parse_id(line));
    return ids;
  }
};

TEST_F(OpaqueTest, OpaqueIdsMapBackToIncreasingSnowflakeIdsOfThisNode) {
  auto server = start({"--worker-id", "7"});
  const int port = server->port();
  const auto one = get(port, "/v1/id?format=opaque");
  ASSERT_EQ(one.status, 200) << one.body;
  const auto many = get(port, "/v1/ids?count=1000&format=opaque");
  ASSERT_EQ(many.status, 200) << many.body;
  std::vector<std::string> opaque = texts_of(one);
  const auto more = texts_of(many);
  opaque.insert(opaque.end(), more.begin(), more.end());
  ASSERT_EQ(opaque.size(), 1001u);
  std::set<std::string> distinct(opaque.begin(), opaque.end());
  EXPECT_EQ(distinct.size(), opaque.size());
  // Opaque IDs reveal no order: a run of increasing IDs comes out shuffled.
  std::vector<Id> values;
  for (const auto& text : opaque) values.push_back(*parse_id(text));
  EXPECT_FALSE(std::is_sorted(values.begin(), values.end()));

  const std::vector<Id> ids = cli_decode(opaque);
  ASSERT_EQ(ids.size(), opaque.size());
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_EQ(std::set<Id>(ids.begin(), ids.end()).size(), ids.size());
  // The Snowflake ID behind one is this node's: worker 7, time of now.
  const auto decoded =
      nlohmann::json::parse(get(port, "/v1/decode/" + std::to_string(ids.front())).body);
  EXPECT_EQ(decoded["worker"], 7) << decoded;

  // The server maps both ways as the CLI does.
  const auto back = get(port, "/v1/opaque/decode/" + opaque[5]);
  ASSERT_EQ(back.status, 200) << back.body;
  EXPECT_EQ(nlohmann::json::parse(back.body),
            (nlohmann::json{{"id", std::to_string(ids[5])}, {"opaque", opaque[5]}}));
  const auto forth = get(port, "/v1/opaque/encode/" + std::to_string(ids[5]));
  ASSERT_EQ(forth.status, 200) << forth.body;
  EXPECT_EQ(nlohmann::json::parse(forth.body)["opaque"], opaque[5]);
}

TEST_F(OpaqueTest, EncodingsGiveFixedWidthTextThatSortsAsTheIds) {
  auto server = start();
  const int port = server->port();
  const std::vector<std::pair<std::string, std::size_t>> widths = {
      {"hex", 16}, {"base32", 13}, {"base58", 11}, {"base62", 11}};
  for (const auto& [encoding, width] : widths) {
    SCOPED_TRACE(encoding);
    const auto r = get(port, "/v1/ids?count=500&encoding=" + encoding);
    ASSERT_EQ(r.status, 200) << r.body;
    const auto texts = texts_of(r);
    ASSERT_EQ(texts.size(), 500u);
    for (std::size_t i = 0; i < texts.size(); ++i) {
      ASSERT_EQ(texts[i].size(), width) << texts[i];
      if (i > 0) {
        ASSERT_LT(texts[i - 1], texts[i]);  // increasing IDs, increasing text
      }
    }
    // snowid decode --encoding reads them back as Snowflake IDs.
    const ProcessResult decoded =
        run_process({SNOWID_CLI_PATH, "decode", "--json", "--encoding", encoding, texts.back()});
    ASSERT_EQ(decoded.exit_code, 0) << decoded.err;
    const auto fields = nlohmann::json::parse(decoded.out);
    const Id id = *decode_id(texts.back(), *parse_id_encoding(encoding));
    EXPECT_EQ(fields["id"], std::to_string(id)) << decoded.out;

    const auto single = get(port, "/v1/id?format=opaque&encoding=" + encoding);
    ASSERT_EQ(single.status, 200) << single.body;
    const std::string opaque = texts_of(single).front();
    EXPECT_EQ(opaque.size(), width);
    const auto back = get(port, "/v1/opaque/decode/" + opaque + "?encoding=" + encoding);
    ASSERT_EQ(back.status, 200) << back.body;
    EXPECT_EQ(cli_decode({opaque}, encoding).front(),
              *parse_id(nlohmann::json::parse(back.body)["id"].get<std::string>()));
    const auto text = get(port, "/v1/ids?count=3&format=text&encoding=" + encoding);
    ASSERT_EQ(text.status, 200);
    for (const auto& line : test::split_lines(text.body)) EXPECT_EQ(line.size(), width);
    // Opaque IDs as text lines: format=opaque and Accept: text/plain.
    const auto opaque_text = http_get(port, "/v1/ids?count=3&format=opaque&encoding=" + encoding,
                                      {auth[0], "Accept: text/plain"});
    ASSERT_EQ(opaque_text.status, 200) << opaque_text.body;
    const auto lines = test::split_lines(opaque_text.body);
    ASSERT_EQ(lines.size(), 3u) << opaque_text.body;
    EXPECT_EQ(cli_decode(lines, encoding).size(), 3u);
  }
}

TEST_F(OpaqueTest, TokenGuardsTheRoutesAndBadInputIsAJsonError) {
  auto server = start({"--max-batch", "100"});
  const int port = server->port();
  for (const std::string target : {"/v1/id?format=opaque", "/v1/ids?count=2&format=opaque",
                                   "/v1/opaque/encode/1", "/v1/opaque/decode/1"}) {
    expect_json_error(http_get(port, target), 401, "bearer token");
    EXPECT_EQ(get(port, target).status, 200) << target;
  }
  expect_json_error(get(port, "/v1/opaque/encode/abc"), 400, "ID");
  expect_json_error(get(port, "/v1/opaque/encode/9223372036854775808"), 400, "exceeds 2^63-1");
  expect_json_error(get(port, "/v1/opaque/decode/xyz?encoding=hex"), 400, "expected 16");
  expect_json_error(get(port, "/v1/opaque/decode/1?encoding=base64"), 400, "unknown encoding");
  expect_json_error(get(port, "/v1/opaque/decode/1?count=2"), 400, "unknown query parameter");
  expect_json_error(get(port, "/v1/ids?count=101&format=opaque"), 400, "out of range 1..100");
  expect_json_error(get(port, "/v1/uuid?format=opaque"), 400, "not json or text");
  expect_json_error(get(port, "/v1/segment/x?encoding=hex"), 400, "unknown query parameter");
  const std::string metrics = http_get(port, "/metrics").body;
  EXPECT_NE(metrics.find("call=\"opaque\",outcome=\"ok\"} 2"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("call=\"opaque\",outcome=\"unauthenticated\"} 2"), std::string::npos);
}

TEST_F(OpaqueTest, WithoutAKeyTheRoutesAnswer404NamingTheOption) {
  auto server = test::start(dir);
  const int port = server->port();
  for (const std::string target : {"/v1/id?format=opaque", "/v1/ids?count=2&format=opaque",
                                   "/v1/opaque/encode/1", "/v1/opaque/decode/1"}) {
    expect_json_error(http_get(port, target), 404, "opaque_key_file");
  }
  // A HEAD gets the GET's refusal.
  test::HttpConnection conn(port);
  ASSERT_TRUE(conn.send("HEAD /v1/id?format=opaque HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(conn.read_head().status, 404);
  // Fixed-width text needs no key.
  EXPECT_EQ(http_get(port, "/v1/id?encoding=base62").status, 200);
  const auto info = nlohmann::json::parse(http_get(port, "/v1/info").body);
  EXPECT_EQ(info["opaque_ids"]["enabled"], false);
}

// The key shows nowhere: not in the log, /v1/info, /metrics or
// --check-config, neither as the file's text nor as its bytes.
TEST_F(OpaqueTest, TheKeyAppearsInNoOutput) {
  auto server = start();
  const int port = server->port();
  ASSERT_EQ(get(port, "/v1/ids?count=10&format=opaque").status, 200);
  const auto info = get(port, "/v1/info");
  ASSERT_EQ(info.status, 200);
  EXPECT_EQ(nlohmann::json::parse(info.body)["opaque_ids"]["enabled"], true);
  const std::string metrics = http_get(port, "/metrics").body;
  const ProcessResult check = run_process({SNOWIDD_PATH, "--opaque-key-file", key_file,
                                           "--state-dir", dir.file("state"), "--check-config"});
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_NE(check.out.find("opaque_key_file = \"" + key_file + "\""), std::string::npos);
  const std::string log = server->log();
  EXPECT_NE(log.find("opaque IDs on"), std::string::npos) << log;

  std::string raw_bytes;  // the key's hex text read as bytes
  const std::string hex = kKey;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    raw_bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  for (const auto& [what, text] :
       std::vector<std::pair<std::string, std::string>>{{"/v1/info", info.body},
                                                        {"/metrics", metrics},
                                                        {"--check-config", check.out + check.err},
                                                        {"the log", log}}) {
    EXPECT_EQ(text.find(hex), std::string::npos) << what;
    EXPECT_EQ(text.find(hex.substr(0, 16)), std::string::npos) << what;
    EXPECT_EQ(text.find(raw_bytes), std::string::npos) << what;
  }
}

// The audit log records the Snowflake IDs behind the opaque IDs sent, so
// `snowid check --audit` accepts them once mapped back, and would refuse
// the opaque values themselves.
TEST_F(OpaqueTest, TheAuditLogRecordsTheSnowflakeIds) {
  const std::string log_path = dir.file("audit.log");
  auto server = start({"--audit-log", log_path});
  const int port = server->port();
  std::vector<std::string> opaque;
  for (int i = 0; i < 3; ++i) {
    for (const auto& text : texts_of(get(port, "/v1/ids?count=50&format=opaque"))) {
      opaque.push_back(text);
    }
    opaque.push_back(texts_of(get(port, "/v1/id?format=opaque")).front());
  }
  const std::vector<Id> ids = cli_decode(opaque);
  ASSERT_EQ(ids.size(), opaque.size());
  auto check = [&](const std::vector<std::string>& values) {
    const std::string received = dir.file("received.txt");
    std::ofstream out(received);
    for (const auto& value : values) out << "http\t" << value << '\n';
    out.close();
    return run_process({SNOWID_CLI_PATH, "check", "--audit", log_path, received});
  };
  std::vector<std::string> snowflake;
  for (Id id : ids) snowflake.push_back(std::to_string(id));
  const ProcessResult mapped = check(snowflake);
  EXPECT_EQ(mapped.exit_code, 0) << mapped.out << mapped.err;
  const ProcessResult raw = check(opaque);
  EXPECT_NE(raw.exit_code, 0) << raw.out;
}

}  // namespace
}  // namespace snowid
