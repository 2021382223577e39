// The real snowidd serving UUIDv7, ULID and ObjectId over HTTP and gRPC:
// the routes, their errors and metrics, decoding by shape, and a kill -9
// followed by a restart with the clock 10 s behind (libfaketime), after which
// every kind's next IDs still lie above the last ones issued.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "chaos.h"
#include "faketime.h"
#include "http_checks.h"
#include "missing.h"
#include "server_process.h"
#include "snowid/id_formats.h"
#include "snowid/v1/snowid.grpc.pb.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::http_get;
using test::HttpReply;

constexpr const char* kRoutes[] = {"/v1/uuid", "/v1/ulid", "/v1/objectid"};

using test::expect_json_error;
using test::start;
using test::texts_of;

// The text of each kind sorts as its bytes: compare texts, after
// lower-casing nothing (the server's text is canonical).
void expect_increasing(const std::vector<std::string>& texts, const std::string& what) {
  for (std::size_t i = 1; i < texts.size(); ++i) {
    ASSERT_LT(texts[i - 1], texts[i]) << what << " at " << i;
  }
}

class FormatsTest : public ::testing::Test {
 protected:
  test::TempDir dir;
};

TEST_F(FormatsTest, EachRouteIssuesItsKindInIncreasingOrder) {
  auto server = start(dir);
  const int port = server->port();
  const std::vector<std::pair<std::string, std::size_t>> shapes{
      {"/v1/uuid", 36}, {"/v1/ulid", 26}, {"/v1/objectid", 24}};
  for (const auto& [route, length] : shapes) {
    const HttpReply one = http_get(port, route);
    ASSERT_EQ(one.status, 200) << route << ": " << one.body;
    const auto json = nlohmann::json::parse(one.body);
    ASSERT_TRUE(json.contains("id")) << one.body;
    EXPECT_EQ(json["id"].get<std::string>().size(), length) << one.body;

    std::vector<std::string> all{json["id"].get<std::string>()};
    for (int i = 0; i < 5; ++i) {
      const HttpReply many = http_get(port, route + "?count=10000");
      ASSERT_EQ(many.status, 200) << many.body;
      const auto texts = texts_of(many);
      ASSERT_EQ(texts.size(), 10000u);
      all.insert(all.end(), texts.begin(), texts.end());
    }
    expect_increasing(all, route);

    const HttpReply text = http_get(port, route + "?count=3&format=text");
    ASSERT_EQ(text.status, 200);
    const auto lines = test::split_lines(text.body);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_LT(all.back(), lines.front());
    EXPECT_EQ(lines[0].size(), length);
  }
  // A UUID from the server is version 7, variant 10, with the time of now.
  const std::string uuid = texts_of(http_get(port, "/v1/uuid")).front();
  const auto decoded = nlohmann::json::parse(http_get(port, "/v1/decode/" + uuid).body);
  EXPECT_EQ(decoded["kind"], "uuid");
  EXPECT_EQ(decoded["version"], 7);
  EXPECT_EQ(decoded["variant"], "rfc9562");
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  EXPECT_NEAR(decoded["timestamp_ms"].get<double>(), static_cast<double>(now_ms), 60'000.0);
}

TEST_F(FormatsTest, BadRequestsAreJsonErrors) {
  auto server = start(dir, {"--max-batch", "100"});
  const int port = server->port();
  for (const std::string route : kRoutes) {
    expect_json_error(http_get(port, route + "?count=0"), 400, "out of range 1..100");
    expect_json_error(http_get(port, route + "?count=101"), 400, "out of range 1..100");
    expect_json_error(http_get(port, route + "?count=x"), 400, "count");
    expect_json_error(http_get(port, route + "?agent=9bad"), 400, "agent");
    expect_json_error(http_get(port, route + "?kind=v4"), 400, "unknown query parameter");
  }
}

TEST_F(FormatsTest, TokenGuardsTheRoutesAndMetricsCountThem) {
  auto server = start(dir, {"--bearer-token", "s3cret-token-of-some-length"});
  const int port = server->port();
  for (const std::string route : kRoutes) {
    expect_json_error(http_get(port, route), 401, "bearer token");
    EXPECT_EQ(
        http_get(port, route + "?count=2", {"Authorization: Bearer s3cret-token-of-some-length"})
            .status,
        200);
  }
  const std::string metrics = http_get(port, "/metrics").body;
  for (const std::string call : {"next_uuids", "next_ulids", "next_objectids"}) {
    EXPECT_NE(metrics.find("call=\"" + call + "\",outcome=\"ok\"} 1"), std::string::npos)
        << call << "\n"
        << metrics;
    EXPECT_NE(metrics.find("call=\"" + call + "\",outcome=\"unauthenticated\"} 1"),
              std::string::npos)
        << call;
  }
}

// The published examples through /v1/decode, and a Snowflake ID as before.
TEST_F(FormatsTest, DecodeRouteRecognisesEachShape) {
  auto server = start(dir);
  const int port = server->port();
  auto decode = [&](const std::string& text) {
    const HttpReply r = http_get(port, "/v1/decode/" + text);
    EXPECT_EQ(r.status, 200) << text << ": " << r.body;
    return nlohmann::json::parse(r.body, nullptr, false);
  };
  auto v7 = decode("017F22E2-79B0-7CC3-98C4-DC0C0C07398F");
  EXPECT_EQ(v7["version"], 7);
  EXPECT_EQ(v7["timestamp_ms"], 0x017F22E279B0);
  EXPECT_EQ(decode("1EC9414C-232A-6B00-B3C8-9F6BDECED846")["time"], "2022-02-22T19:22:22.000Z");
  EXPECT_EQ(decode("C232AB00-9414-11EC-B3C8-9F6BDECED846")["time"], "2022-02-22T19:22:22.000Z");
  EXPECT_EQ(decode("01ARYZ6S41TSV4RRFFQ69G5FAV")["timestamp_ms"], 1469918176385);
  auto oid = decode("507f1f77bcf86cd799439011");
  EXPECT_EQ(oid["kind"], "objectid");
  EXPECT_EQ(oid["time"], "2012-10-17T21:13:27.000Z");
  EXPECT_EQ(decode("910499571847892992")["worker"], 25);
  expect_json_error(http_get(port, "/v1/decode/507f1f77bcf86cd79943901z"), 400, "not a decimal");
}

TEST_F(FormatsTest, GrpcIssuesAndDecodesEachKind) {
  auto server = start(dir, {"--max-batch", "1000"});
  auto stub = v1::IdService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(server->grpc_port()), grpc::InsecureChannelCredentials()));
  auto context = [] {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{10});
    return c;
  };
  const std::vector<std::pair<v1::IdKind, std::size_t>> kinds{
      {v1::ID_KIND_UUID7, 16}, {v1::ID_KIND_ULID, 16}, {v1::ID_KIND_OBJECTID, 12}};
  for (const auto& [kind, size] : kinds) {
    v1::NextFormattedIdsRequest request;
    request.set_kind(kind);
    request.set_count(1000);
    v1::NextFormattedIdsResponse response;
    grpc::Status status = stub->NextFormattedIds(context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.ids_size(), 1000);
    ASSERT_EQ(response.texts_size(), 1000);
    for (int i = 0; i < response.ids_size(); ++i) {
      ASSERT_EQ(response.ids(i).size(), size);
      if (i > 0) {
        ASSERT_LT(response.ids(i - 1), response.ids(i));  // bytes, as std::string compares
        ASSERT_LT(response.texts(i - 1), response.texts(i));
      }
    }
    v1::DecodeTextRequest decode_request;
    decode_request.set_text(response.texts(0));
    v1::DecodeTextResponse decoded;
    ASSERT_TRUE(stub->DecodeText(context().get(), decode_request, &decoded).ok());
    EXPECT_EQ(decoded.kind(), kind == v1::ID_KIND_UUID7  ? "uuid"
                              : kind == v1::ID_KIND_ULID ? "ulid"
                                                         : "objectid");
  }
  v1::NextFormattedIdsRequest request;
  v1::NextFormattedIdsResponse response;
  request.set_count(1);
  EXPECT_EQ(stub->NextFormattedIds(context().get(), request, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  request.set_kind(v1::ID_KIND_ULID);
  request.set_count(1001);
  EXPECT_EQ(stub->NextFormattedIds(context().get(), request, &response).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  v1::DecodeTextRequest bad;
  bad.set_text("nope");
  v1::DecodeTextResponse decoded;
  EXPECT_EQ(stub->DecodeText(context().get(), bad, &decoded).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// Takes `count` IDs from `route`, retrying while a restarted node's
// ObjectIds wait for the second after its mark (503, "ObjectIds resume at").
std::vector<std::string> take(int port, const std::string& route, int count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  for (;;) {
    const HttpReply r = http_get(port, route + "?count=" + std::to_string(count));
    if (r.status == 200) return texts_of(r);
    EXPECT_EQ(r.status, 503) << r.body;
    EXPECT_NE(r.body.find("ObjectIds resume at"), std::string::npos) << r.body;
    if (r.status != 503 || std::chrono::steady_clock::now() > deadline) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
}

// Load on every kind, SIGKILL, a restart with the clock 10 s behind the
// state file's mark: under wait (the restart waits the clock past the mark)
// and monotonic with continue_above_mark (it runs ahead of the clock), the
// next IDs of every kind lie above the last issued before the crash.
class FormatsRestartTest : public FormatsTest,
                           public ::testing::WithParamInterface<std::vector<std::string>> {};

TEST_P(FormatsRestartTest, KillNineThenClockTenSecondsBehindStaysAbove) {
  const std::string faketime = test::faketime_library();
  if (faketime.empty()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  const std::vector<std::string> args = GetParam();
  std::map<std::string, std::string> highest;
  {
    auto server = start(dir, args);
    std::atomic<bool> stop{false};
    std::vector<std::thread> load;
    std::vector<std::vector<std::string>> collected(3);
    for (int k = 0; k < 3; ++k) {
      load.emplace_back([&, k] {
        test::HttpConnection conn(server->port());
        while (!stop) {
          if (!conn.send(std::string("GET ") + kRoutes[k] +
                         "?count=1000 HTTP/1.1\r\nHost: x\r\n\r\n")) {
            break;
          }
          const HttpReply r = conn.read();
          if (r.status != 200) break;
          for (auto& text : texts_of(r)) collected[static_cast<std::size_t>(k)].push_back(text);
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{400});
    server->signal(SIGKILL);
    stop = true;
    for (auto& thread : load) thread.join();
    for (int k = 0; k < 3; ++k) {
      const auto& texts = collected[static_cast<std::size_t>(k)];
      ASSERT_GT(texts.size(), 1000u) << kRoutes[k];
      expect_increasing(texts, kRoutes[k]);
      highest[kRoutes[k]] = texts.back();
    }
  }
  const auto env = test::faketime_fixed_env(std::chrono::milliseconds{-10'000});
  auto restarted = start(dir, args, env);
  ASSERT_TRUE(restarted->started());
  ASSERT_TRUE(test::wait_until([&] { return http_get(restarted->port(), "/readyz").status == 200; },
                               std::chrono::seconds{15}))
      << restarted->log();
  for (const std::string route : kRoutes) {
    const auto next = take(restarted->port(), route, 1000);
    ASSERT_EQ(next.size(), 1000u) << route << "\n" << restarted->log();
    EXPECT_LT(highest[route], next.front()) << route;
    expect_increasing(next, route);
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, FormatsRestartTest,
                         ::testing::Values(std::vector<std::string>{"--clock-policy", "wait",
                                                                    "--max-start-wait-ms", "15000"},
                                           std::vector<std::string>{"--clock-policy", "monotonic",
                                                                    "--continue-above-mark",
                                                                    "true"}),
                         [](const auto& param) { return std::string(param.param[1]); });

}  // namespace
}  // namespace snowid
