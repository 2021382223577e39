// The real snowidd over real sockets: every route, the error table, limits,
// slow clients, pipelining, concurrency, signals, and restarts with the clock
// set back (libfaketime).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "chaos.h"
#include "faketime.h"
#include "http_checks.h"
#include "id_checks.h"
#include "missing.h"
#include "server_process.h"
#include "snowid/decode.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::HttpConnection;
using test::HttpReply;
using test::http_get;
using test::http_raw;
using test::ServerProcess;

using test::expect_json_error;
using test::start;

std::vector<Id> ids_of(const HttpReply& r) {
  std::vector<Id> out;
  const auto json = nlohmann::json::parse(r.body);
  if (json.contains("id")) out.push_back(*parse_id(json["id"].get<std::string>()));
  if (json.contains("ids")) {
    for (const auto& s : json["ids"]) out.push_back(*parse_id(s.get<std::string>()));
  }
  return out;
}

class HttpTest : public ::testing::Test {
 protected:
  test::TempDir dir;
};

TEST_F(HttpTest, IdIsAJsonString) {
  auto server = start(dir);
  const HttpReply r = http_get(server->port(), "/v1/id");
  ASSERT_EQ(r.status, 200);
  const auto json = nlohmann::json::parse(r.body);
  ASSERT_TRUE(json["id"].is_string());
  EXPECT_TRUE(parse_id(json["id"].get<std::string>()).ok());
}

TEST_F(HttpTest, IdsAreDistinctAndIncreasing) {
  auto server = start(dir);
  const auto ids = ids_of(http_get(server->port(), "/v1/ids?count=5"));
  ASSERT_EQ(ids.size(), 5u);
  for (std::size_t i = 1; i < ids.size(); ++i) EXPECT_GT(ids[i], ids[i - 1]);
  EXPECT_EQ(ids_of(http_get(server->port(), "/v1/ids?count=10000")).size(), 10000u);
}

// Snowid-Issuer: one token per process (16 hex digits), on every batch of
// /v1/ids and /v1/segment, another after a restart (docs/clients.md).
TEST_F(HttpTest, BatchesNameTheirIssuer) {
  std::string issuer;
  {
    auto server = start(dir);
    const HttpReply first = http_get(server->port(), "/v1/ids?count=3");
    issuer = first.headers.count("snowid-issuer") ? first.headers.at("snowid-issuer") : "";
    EXPECT_EQ(issuer.size(), 16u);
    EXPECT_EQ(issuer.find_first_not_of("0123456789abcdef"), std::string::npos) << issuer;
    const HttpReply second = http_get(server->port(), "/v1/ids?count=1");
    ASSERT_TRUE(second.headers.count("snowid-issuer"));
    EXPECT_EQ(second.headers.at("snowid-issuer"), issuer);
    const HttpReply segment = http_get(server->port(), "/v1/segment/none?count=1");
    ASSERT_TRUE(segment.headers.count("snowid-issuer"));
    EXPECT_EQ(segment.headers.at("snowid-issuer"), issuer);
  }
  auto restarted = start(dir);
  const HttpReply after = http_get(restarted->port(), "/v1/ids?count=1");
  ASSERT_TRUE(after.headers.count("snowid-issuer"));
  EXPECT_NE(after.headers.at("snowid-issuer"), issuer);
}

// format=binary: 8 bytes a number, little-endian, the same IDs and issuer as
// the JSON answer (segment numbers: segment_server_test.cc); refused where
// it does not apply.
TEST_F(HttpTest, BinaryBatchesAreLittleEndianIntegers) {
  auto server = start(dir);
  const int port = server->port();
  const HttpReply r = http_get(port, "/v1/ids?count=1000&format=binary");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.at("content-type"), "application/octet-stream");
  ASSERT_EQ(r.body.size(), 8000u);
  EXPECT_EQ(r.headers.count("snowid-issuer"), 1u);
  const std::vector<Id> ids = test::binary_numbers_of(r);
  for (std::size_t i = 1; i < ids.size(); ++i) ASSERT_GT(ids[i], ids[i - 1]);
  EXPECT_TRUE(decode(*preset("twitter"), ids.front()).ok());
  // After the JSON answer's IDs: one generator, one order.
  const auto json_ids = ids_of(http_get(port, "/v1/ids?count=2"));
  ASSERT_EQ(json_ids.size(), 2u);
  EXPECT_GT(json_ids.front(), ids.back());

  expect_json_error(http_get(port, "/v1/id?format=binary"), 400, "is not json or text or opaque");
  expect_json_error(http_get(port, "/v1/ids?count=2&format=binary&encoding=base58"), 400,
                    "no encoding applies");
  expect_json_error(http_get(port, "/v1/ids?count=0&format=binary"), 400, "out of range");
  test::HttpConnection conn(port);
  ASSERT_TRUE(conn.send("HEAD /v1/ids?count=5&format=binary HTTP/1.1\r\nHost: x\r\n\r\n"));
  test::HttpReply head = conn.read_head();
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.headers["content-type"], "application/octet-stream");
}

TEST_F(HttpTest, BadCountsAre400) {
  auto server = start(dir);
  const int port = server->port();
  expect_json_error(http_get(port, "/v1/ids?count=0"), 400, "out of range 1..10000");
  expect_json_error(http_get(port, "/v1/ids?count=-1"), 400, "negative");
  expect_json_error(http_get(port, "/v1/ids?count=100000000"), 400, "out of range");
  expect_json_error(http_get(port, "/v1/ids?count=18446744073709551616"), 400, "maximum");
  expect_json_error(http_get(port, "/v1/ids?count=x"), 400, "not a decimal number");
  expect_json_error(http_get(port, "/v1/ids"), 400, "count is required");
  expect_json_error(http_get(port, "/v1/ids?count=1&count=2"), 400, "given twice");
}

TEST_F(HttpTest, DecodeRoute) {
  auto server = start(dir);
  const int port = server->port();
  const HttpReply ok = http_get(port, "/v1/decode/910499571847892992");
  ASSERT_EQ(ok.status, 200);
  const auto json = nlohmann::json::parse(ok.body);
  EXPECT_EQ(json["id"], "910499571847892992");
  EXPECT_EQ(json["timestamp_ms"], 1505914988849);
  EXPECT_EQ(json["datacenter"], 17);
  EXPECT_EQ(json["worker"], 25);
  expect_json_error(http_get(port, "/v1/decode/abc"), 400, "not a decimal number");
  expect_json_error(http_get(port, "/v1/decode/-5"), 400, "negative");
  expect_json_error(http_get(port, "/v1/decode/18446744073709551616"), 400, "2^63-1");
}

// Leaf's /decodeSnowflakeId: Leaf's three keys, string values and meanings,
// its workerId every node bit (datacenter 3, worker 7 -> 3 << 5 | 7 = 103);
// /v1/decode keeps the datacenter and the worker apart.
TEST_F(HttpTest, LeafDecodeRoute) {
  auto server = start(dir, {"--worker-id", "7", "--datacenter-id", "3"});
  const int port = server->port();
  const auto ids = ids_of(http_get(port, "/v1/ids?count=2"));
  ASSERT_EQ(ids.size(), 2u);
  for (const Id id : ids) {
    const auto expected =
        nlohmann::json::parse(http_get(port, "/v1/decode/" + std::to_string(id)).body);
    EXPECT_EQ(expected["datacenter"], 3);
    EXPECT_EQ(expected["worker"], 7);
    const HttpReply leaf = http_get(port, "/decodeSnowflakeId?snowflakeId=" + std::to_string(id));
    ASSERT_EQ(leaf.status, 200) << leaf.body;
    EXPECT_EQ(leaf.headers.at("content-type"), "application/json");
    const auto json = nlohmann::json::parse(leaf.body);
    EXPECT_EQ(json.size(), 3u) << leaf.body;
    EXPECT_EQ(json["workerId"], "103");
    EXPECT_FALSE(json.contains("datacenterId")) << leaf.body;
    EXPECT_EQ(json["sequenceId"], std::to_string(expected["sequence"].get<std::uint64_t>()));
    // "1567733700834(2019-09-06 09:35:00.834)": Unix ms, then the same moment in UTC.
    const std::string time = expected["time"].get<std::string>();  // "2019-09-06T09:35:00.834Z"
    EXPECT_EQ(json["timestamp"], std::to_string(expected["timestamp_ms"].get<std::int64_t>()) +
                                     "(" + time.substr(0, 10) + " " + time.substr(11, 12) + ")");
  }
  expect_json_error(http_get(port, "/decodeSnowflakeId"), 400, "snowflakeId is required");
  expect_json_error(http_get(port, "/decodeSnowflakeId?snowflakeId="), 400, "snowflakeId");
  expect_json_error(http_get(port, "/decodeSnowflakeId?snowflakeId=abc"), 400,
                    "not a decimal number");
  expect_json_error(http_get(port, "/decodeSnowflakeId?snowflakeId=-5"), 400, "negative");
  expect_json_error(http_get(port, "/decodeSnowflakeId?snowflakeId=9223372036854775808"), 400,
                    "2^63-1");
  expect_json_error(http_get(port, "/decodeSnowflakeId?snowflakeId=1&count=2"), 400,
                    "unknown query parameter 'count'");
  EXPECT_EQ(
      test::metric(port, "snowid_http_requests_total{route=\"/decodeSnowflakeId\",status=\"200\"}"),
      2);
  EXPECT_EQ(
      test::metric(port, "snowid_http_requests_total{route=\"/decodeSnowflakeId\",status=\"400\"}"),
      6);
}

// The acceptance case: an ID of datacenter 2, worker 7 names Leaf's workerId
// 71 (2 << 5 | 7), computed as Leaf computes it from the ID's bits, and a
// layout of other widths joins its own (datacenter 2 << 3 worker bits | 7 = 23).
TEST_F(HttpTest, LeafDecodeNamesLeafsTenBitWorkerId) {
  auto server = start(dir, {"--worker-id", "7", "--datacenter-id", "2"});
  const Id id = ids_of(http_get(server->port(), "/v1/ids?count=1")).at(0);
  const auto json = nlohmann::json::parse(
      http_get(server->port(), "/decodeSnowflakeId?snowflakeId=" + std::to_string(id)).body);
  EXPECT_EQ(json["workerId"], "71");
  // Leaf's own arithmetic (LeafMonitorController): (id >> 12) ^ (id >> 22 << 10).
  EXPECT_EQ(json["workerId"], std::to_string((id >> 12) ^ (id >> 22 << 10)));
  test::TempDir narrow_dir;
  auto narrow = start(narrow_dir, {"--worker-id", "7", "--datacenter-id", "2",
                                   "--datacenter-bits", "7", "--worker-bits", "3"});
  const Id other = ids_of(http_get(narrow->port(), "/v1/ids?count=1")).at(0);
  EXPECT_EQ(nlohmann::json::parse(http_get(narrow->port(), "/decodeSnowflakeId?snowflakeId=" +
                                                               std::to_string(other))
                                      .body)["workerId"],
            "23");
}

// snowidd with uid-generator's CachedUidGenerator widths (29 bits of
// seconds, 21 of worker, 13 of sequence) and its epochStr read as a JVM in
// Asia/Shanghai reads it: /v1/info shows the epoch 2016-05-19T16:00:00Z and
// /v1/decode gives an ID made by hand that way its real time.
TEST_F(HttpTest, EpochZoneReadsTheEpochAsAJvmInShanghai) {
  auto server = start(dir, {"--preset", "baidu", "--timestamp-bits", "29", "--worker-bits", "21",
                            "--epoch-zone", "Asia/Shanghai"});
  const int port = server->port();
  const auto info = nlohmann::json::parse(http_get(port, "/v1/info").body);
  EXPECT_EQ(info["layout"]["epoch"], "2016-05-19T16:00:00.000Z") << info.dump();
  constexpr std::int64_t kDeltaSeconds = 1704067200 - 1463673600;  // 2024-01-01T00:00:00Z
  constexpr std::int64_t kId = kDeltaSeconds << 34 | std::int64_t{12345} << 13 | 77;
  const auto decoded =
      nlohmann::json::parse(http_get(port, "/v1/decode/" + std::to_string(kId)).body);
  EXPECT_EQ(decoded["time"], "2024-01-01T00:00:00.000Z");
  EXPECT_EQ(decoded["worker"], 12345);
  EXPECT_EQ(decoded["sequence"], 77);
}

TEST_F(HttpTest, AgentsAreCheckedAndCounted) {
  auto server = start(dir);
  const int port = server->port();
  for (const char* bad : {"9lives", "a_b", "a%20b", "x.y"}) {
    expect_json_error(http_get(port, std::string("/v1/id?agent=") + bad), 400, "agent");
  }
  expect_json_error(http_get(port, "/v1/id", {"X-Snowid-Agent: -x"}), 400, "agent");
  expect_json_error(http_get(port, "/v1/id?agent=" + std::string(65, 'a')), 400, "agent");
  EXPECT_EQ(http_get(port, "/v1/ids?count=3&agent=billing-api").status, 200);
  EXPECT_EQ(http_get(port, "/v1/id", {"X-Snowid-Agent: orders"}).status, 200);
  const std::string metrics = http_get(port, "/metrics").body;
  EXPECT_NE(metrics.find("snowid_ids_issued_total{agent=\"billing-api\"} 3"), std::string::npos);
  EXPECT_NE(metrics.find("snowid_ids_issued_total{agent=\"orders\"} 1"), std::string::npos);
}

TEST_F(HttpTest, AgentLabelsAreCapped) {
  auto server = start(dir);
  for (int i = 0; i < 130; ++i) {
    ASSERT_EQ(http_get(server->port(), "/v1/id?agent=a" + std::to_string(i)).status, 200);
  }
  const std::string metrics = http_get(server->port(), "/metrics").body;
  const auto labels = std::count(metrics.begin(), metrics.end(), '\n');
  EXPECT_LT(labels, 400);
  EXPECT_NE(metrics.find("snowid_ids_issued_total{agent=\"other\"} 30"), std::string::npos);
}

TEST_F(HttpTest, RoutingErrors) {
  auto server = start(dir);
  const int port = server->port();
  expect_json_error(http_get(port, "/v2/id"), 404, "no route");
  expect_json_error(http_get(port, "/index.html"), 404, "no route");
  const HttpReply post =
      http_raw(port, "POST /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  expect_json_error(post, 405, "GET and HEAD only");
  EXPECT_EQ(post.headers.at("allow"), "GET, HEAD");
}

// GET / is the status page: public, as it holds no data (its script fetches
// /v1/info and the rest with the token), served with a policy that allows
// its own inline style and script by hash and fetches to its origin only.
// (tests/browser/status_page_test.cc runs it in a browser.)
TEST_F(HttpTest, StatusPageIsPublicAndLocksItselfDown) {
  auto server = start(dir, {"--bearer-token", "s3cret"});
  const int port = server->port();
  const HttpReply page = http_get(port, "/?refresh=1");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.headers.at("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(page.headers.at("x-content-type-options"), "nosniff");
  EXPECT_EQ(page.headers.at("cache-control"), "no-cache");
  const std::string policy = page.headers.at("content-security-policy");
  EXPECT_TRUE(std::regex_match(
      policy, std::regex("default-src 'none'; script-src 'sha256-[A-Za-z0-9+/]{43}='; "
                         "style-src 'sha256-[A-Za-z0-9+/]{43}='; connect-src 'self'; .*")))
      << policy;
  EXPECT_EQ(page.body.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(page.body.find("s3cret"), std::string::npos);
  EXPECT_EQ(page.body.find("<script src"), std::string::npos);
  expect_json_error(http_get(port, "/v1/info"), 401, "bearer token");

  // HEAD: the same header fields, no body, and the connection still frames
  // the next response.
  test::HttpConnection conn(port);
  ASSERT_TRUE(
      conn.send("HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  const HttpReply head = conn.read_head();
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
  EXPECT_EQ(head.headers.at("content-length"), std::to_string(page.body.size()));
  EXPECT_EQ(head.headers.at("content-security-policy"), policy);
  EXPECT_EQ(conn.read().status, 200);
  const HttpReply post = http_raw(port, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  expect_json_error(post, 405, "GET and HEAD only");
  EXPECT_EQ(test::metric(port, "snowid_http_requests_total{route=\"/\",status=\"200\"}"), 2);
}

// HEAD on every GET route: the GET's header fields and no body, so that the
// next response on a kept-alive connection is read as such; a HEAD issues no
// ID (issue "Hardening", item 11).
TEST_F(HttpTest, HeadGetsHeadersOnlyAndIssuesNothing) {
  auto server = start(dir);
  test::HttpConnection conn(server->port());
  const Id before = std::stoll(
      nlohmann::json::parse(http_get(server->port(), "/v1/id").body)["id"].get<std::string>());
  for (const char* target : {"/v1/id", "/v1/ids?count=5", "/healthz", "/readyz", "/metrics",
                             "/v1/info", "/api/snowflake/get/orders"}) {
    ASSERT_TRUE(conn.send(std::string("HEAD ") + target + " HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_TRUE(conn.send("GET /v1/id HTTP/1.1\r\nHost: x\r\n\r\n"));
  }
  Id last = before;
  for (int i = 0; i < 7; ++i) {
    // The HEAD's response has no body: reading it as a response without
    // content must leave the GET's response next, whole.
    test::HttpReply head = conn.read_head();
    EXPECT_EQ(head.status, 200) << i;
    EXPECT_TRUE(head.body.empty()) << i;
    test::HttpReply get = conn.read();
    ASSERT_EQ(get.status, 200) << i << ": " << get.body;
    const Id id = std::stoll(nlohmann::json::parse(get.body)["id"].get<std::string>());
    EXPECT_GT(id, last);
    last = id;
  }
  // Six GETs' and this one's IDs: the HEADs consumed none of the sequence
  // (each next ID follows the last within the same time unit or later).
  const auto metrics = http_get(server->port(), "/metrics").body;
  EXPECT_NE(metrics.find("snowid_ids_issued_total{agent=\"none\"} 8\n"), std::string::npos)
      << metrics;
}

TEST_F(HttpTest, MetricsDescribeTheProcessAndTheBuild) {
  auto server = start(dir);
  const std::string metrics = http_get(server->port(), "/metrics").body;
  // The version `snowidd --version` prints, and the compiler that built it.
  const auto version = test::run_process({SNOWIDD_PATH, "--version"});
  ASSERT_EQ(version.exit_code, 0);
  const std::string printed = version.out.substr(0, version.out.find('\n'));
  ASSERT_EQ(printed.rfind("snowid ", 0), 0u) << printed;
  EXPECT_TRUE(std::regex_search(
      metrics, std::regex("\nsnowid_build_info\\{version=\"" + printed.substr(7) +
                          "\",compiler=\"(gcc|clang) [0-9]+\\.[0-9]+\\.[0-9]+\"\\} 1\n")))
      << metrics;
  // Read from /proc: each in a range only a real reading falls in.
  const auto cpu = test::metric(metrics, "process_cpu_seconds_total");
  ASSERT_TRUE(cpu.has_value()) << metrics;
  EXPECT_GT(*cpu, 0.0);
  EXPECT_LT(*cpu, 600.0);
  const auto resident = test::metric(metrics, "process_resident_memory_bytes");
  ASSERT_TRUE(resident.has_value());
  EXPECT_GT(*resident, 1e6);
  EXPECT_LT(*resident, 4e9);
  const auto virtual_memory = test::metric(metrics, "process_virtual_memory_bytes");
  ASSERT_TRUE(virtual_memory.has_value());
  EXPECT_GE(*virtual_memory, *resident);
  const auto fds = test::metric(metrics, "process_open_fds");
  const auto max_fds = test::metric(metrics, "process_max_fds");
  ASSERT_TRUE(fds.has_value() && max_fds.has_value());
  EXPECT_GE(*fds, 4.0);  // stdin, stdout, stderr, the listeners, the state file
  EXPECT_LT(*fds, *max_fds);
  // Opening connections shows in the count of descriptors.
  std::vector<std::unique_ptr<test::HttpConnection>> held;
  for (int i = 0; i < 20; ++i) {
    held.push_back(std::make_unique<test::HttpConnection>(server->port()));
    ASSERT_TRUE(held.back()->send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_EQ(held.back()->read().status, 200);
  }
  const auto more = test::metric(http_get(server->port(), "/metrics").body, "process_open_fds");
  ASSERT_TRUE(more.has_value());
  EXPECT_GE(*more, *fds + 20);
  const auto started = test::metric(metrics, "process_start_time_seconds");
  ASSERT_TRUE(started.has_value());
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LT(*started, now + 2);
  EXPECT_GT(*started, now - 120);
}

TEST_F(HttpTest, OversizedHeadersAndBodies) {
  auto server = start(dir);
  const int port = server->port();
  expect_json_error(http_get(port, "/v1/id", {"X-Big: " + std::string(20000, 'a')}), 431,
                    "header too large");
  const std::string body(10000, 'b');
  expect_json_error(http_raw(port, "POST /v1/id HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                       std::to_string(body.size()) + "\r\n\r\n" + body),
                    413, "body too large");
  expect_json_error(http_raw(port, "GARBAGE\r\n\r\n"), 400, "malformed");
}

TEST_F(HttpTest, SlowAndIdleClientsAreCutOff) {
  auto server = start(dir, {"--read-timeout-ms", "300", "--idle-timeout-ms", "300"});
  const int port = server->port();
  HttpConnection half(port);
  ASSERT_TRUE(half.send("GET /v1/id HTTP/1.1\r\nHo"));
  HttpConnection idle(port);
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_TRUE(half.closed_by_peer(std::chrono::seconds{3}));
  EXPECT_TRUE(idle.closed_by_peer(std::chrono::seconds{3}));
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds{3});
  EXPECT_EQ(http_get(port, "/v1/id").status, 200);  // the server is fine
}

TEST_F(HttpTest, KeepAliveAndPipelining) {
  auto server = start(dir);
  HttpConnection c(server->port());
  std::string three;
  for (const char* target : {"/v1/id", "/healthz", "/v1/ids?count=2"}) {
    three += std::string("GET ") + target + " HTTP/1.1\r\nHost: x\r\n\r\n";
  }
  ASSERT_TRUE(c.send(three));
  const HttpReply a = c.read(), b = c.read(), d = c.read();
  EXPECT_EQ(a.status, 200);
  EXPECT_NE(a.body.find("\"id\""), std::string::npos);
  EXPECT_NE(b.body.find("ok"), std::string::npos);
  EXPECT_NE(d.body.find("\"ids\""), std::string::npos);
  ASSERT_TRUE(c.send("GET /v1/id HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_EQ(c.read().status, 200);
}

TEST_F(HttpTest, TextFormatAndLeafCompatibility) {
  auto server = start(dir);
  const int port = server->port();
  const HttpReply text = http_get(port, "/v1/ids?count=3", {"Accept: text/plain"});
  ASSERT_EQ(text.status, 200);
  EXPECT_EQ(std::count(text.body.begin(), text.body.end(), '\n'), 3);
  const HttpReply query = http_get(port, "/v1/id?format=text");
  EXPECT_TRUE(parse_id(query.body.substr(0, query.body.size() - 1)).ok()) << query.body;
  const HttpReply leaf = http_get(port, "/api/snowflake/get/order");
  ASSERT_EQ(leaf.status, 200);
  EXPECT_TRUE(parse_id(leaf.body).ok()) << leaf.body;
}

TEST_F(HttpTest, HealthReadinessInfoAndMetrics) {
  auto server = start(dir, {"--worker-id", "7", "--datacenter-id", "3"});
  const int port = server->port();
  EXPECT_EQ(http_get(port, "/healthz").status, 200);
  EXPECT_EQ(http_get(port, "/readyz").status, 200);
  ASSERT_EQ(http_get(port, "/v1/ids?count=4").status, 200);
  const auto info = nlohmann::json::parse(http_get(port, "/v1/info").body);
  EXPECT_EQ(info["worker_id"], 7);
  EXPECT_EQ(info["datacenter_id"], 3);
  EXPECT_EQ(info["clock_policy"], "monotonic");
  EXPECT_EQ(info["ids_issued"], 4);
  EXPECT_EQ(info["layout"]["sequence_bits"], 12);
  EXPECT_EQ(info["http"], "127.0.0.1:" + std::to_string(port));
  EXPECT_GT(info["high_water_ms"].get<long long>(), 0);

  const HttpReply metrics = http_get(port, "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.headers.at("content-type").find("text/plain; version=0.0.4"),
            std::string::npos);
  // Prometheus text format: comments, or `name{labels} value`.
  const std::regex sample(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*",?)*\})? [-+0-9.eEInf]+$)");
  int samples = 0;
  for (const auto& line : test::split_lines(metrics.body)) {
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    EXPECT_TRUE(std::regex_match(line, sample)) << line;
    ++samples;
  }
  EXPECT_GT(samples, 10);
  for (const char* name : {"snowid_http_request_duration_seconds_bucket", "snowid_open_connections",
                           "snowid_clock_rollback_events_total", "snowid_drift_ahead_seconds",
                           "snowid_state_write_failures_total"}) {
    EXPECT_NE(metrics.body.find(name), std::string::npos) << name;
  }
}

TEST_F(HttpTest, BearerTokenGuardsTheIdRoutes) {
  auto server = start(dir, {"--bearer-token", "s3cret"});
  const int port = server->port();
  EXPECT_EQ(http_get(port, "/v1/id").status, 401);
  EXPECT_EQ(http_get(port, "/v1/id", {"Authorization: Bearer wrong"}).status, 401);
  EXPECT_EQ(http_get(port, "/v1/id", {"Authorization: Bearer s3cret"}).status, 200);
  EXPECT_EQ(http_get(port, "/v1/id", {"Authorization: bEaReR s3cret"}).status, 200);
  // Near misses: a prefix, an extension, the secret twice, another case, empty.
  for (const char* near : {"s3cre", "s3crett", "s3crets3cret", "S3CRET", ""}) {
    EXPECT_EQ(http_get(port, "/v1/id", {std::string("Authorization: Bearer ") + near}).status, 401)
        << near;
  }
  expect_json_error(http_get(port, "/decodeSnowflakeId?snowflakeId=1"), 401, "bearer token");
  EXPECT_EQ(
      http_get(port, "/decodeSnowflakeId?snowflakeId=1", {"Authorization: Bearer s3cret"}).status,
      200);
  EXPECT_EQ(http_get(port, "/healthz").status, 200);
}

TEST_F(HttpTest, ConnectionLimitHolds) {
  auto server = start(dir, {"--max-connections", "2"});
  const int port = server->port();
  HttpConnection a(port), b(port);
  ASSERT_TRUE(a.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_TRUE(b.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_EQ(a.read().status, 200);
  ASSERT_EQ(b.read().status, 200);
  expect_json_error(http_get(port, "/v1/id"), 503, "too many open connections");
}

TEST_F(HttpTest, SecondServerOnTheSameStateDirectoryRefuses) {
  auto first = start(dir);
  ServerProcess second(SNOWIDD_PATH, {"--state-dir", dir.file("state")});
  EXPECT_FALSE(second.started());
  EXPECT_NE(second.log().find("is in use"), std::string::npos) << second.log();
}

TEST_F(HttpTest, BadConfigurationIsOneLineAndExitTwo) {
  const auto r = test::run_process({SNOWIDD_PATH, "--worker-id", "32", "--check-config"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("worker_id 32 is out of range"), std::string::npos) << r.err;
  const auto bad_policy = test::run_process({SNOWIDD_PATH, "--clock-policy", "maybe"});
  EXPECT_EQ(bad_policy.exit_code, 2);
  // Asking for TLS with files that are not there must not serve plain text.
  const auto tls = test::run_process({SNOWIDD_PATH, "--tls-cert", "c.pem", "--tls-key", "k.pem",
                                      "--check-config"});
  EXPECT_EQ(tls.exit_code, 2);
  EXPECT_NE(tls.err.find("tls_cert c.pem is not a readable file"), std::string::npos) << tls.err;
}

// Concurrent keep-alive clients: the union of their IDs has no duplicate.
TEST_F(HttpTest, ConcurrentClientsNeverShareAnId) {
  auto server = start(dir, {"--io-threads", "2"});
  const int port = server->port();
  std::vector<std::vector<Id>> per_client(4);
  std::vector<std::thread> clients;
  for (auto& mine : per_client) {
    clients.emplace_back([port, &mine] {
      HttpConnection c(port);
      for (int i = 0; i < 500; ++i) {
        if (!c.send("GET /v1/ids?count=50 HTTP/1.1\r\nHost: x\r\n\r\n")) return;
        const HttpReply r = c.read();
        if (r.status != 200) return;
        for (Id id : ids_of(r)) mine.push_back(id);
      }
    });
  }
  for (auto& t : clients) t.join();
  for (const auto& mine : per_client) EXPECT_EQ(mine.size(), 25000u);
  EXPECT_EQ(test::check_unique_and_increasing(per_client), "");
}

TEST_F(HttpTest, SigtermWritesTheExactMarkAndExitsZero) {
  Id last = 0;
  {
    auto server = start(dir);
    last = ids_of(http_get(server->port(), "/v1/ids?count=100")).back();
    server->signal(SIGTERM);
    EXPECT_EQ(server->wait(), 0) << server->log();
    EXPECT_NE(server->log().find("stopped"), std::string::npos);
  }
  auto again = start(dir);
  const Id next = ids_of(http_get(again->port(), "/v1/id")).front();
  EXPECT_GT(next, last);
}

// Regression: a request waiting for the clock (wait policy) when SIGTERM
// arrived got its connection closed with no response, seconds later. It
// gets a 503 with the reason at once, as a gRPC call gets UNAVAILABLE.
TEST_F(HttpTest, SigtermAnswersARequestWaitingForTheClock503) {
  test::FaketimeControl clock;
  if (!clock.available()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  test::ServerProcess server(
      SNOWIDD_PATH,
      {"--clock-policy", "wait", "--max-wait-ms", "8000", "--state-dir", dir.file("state")},
      clock.env());
  ASSERT_TRUE(server.started()) << server.log();
  ASSERT_EQ(http_get(server.port(), "/v1/id").status, 200);
  clock.set_offset(std::chrono::milliseconds{-6000});
  // Past the millisecond of the last ID, so that the step is what the next
  // request meets.
  std::this_thread::sleep_for(std::chrono::milliseconds{50});
  HttpConnection waiting(server.port());
  ASSERT_TRUE(waiting.send("GET /v1/id HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds{500});
  const auto signalled = std::chrono::steady_clock::now();
  server.signal(SIGTERM);
  const HttpReply reply = waiting.read(std::chrono::milliseconds{4000});
  const auto answered = std::chrono::steady_clock::now() - signalled;
  ASSERT_EQ(reply.status, 503) << "no response to the waiting request";
  EXPECT_LT(answered, std::chrono::milliseconds{1500});
  EXPECT_EQ(reply.headers.at("connection"), "close");
  const auto body = nlohmann::json::parse(reply.body, nullptr, false);
  EXPECT_NE(body.value("error", "").find("shutting down"), std::string::npos) << reply.body;
  EXPECT_EQ(server.wait(std::chrono::seconds{20}), 0) << server.log();
}

// Runs load, kills the server with SIGKILL, restarts it with the clock set
// back by `offset`, and checks the policy's outcome and that no ID repeats.
struct RestartCase {
  const char* name;
  const char* policy;
  const char* offset;
  std::vector<std::string> extra;
  bool starts;
};

class RestartTest : public HttpTest, public ::testing::WithParamInterface<RestartCase> {};

TEST_P(RestartTest, KillNineThenClockBehindNeverRepeats) {
  const std::string faketime = test::faketime_library();
  if (faketime.empty()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  const RestartCase c = GetParam();
  std::vector<std::string> args{"--clock-policy", c.policy};
  args.insert(args.end(), c.extra.begin(), c.extra.end());
  std::set<Id> seen;
  Id highest = 0;
  {
    auto server = start(dir, args);
    std::atomic<bool> stop{false};
    std::vector<Id> collected;
    std::thread load([&] {
      HttpConnection conn(server->port());
      while (!stop) {
        if (!conn.send("GET /v1/ids?count=1000 HTTP/1.1\r\nHost: x\r\n\r\n")) break;
        const HttpReply r = conn.read();
        if (r.status != 200) break;
        for (Id id : ids_of(r)) collected.push_back(id);
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds{300});
    server->signal(SIGKILL);
    stop = true;
    load.join();
    ASSERT_GT(collected.size(), 1000u);
    for (Id id : collected) ASSERT_TRUE(seen.insert(id).second);
    highest = *seen.rbegin();
  }
  const std::map<std::string, std::string> env{{"LD_PRELOAD", faketime}, {"FAKETIME", c.offset},
                                               {"ASAN_OPTIONS", "verify_asan_link_order=0"}};
  args.push_back("--state-dir");
  args.push_back(dir.file("state"));
  ServerProcess restarted(SNOWIDD_PATH, args, env);
  ASSERT_EQ(restarted.started(), c.starts) << restarted.log();
  if (!c.starts) {
    EXPECT_NE(restarted.log().find("behind the high-water mark"), std::string::npos)
        << restarted.log();
    return;
  }
  // A wait-policy restart listens at once and serves once its clock has
  // passed the mark; meanwhile /readyz says 503.
  ASSERT_TRUE(test::wait_until(
      [&] { return http_get(restarted.port(), "/readyz").status == 200; },
      std::chrono::seconds{10}));
  for (int i = 0; i < 20; ++i) {
    const HttpReply r = http_get(restarted.port(), "/v1/ids?count=1000");
    ASSERT_EQ(r.status, 200) << r.body << "\nserver log:\n" << restarted.log();
    for (Id id : ids_of(r)) {
      ASSERT_GT(id, highest);
      ASSERT_TRUE(seen.insert(id).second);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    EachPolicy, RestartTest,
    ::testing::Values(
        RestartCase{"RejectRefuses", "reject", "-30s", {}, false},
        RestartCase{"WaitWaits", "wait", "-2s", {"--max-start-wait-ms", "8000"}, true},
        RestartCase{"WaitRefusesBeyondBound", "wait", "-30s", {"--max-start-wait-ms", "1000"},
                    false},
        RestartCase{"MonotonicContinues", "monotonic", "-30s", {"--max-drift-ms", "60000"}, true},
        RestartCase{"MonotonicRefusesBeyondDrift", "monotonic", "-30s", {}, false}),
    [](const ::testing::TestParamInfo<RestartCase>& param) { return param.param.name; });

}  // namespace
}  // namespace snowid
