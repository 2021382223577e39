// Segment mode served by the real snowidd: tags made with the real `snowid`
// CLI, numbers fetched over HTTP and gRPC, restarts (SIGTERM and kill -9),
// the error table and readiness while the store is down. Two nodes on one
// PostgreSQL database under load, with the database stopped mid-run, are a
// fault scenario: tests/chaos/segment_chaos_test.cc.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "chaos.h"
#include "http_checks.h"
#include "server_process.h"
#include "snowid/v1/snowid.grpc.pb.h"
#include "started_server.h"
#include "raw_socket.h"
#include "subprocess.h"

namespace snowid {
namespace {

namespace v1 = ::snowid::v1;
using std::chrono::milliseconds;
using std::chrono::seconds;
using test::http_get;
using test::HttpReply;
using test::ServerProcess;

const std::string kCli = SNOWID_CLI_PATH;
const std::string kServer = SNOWIDD_PATH;

// `snowid ARGS... --segment-store URL`; the output on failure.
std::string cli(std::vector<std::string> args, const std::string& store_url) {
  args.insert(args.begin(), kCli);
  args.push_back("--segment-store");
  args.push_back(store_url);
  const auto result = test::run_process(args, {}, seconds{20});
  return result.exit_code == 0 ? ""
                               : "exit " + std::to_string(result.exit_code) + ": " + result.err;
}

std::unique_ptr<ServerProcess> start(const std::string& state_dir,
                                     std::vector<std::string> args = {}) {
  return test::start_server(kServer, state_dir, std::move(args));
}

// The numbers of a 200 answer: {"id":"…"}, {"ids":[…]} or bare lines.
std::vector<std::int64_t> numbers_of(const HttpReply& reply) {
  std::vector<std::int64_t> out;
  if (reply.status != 200) return out;
  if (reply.headers.count("content-type") &&
      reply.headers.at("content-type") == "application/octet-stream") {
    return test::binary_numbers_of(reply);
  }
  const auto json = nlohmann::json::parse(reply.body, nullptr, false);
  if (json.is_object() && json.contains("id")) {
    out.push_back(std::stoll(json["id"].get<std::string>()));
  } else if (json.is_object() && json.contains("ids")) {
    for (const auto& s : json["ids"]) out.push_back(std::stoll(s.get<std::string>()));
  } else {
    for (const std::string& line : test::split_lines(reply.body)) out.push_back(std::stoll(line));
  }
  return out;
}

std::int64_t next_number(int port, const std::string& tag) {
  const auto numbers = numbers_of(http_get(port, "/v1/segment/" + tag));
  return numbers.size() == 1 ? numbers[0] : -1;
}

std::string error_of(const HttpReply& reply) {
  const auto json = nlohmann::json::parse(reply.body, nullptr, false);
  return json.is_object() && json.contains("error") ? json["error"].get<std::string>() : "";
}

// `reply` is {"error":"…"} with `status`, its message holding `says`.
void expect_error(const HttpReply& reply, int status, const std::string& says) {
  EXPECT_EQ(reply.status, status) << reply.body;
  EXPECT_EQ(reply.headers.count("content-type") ? reply.headers.at("content-type") : "",
            "application/json");
  EXPECT_NE(error_of(reply).find(says), std::string::npos) << reply.body;
}

std::unique_ptr<v1::IdService::Stub> stub_for(const ServerProcess& server) {
  return v1::IdService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(server.grpc_port()), grpc::InsecureChannelCredentials()));
}

std::unique_ptr<grpc::ClientContext> grpc_context(const std::string& token = "") {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + seconds{10});
  if (!token.empty()) c->AddMetadata("authorization", "Bearer " + token);
  return c;
}

// A state directory with the default store (segments.db in it) holding `order`.
class SegmentServer : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(state);
    ASSERT_EQ(cli({"segment", "create", "order", "--step", "100"}, store_url), "");
  }
  test::TempDir dir;
  const std::string state = dir.file("state");
  const std::string store_url = "sqlite://" + state + "/segments.db";
};

// The acceptance path: `snowid segment create` with the CLI's default store
// (./.snowid/segments.db), snowidd with its default store in ./.snowid, and
// numbers that keep increasing across a clean restart and a kill -9.
TEST(SegmentServerDefaults, CliAndServerShareTheDefaultStoreAcrossRestarts) {
  test::TempDir dir;
  const auto created = test::run_process(
      {"/bin/sh", "-c", "cd '" + dir.path() + "' && exec '" + kCli + "' segment create order"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const std::string state = dir.file(".snowid");

  std::vector<std::int64_t> seen;
  auto server = start(state);
  ASSERT_TRUE(server->started());
  EXPECT_NE(server->log().find("segment store sqlite://" + state + "/segments.db"),
            std::string::npos)
      << server->log();
  for (int i = 0; i < 5; ++i) seen.push_back(next_number(server->port(), "order"));
  EXPECT_EQ(seen.front(), 1);  // the tag's first number: this is the CLI's store
  server->signal(SIGTERM);
  EXPECT_EQ(server->wait(), 0);

  server = start(state);
  for (int i = 0; i < 5; ++i) seen.push_back(next_number(server->port(), "order"));
  server->signal(SIGKILL);
  EXPECT_EQ(server->wait(), -SIGKILL);

  server = start(state);
  for (int i = 0; i < 5; ++i) seen.push_back(next_number(server->port(), "order"));
  for (std::size_t i = 1; i < seen.size(); ++i) {
    EXPECT_GT(seen[i], seen[i - 1]) << "at request " << i;
  }
}

// segments.db removed under a serving node: once its buffered numbers are
// used up it answers 503 and /readyz/segment 503, and the log names the
// file, rather than taking ranges from a file nobody else, and no restart,
// can see.
TEST_F(SegmentServer, RemovedStoreFileStopsTheTagOnceItsBuffersAreUsed) {
  auto server = start(state);
  ASSERT_TRUE(server->started()) << server->log();
  ASSERT_GT(next_number(server->port(), "order"), 0);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(state + "/segments.db" + suffix);
  }
  // Buffers hold at most two ranges of the tag's step (100), prefetched.
  int served = 0;
  HttpReply reply;
  for (int i = 0; i < 50; ++i) {
    reply = http_get(server->port(), "/v1/segment/order?count=100");
    if (reply.status != 200) break;
    ++served;
  }
  EXPECT_LT(served, 50) << "still serving from a removed file";
  expect_error(reply, 503, "unavailable");
  EXPECT_EQ(http_get(server->port(), "/readyz/segment").status, 503);
  EXPECT_TRUE(test::wait_until(
      [&] { return server->log().find("was removed or replaced") != std::string::npos; },
      seconds{5}))
      << server->log();
}

TEST_F(SegmentServer, BadInputGetsTheRightStatus) {
  auto server = start(state, {"--max-batch", "100"});
  struct Case {
    std::string target;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"/v1/segment/%23ticket", 400, "kept for snowid's own rows"},
      {"/v1/segment/" + std::string(129, 'a'), 400, "129 characters"},
      {"/v1/segment/a%09b", 400, "control character"},
      {"/v1/segment/a%FFb", 400, "not well-formed UTF-8"},
      {"/v1/segment/a%2", 400, "two hexadecimal digits"},
      {"/v1/segment/", 404, "no route"},
      {"/v1/segment/nope", 404, "unknown segment tag 'nope'"},
      {"/v1/segment/order?count=0", 400, "out of range 1..100"},
      {"/v1/segment/order?count=101", 400, "out of range 1..100"},
      {"/v1/segment/order?count=99999999999999999999999", 400, "count"},
      {"/v1/segment/order?count=x", 400, "count"},
      {"/v1/segment/order?count=-1", 400, "count"},
      {"/v1/segment/order?count=1&count=2", 400, "twice"},
      {"/v1/segment/order?agent=9bad", 400, "agent"},
      {"/api/segment/get/%23x", 400, "bad segment tag"},
      {"/api/segment/get/%00", 400, "control character"},
      {"/api/segment/get/nope", 404, "unknown segment tag"},
  };
  for (const Case& c : cases) {
    const HttpReply reply = http_get(server->port(), c.target);
    EXPECT_EQ(reply.status, c.status) << c.target << ": " << reply.body;
    EXPECT_NE(error_of(reply).find(c.says), std::string::npos) << c.target << ": " << reply.body;
  }
  const HttpReply post =
      test::http_raw(server->port(), "POST /v1/segment/order HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(post.status, 405);
  // After all that the tag still works and unknown tags were not remembered.
  EXPECT_EQ(next_number(server->port(), "order"), 1);
  const auto info = nlohmann::json::parse(http_get(server->port(), "/v1/info").body);
  EXPECT_EQ(info["segment"]["tags"], nlohmann::json::array({"order"}));
}

TEST_F(SegmentServer, FormatsAndTheLeafRouteShareOneSequence) {
  auto server = start(state);
  const int port = server->port();
  std::vector<std::int64_t> all;
  auto take = [&](const HttpReply& reply, std::size_t expected, const std::string& type) {
    EXPECT_EQ(reply.status, 200) << reply.body;
    EXPECT_EQ(reply.headers.count("content-type") ? reply.headers.at("content-type") : "", type);
    const auto numbers = numbers_of(reply);
    EXPECT_EQ(numbers.size(), expected) << reply.body;
    all.insert(all.end(), numbers.begin(), numbers.end());
  };
  const std::string json = "application/json", text = "text/plain; charset=utf-8";
  take(http_get(port, "/v1/segment/order"), 1, json);
  take(http_get(port, "/v1/segment/order?count=5"), 5, json);
  take(http_get(port, "/v1/segment/order?count=250&agent=billing"), 250, json);
  take(http_get(port, "/v1/segment/order?count=3&format=text"), 3, text);
  take(http_get(port, "/v1/segment/order", {"Accept: text/plain"}), 1, text);
  take(http_get(port, "/v1/segment/order?count=4&format=binary"), 4, "application/octet-stream");
  take(http_get(port, "/v1/segment/order?format=binary"), 1, "application/octet-stream");
  const HttpReply leaf = http_get(port, "/api/segment/get/order");
  EXPECT_EQ(leaf.body.find('\n'), std::string::npos) << "Leaf answers the bare number";
  take(leaf, 1, text);
  ASSERT_EQ(all.size(), 266u);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], static_cast<std::int64_t>(i + 1));

  EXPECT_EQ(test::metric(port, "snowid_segment_numbers_issued_total{tag=\"order\"}"), 266);
  EXPECT_GE(test::metric(port, "snowid_segment_fetches_total{tag=\"order\"}"), 2);  // 100 + 200
  // The tag's first request waits; later ones only if they outran a fetch.
  const double waited = test::metric(port, "snowid_segment_requests_waited_total{tag=\"order\"}");
  EXPECT_GE(waited, 1);
  EXPECT_LE(waited, test::metric(port, "snowid_segment_fetches_total{tag=\"order\"}"));
  EXPECT_EQ(test::metric(port, "snowid_segment_store_reachable"), 1);
  EXPECT_EQ(test::metric(port, "snowid_http_requests_total{route=\"/v1/segment\",status=\"200\"}"), 7);
  EXPECT_EQ(test::metric(port, "snowid_http_requests_total{route=\"/api/segment/get\",status=\"200\"}"),
            1);
  EXPECT_EQ(test::metric(port, "snowid_ids_issued_total{agent=\"billing\"}"), -1)
      << "segment numbers are not Snowflake IDs";
}

// The cache entry of `tag` in a /cache answer; null if absent.
nlohmann::json cache_entry(const nlohmann::json& cache, const std::string& tag) {
  for (const auto& entry : cache["tags"]) {
    if (entry["key"] == tag) return entry;
  }
  return nullptr;
}

// Leaf's monitoring routes: /cache shows each tag's two ranges and where it
// stands in them, /db the store's rows, whose max ids are the ends of the
// ranges the node took; both as an HTML table for a browser.
TEST_F(SegmentServer, LeafCacheAndDbShowBuffersAndRows) {
  ASSERT_EQ(cli({"segment", "create", "invoice", "--step", "10", "--description",
                 "<b>\"bills\" & 'dues'</b>"},
                store_url),
            "");
  auto server = start(state);
  const int port = server->port();
  EXPECT_EQ(nlohmann::json::parse(http_get(port, "/cache").body)["tags"].size(), 0u);
  ASSERT_EQ(numbers_of(http_get(port, "/v1/segment/order?count=3")).size(), 3u);
  ASSERT_EQ(numbers_of(http_get(port, "/api/segment/get/invoice")).size(), 1u);
  ASSERT_EQ(numbers_of(http_get(port, "/api/segment/get/invoice")).size(), 1u);

  // invoice passed its prefetch mark (10% of 10): its next range arrives.
  nlohmann::json cache;
  EXPECT_TRUE(test::wait_until(
      [&] {
        cache = nlohmann::json::parse(http_get(port, "/cache").body);
        return cache_entry(cache, "invoice")["nextReady"] == true;
      },
      seconds{10}))
      << cache.dump();
  EXPECT_EQ(cache["tags_known"], 2);
  EXPECT_EQ(cache["truncated"], false);
  const nlohmann::json order = cache_entry(cache, "order");
  ASSERT_TRUE(order.is_object()) << cache.dump();
  EXPECT_EQ(order["initOk"], true);
  EXPECT_EQ(order["pos"], 0);
  EXPECT_EQ(order["value0"], 4);  // 1, 2, 3 issued
  EXPECT_EQ(order["max0"], 101);
  EXPECT_EQ(order["step0"], 100);
  EXPECT_EQ(order["nextReady"], false);
  EXPECT_EQ(order["max1"], 0);
  const nlohmann::json invoice = cache_entry(cache, "invoice");
  EXPECT_EQ(invoice["value0"], 3);  // 1, 2 issued
  EXPECT_EQ(invoice["max0"], 11);
  EXPECT_EQ(invoice["value1"], 11);
  EXPECT_GT(invoice["max1"].get<std::int64_t>(), 11);
  EXPECT_EQ(invoice["configuredStep"], 10);

  const HttpReply db_reply = http_get(port, "/db");
  ASSERT_EQ(db_reply.status, 200) << db_reply.body;
  EXPECT_EQ(db_reply.headers.at("content-type"), "application/json");
  const auto db = nlohmann::json::parse(db_reply.body);
  EXPECT_EQ(db["truncated"], false);
  ASSERT_EQ(db["rows"].size(), 2u) << db.dump();
  EXPECT_EQ(db["rows"][0]["key"], "invoice");
  EXPECT_EQ(db["rows"][0]["maxId"], invoice["max1"]) << "the end of the latest range taken";
  EXPECT_EQ(db["rows"][0]["step"], 10);
  EXPECT_EQ(db["rows"][0]["description"], "<b>\"bills\" & 'dues'</b>");
  EXPECT_FALSE(db["rows"][0]["updateTime"].get<std::string>().empty());
  EXPECT_EQ(db["rows"][1]["key"], "order");
  EXPECT_EQ(db["rows"][1]["maxId"], order["max0"]);

  // A browser's Accept gets a page with the same rows, every value escaped.
  const std::string browser = "Accept: text/html,application/xhtml+xml,*/*;q=0.8";
  const HttpReply page = http_get(port, "/db", {browser});
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.headers.at("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<table"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("<td>&lt;b&gt;&quot;bills&quot; &amp; &#39;dues&#39;&lt;/b&gt;</td>"),
            std::string::npos)
      << page.body;
  EXPECT_EQ(page.body.find("<b>"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("<td>" + db["rows"][1]["maxId"].dump() + "</td>"), std::string::npos)
      << page.body;
  const HttpReply cache_page = http_get(port, "/cache", {browser});
  EXPECT_EQ(cache_page.headers.at("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(cache_page.body.find("<td>invoice</td>"), std::string::npos) << cache_page.body;
  // JSON wins a tie and where it weighs more.
  for (const std::string accept : {"Accept: */*", "Accept: text/html;q=0.5, application/json",
                                   "Accept: application/json, text/html"}) {
    EXPECT_EQ(http_get(port, "/db", {accept}).headers.at("content-type"), "application/json")
        << accept;
  }
  expect_error(http_get(port, "/cache?tag=order"), 400, "unknown query parameter 'tag'");
  EXPECT_EQ(test::metric(port, "snowid_http_requests_total{route=\"/db\",status=\"200\"}"), 5);
  EXPECT_GE(test::metric(port, "snowid_http_requests_total{route=\"/cache\",status=\"200\"}"), 3);
}

// The numbers of `tag` from RESP's INCR on `socket`: one integer reply, or
// the error reply's text.
std::string resp_incr(test::RawSocket& socket, const std::string& tag) {
  socket.received().clear();
  const std::string command = "*2\r\n$4\r\nINCR\r\n$" + std::to_string(tag.size()) + "\r\n" +
                              tag + "\r\n";
  if (!socket.send(command)) return "send failed";
  const bool answered = socket.read_until(
      [](const std::string& r) { return r.find("\r\n") != std::string::npos; }, seconds{5});
  return answered ? socket.received().substr(0, socket.received().find("\r\n")) : "no answer";
}

// Every tag Leaf's biz_tag (varchar(128)) can hold, made with the CLI, is
// listed (CLI, /db) and served through each path: snowid's HTTP route and
// Leaf's with the tag percent-encoded, gRPC and RESP as it is; one sequence
// per tag across them all, and a metric label per tag, quotes escaped.
TEST_F(SegmentServer, EveryTagLeafsBizTagCanHoldIsServedOnEveryPath) {
  struct Tag {
    std::string name, encoded;
  };
  const std::string long_tag(128, 'x');
  const std::vector<Tag> tags = {
      {"order:pay", "order%3Apay"}, {"a/b", "a%2Fb"},         {"with space", "with%20space"},
      {long_tag, long_tag},         {"100%", "100%25"},       {"say \"hi\"", "say%20%22hi%22"},
      {"\u8ba2\u5355", "%E8%AE%A2%E5%8D%95"}};
  for (const Tag& t : tags) {
    ASSERT_EQ(cli({"segment", "create", t.name, "--step", "10"}, store_url), "") << t.name;
  }
  const auto listed = test::run_process({kCli, "segment", "list", "--segment-store", store_url});
  auto server = start(state, {"--resp", "127.0.0.1:0"});
  const int port = server->port();
  auto stub = stub_for(*server);
  test::RawSocket resp(server->listener_port("resp"));
  ASSERT_TRUE(resp.connected());
  const std::string db = http_get(port, "/db").body;
  for (const Tag& t : tags) {
    SCOPED_TRACE(t.name);
    EXPECT_NE(listed.out.find(t.name), std::string::npos) << listed.out;
    EXPECT_NE(db.find(nlohmann::json(t.name).dump()), std::string::npos) << db;
    std::vector<std::int64_t> seen{next_number(port, t.encoded)};
    const HttpReply leaf = http_get(port, "/api/segment/get/" + t.encoded);
    ASSERT_EQ(leaf.status, 200) << leaf.body;
    seen.push_back(std::stoll(leaf.body));
    v1::NextSegmentIdsRequest request;
    request.set_tag(t.name);
    request.set_count(1);
    v1::NextSegmentIdsResponse response;
    const grpc::Status status = stub->NextSegmentIds(grpc_context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.ids_size(), 1);
    seen.push_back(static_cast<std::int64_t>(response.ids(0)));
    const std::string incr = resp_incr(resp, t.name);
    ASSERT_EQ(incr.substr(0, 1), ":") << incr;
    seen.push_back(std::stoll(incr.substr(1)));
    EXPECT_EQ(seen, (std::vector<std::int64_t>{1, 2, 3, 4}));
  }
  EXPECT_EQ(test::metric(port, "snowid_segment_numbers_issued_total{tag=\"say \\\"hi\\\"\"}"), 4);
  // What no store can hold is refused on each path, naming the rule.
  expect_error(http_get(port, "/api/segment/get/" + std::string(129, 'x')), 400, "128 characters");
  EXPECT_NE(resp_incr(resp, "#ticket").find("-ERR bad segment tag"), std::string::npos);
  EXPECT_NE(resp_incr(resp, std::string("a\x01", 2)).find("control character"), std::string::npos);
  EXPECT_NE(resp_incr(resp, "").find("it is empty"), std::string::npos);
}

TEST_F(SegmentServer, AutoCreateMakesUnknownTagsOnFirstRequest) {
  auto server = start(state, {"--segment-auto-create", "true", "--segment-auto-create-step", "7"});
  EXPECT_EQ(next_number(server->port(), "fresh.tag"), 1);
  EXPECT_EQ(next_number(server->port(), "fresh.tag"), 2);
  EXPECT_EQ(http_get(server->port(), "/v1/segment/%23bad").status, 400);
  EXPECT_EQ(cli({"segment", "create", "fresh.tag"}, store_url).substr(0, 6), "exit 1")
      << "the server created the row";
}

TEST_F(SegmentServer, BearerTokenGuardsTheSegmentRoutesNotReadiness) {
  auto server = start(state, {"--bearer-token", "s3cr3t"});
  const int port = server->port();
  for (const std::string target :
       {"/v1/segment/order", "/api/segment/get/order", "/cache", "/db"}) {
    const HttpReply refused = http_get(port, target);
    expect_error(refused, 401, "bearer token");
    EXPECT_EQ(refused.headers.count("www-authenticate"), 1u);
    EXPECT_EQ(http_get(port, target, {"Authorization: Bearer s3cr3t"}).status, 200) << target;
  }
  EXPECT_EQ(http_get(port, "/readyz/segment").status, 200);
}

TEST_F(SegmentServer, OffTurnsTheRoutesOff) {
  auto server = start(state, {"--segment-store", "off"});
  const HttpReply reply = http_get(server->port(), "/v1/segment/order");
  expect_error(reply, 404, "segment mode is off");
  for (const std::string target : {"/cache", "/db"}) {
    const HttpReply leaf = http_get(server->port(), target);
    EXPECT_EQ(leaf.status, reply.status) << target;
    EXPECT_EQ(leaf.body, reply.body) << target;
  }
  EXPECT_EQ(http_get(server->port(), "/readyz/segment").status, 404);
  const auto ready = nlohmann::json::parse(http_get(server->port(), "/readyz").body);
  EXPECT_EQ(ready["segment"]["enabled"], false);
  EXPECT_TRUE(
      nlohmann::json::parse(http_get(server->port(), "/v1/info").body)["segment"].is_null());
  EXPECT_NE(server->log().find("segment store off"), std::string::npos);
  v1::NextSegmentIdsRequest request;
  request.set_tag("order");
  request.set_count(1);
  v1::NextSegmentIdsResponse response;
  EXPECT_EQ(
      stub_for(*server)->NextSegmentIds(grpc_context().get(), request, &response).error_code(),
      grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(SegmentServer, BadOptionsExitWithOneLineOnStderr) {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--segment-prefetch-at", "1.5"}, 2, "segment_prefetch_at"},
      {{"--segment-prefetch-at", "0.1x"}, 2, "segment_prefetch_at"},
      {{"--segment-max-step", "0"}, 2, "segment_max_step"},
      {{"--segment-max-step", "1000000001"}, 2, "segment_max_step"},
      {{"--segment-auto-create", "maybe"}, 2, "segment_auto_create"},
      {{"--segment-request-timeout-ms", "0"}, 2, "segment_request_timeout_ms"},
      {{"--segment-store", "ftp://user:pw@host/x"}, 2, "unknown segment store scheme 'ftp'"},
      {{"--segment-store", "sqlite://"}, 2, "sqlite:// needs a file"},
      {{"--segment-store", "sqlite:///proc/no/such/dir/x.db"}, 1, "cannot open SQLite"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {kServer,       "--http",      "127.0.0.1:0",          "--grpc",
                                     "127.0.0.1:0", "--state-dir", dir.file("other-state")};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const auto result = test::run_process(argv, {}, seconds{10});
    EXPECT_EQ(result.exit_code, c.exit_code) << c.args[1] << ": " << result.err;
    EXPECT_NE(result.err.find(c.says), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("pw@"), std::string::npos) << result.err;
    EXPECT_EQ(test::split_lines(result.err).size(), 1u) << result.err;
  }
  const auto toml = dir.file("segment.toml");
  const auto written = test::run_process(
      {"/bin/sh", "-c",
       "printf 'segment_prefetch_at = 0.25\\nsegment_auto_create = true\\n' > " + toml});
  ASSERT_EQ(written.exit_code, 0);
  const auto checked = test::run_process({kServer, "--check-config", "--config", toml});
  EXPECT_EQ(checked.exit_code, 0) << checked.err;
  EXPECT_NE(checked.out.find("segment_prefetch_at = \"0.25\""), std::string::npos) << checked.out;
  EXPECT_NE(checked.out.find("segment_auto_create = \"true\""), std::string::npos) << checked.out;
}

// --check-config reads every store URL as a start would: what a start
// refuses with exit 2, the check refuses too, in one line, without the
// password. (A start would refuse each of these before opening anything.)
TEST_F(SegmentServer, CheckConfigRefusesTheStoreUrlsAStartWouldRefuse) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused{
      {{"--segment-store", "mysql://u:pa55word@127.0.0.1/db?layout=bogus"},
       "layout must be snowid or leaf"},
      {{"--segment-store", "postgresql://u:pa55word@127.0.0.1/db?nope=1"},
       "invalid URI query parameter"},
      {{"--segment-store", "sqlite:///tmp/a.db mysql://u:pa55word@h/db?table=x"},
       "table= is for layout=leaf"},
      {{"--coordinator", "mysql", "--mysql-url", "mysql://u:pa55word@127.0.0.1/db?layout=leaf"},
       "unknown parameter 'layout'"},
      {{"--coordinator", "mysql", "--mysql-url", "mysql://u:pa55word@127.0.0.1:0/db"},
       "bad port"},
      {{"--coordinator", "postgres", "--postgres-url", "postgresql://u:pa55word@h/db?x=1"},
       "invalid URI query parameter"},
      // libpq quotes what it cannot read: the password, or the whole URL.
      {{"--coordinator", "postgres", "--postgres-url", "postgresql://u:pa55word%zz@h/db"},
       "invalid percent-encoded token"},
      {{"--segment-store", "postgresql://u:pa55word@[::1/db"}, "IPv6"},
      {{"--coordinator", "postgres", "--postgres-url", "host=h password=pa55word"},
       "expected postgresql://"},
      // Files that cannot be a password: read, they crashed or never ended.
      {{"--segment-store", "mysql://u@127.0.0.1/db?password_file=/tmp"}, "not a regular file"},
      {{"--coordinator", "mysql", "--mysql-url", "mysql://u@127.0.0.1/db?password_file=/dev/zero"},
       "not a regular file"},
      // A tab made two URLs one; a NUL cut the password short; a comma is
      // a second host only where several are read.
      {{"--segment-store", "sqlite:///tmp/a.db\tmysql://u:pa55word@h/db"}, "control character"},
      {{"--coordinator", "mysql", "--mysql-url", "mysql://u:pa55word\nx@h/db"},
       "control character"},
      {{"--segment-store", "mysql://u:pa55word%00x@127.0.0.1/db"}, "a NUL (%00) in the password"},
      {{"--segment-store", "mysql://u:pa55word@h1,h2:3307/db"}, "several hosts"},
      {{"--segment-store", "sqlite://"}, "needs a file"},
  };
  for (const auto& [flags, why] : refused) {
    std::vector<std::string> argv{kServer, "--check-config"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    const auto checked = test::run_process(argv);
    EXPECT_EQ(checked.exit_code, 2) << flags.back() << checked.out << checked.err;
    EXPECT_NE(checked.err.find(why), std::string::npos) << checked.err;
    EXPECT_EQ(std::count(checked.err.begin(), checked.err.end(), '\n'), 1) << checked.err;
    EXPECT_EQ(checked.err.find("pa55word"), std::string::npos) << checked.err;
  }
  // The same stores well written pass, without a database to answer.
  // Parameters libpq reads as a password are hidden, whatever their spelling.
  const auto good = test::run_process(
      {kServer, "--check-config", "--segment-store",
       "mysql://u@127.0.0.1/db?layout=leaf postgresql://u@h/db?sslpassword=pa55word",
       "--coordinator", "postgres", "--postgres-url",
       "postgresql://u@127.0.0.1/db?target_session_attrs=read-write&pass%77ord=pa55word"});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(good.out.find("pa55word"), std::string::npos) << good.out;
}

// A PostgreSQL store nobody answers: the node stays ready for Snowflake IDs,
// the segment signal and the segment routes say the store is down, and the
// password never shows.
TEST_F(SegmentServer, StoreDownLeavesTheNodeReadyAndHidesThePassword) {
  auto server = start(state, {"--segment-store", "postgresql://snowid:pa55word@127.0.0.1:1/ids",
                              "--segment-store-timeout-ms", "500"});
  const int port = server->port();
  EXPECT_NE(server->log().find("segment store postgresql://snowid:***@127.0.0.1:1/ids"),
            std::string::npos)
      << server->log();
  EXPECT_TRUE(
      test::wait_until([&] { return http_get(port, "/readyz/segment").status == 503; }, seconds{10}));
  const HttpReply segment_ready = http_get(port, "/readyz/segment");
  EXPECT_NE(error_of(segment_ready).find("unreachable"), std::string::npos) << segment_ready.body;
  const HttpReply ready = http_get(port, "/readyz");
  EXPECT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(nlohmann::json::parse(ready.body)["segment"]["ready"], false);

  const HttpReply refused = http_get(port, "/v1/segment/order");
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(refused.headers.count("retry-after"), 1u);
  const HttpReply db = http_get(port, "/db");
  expect_error(db, 503, "segment store unreachable");
  EXPECT_EQ(db.headers.count("retry-after"), 1u);
  EXPECT_EQ(db.body.find("pa55word"), std::string::npos) << db.body;
  const HttpReply cache = http_get(port, "/cache");  // memory only: still answers
  EXPECT_EQ(cache.status, 200) << cache.body;
  EXPECT_EQ(http_get(port, "/v1/id").status, 200);
  EXPECT_EQ(test::metric(port, "snowid_segment_store_reachable"), 0);
  EXPECT_EQ(test::metric(port, "snowid_segment_ready"), 0);

  v1::NextSegmentIdsRequest request;
  request.set_tag("order");
  request.set_count(1);
  v1::NextSegmentIdsResponse response;
  EXPECT_EQ(
      stub_for(*server)->NextSegmentIds(grpc_context().get(), request, &response).error_code(),
      grpc::StatusCode::UNAVAILABLE);

  const std::string info = http_get(port, "/v1/info").body;
  EXPECT_EQ(info.find("pa55word"), std::string::npos) << info;
  EXPECT_NE(info.find("snowid:***@"), std::string::npos) << info;
  EXPECT_EQ(server->log().find("pa55word"), std::string::npos) << server->log();
}

TEST_F(SegmentServer, GrpcNextSegmentIdsAndItsStatusCodes) {
  auto server = start(state, {"--max-batch", "100", "--bearer-token", "t0ken"});
  auto stub = stub_for(*server);
  auto call = [&](const std::string& tag, std::uint32_t count, const std::string& token = "t0ken",
                  const std::string& agent = "") {
    v1::NextSegmentIdsRequest request;
    request.set_tag(tag);
    request.set_count(count);
    request.set_agent(agent);
    v1::NextSegmentIdsResponse response;
    const grpc::Status status = stub->NextSegmentIds(grpc_context(token).get(), request, &response);
    return std::make_pair(status.error_code(),
                          std::vector<std::int64_t>(response.ids().begin(), response.ids().end()));
  };
  const auto [ok, ids] = call("order", 5);
  ASSERT_EQ(ok, grpc::StatusCode::OK);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(call("order", 100).second.size(), 100u);
  EXPECT_EQ(call("order", 5, "").first, grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(call("order", 5, "wrong").first, grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(call("#bad", 5).first, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(call(std::string(129, 'x'), 5).first, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(call("", 5).first, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(call("order", 0).first, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(call("order", 5, "t0ken", "9bad").first, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(call("order", 101).first, grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(call("nope", 5).first, grpc::StatusCode::NOT_FOUND);
  // HTTP continues the same sequence.
  const auto next =
      numbers_of(http_get(server->port(), "/v1/segment/order", {"Authorization: Bearer t0ken"}));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0], 106);
}

}  // namespace
}  // namespace snowid
