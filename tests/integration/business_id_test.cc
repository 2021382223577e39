// Business IDs and tag administration against real snowidd processes: two
// nodes on one segment store (SQLite, shared by both), the tags managed over
// HTTP on one node and served by the other without a restart, the clock
// (libfaketime) crossing midnight under load, a template's width outgrown.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "business_node.h"
#include "faketime.h"
#include "thread_sanitizer.h"
#include "server_process.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::HttpReply;
using test::ServerProcess;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;


bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 8000ms) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return condition();
}

HttpReply request(int port, const std::string& method, const std::string& target,
                  const std::string& token, const std::string& body = "") {
  return test::http_with_token(port, method, target, token, body);
}

class BusinessIdTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::string store = "sqlite://" + dir.file("segments.db");
  std::string tokens = dir.file("tokens.toml");
  std::string audit = dir.file("tag-audit.log");

  void SetUp() override { std::ofstream(tokens) << test::kBusinessTokensFile; }

  std::unique_ptr<ServerProcess> start(const std::string& name, int worker,
                                       const std::map<std::string, std::string>& env = {}) {
    auto node = std::make_unique<ServerProcess>(
        SNOWIDD_PATH,
        std::vector<std::string>{"--state-dir", dir.file(name), "--worker-id",
                                 std::to_string(worker), "--segment-store", store, "--tokens-file",
                                 tokens, "--tag-audit-log", dir.file(name + "-audit.log")},
        env);
    return node;
  }

  static HttpReply admin(const ServerProcess& node, const std::string& method,
                         const std::string& target, const std::string& body = "") {
    return request(node.port(), method, target, "ops-secret", body);
  }

  // `count` business IDs of `tag` from `node`, or the refusal's reply.
  static HttpReply business(const ServerProcess& node, const std::string& tag, int count,
                            std::vector<std::string>& out) {
    HttpReply reply = request(node.port(), "GET",
                              "/v1/business/" + tag + "?count=" + std::to_string(count),
                              "orders-secret");
    if (reply.status == 200) {
      const nlohmann::json body = nlohmann::json::parse(reply.body);
      for (const auto& id : body["ids"]) out.push_back(id.get<std::string>());
    }
    return reply;
  }
};

// Two nodes on one tag while their clocks cross midnight (UTC): no string
// repeats, and each day's numbers start at 1.
TEST_F(BusinessIdTest, TwoNodesAcrossMidnightNeverRepeatAndRestartAtOne) {
  // libfaketime's clock under ThreadSanitizer's runtime: nodes stop answering.
  SKIP_UNDER_THREAD_SANITIZER("libfaketime and ThreadSanitizer");
  test::FaketimeControl clock;
  if (!clock.available()) GTEST_SKIP() << test::kFaketimeMissing;
  const std::chrono::milliseconds day{86'400'000};
  // The nodes' clocks read `before` ahead of midnight (UTC) from now on.
  const auto before_midnight = [&](std::chrono::milliseconds before) {
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now().time_since_epoch());
    clock.set_offset((now / day + 1) * day - now - before);
  };
  // The nodes start two minutes before midnight (however long their start
  // takes on a loaded machine), and are moved to 2 s before it just before
  // the load: they serve across it.
  before_midnight(120'000ms);
  auto a = start("a", 1, clock.env());
  auto b = start("b", 2, clock.env());
  ASSERT_TRUE(a->started()) << a->log();
  ASSERT_TRUE(b->started()) << b->log();
  const HttpReply created = admin(*a, "POST", "/v1/tags",
                                  R"({"tag": "orders", "step": 50,
                                      "template": "ORD-{yyyyMMdd}-{seq:08}"})");
  ASSERT_EQ(created.status, 201) << created.body;
  before_midnight(2000ms);

  std::vector<std::string> from[2];
  std::atomic<int> refused{0};
  std::string first_refusal;
  std::mutex refusal_mutex;
  std::vector<std::thread> clients;
  for (int n = 0; n < 2; ++n) {
    clients.emplace_back([&, n] {
      const ServerProcess& node = n == 0 ? *a : *b;
      const auto until = Clock::now() + 8s;
      while (Clock::now() < until) {
        const HttpReply reply = business(node, "orders", 7, from[n]);
        if (reply.status != 200) {
          // Only the store and node disagreeing about the day may refuse,
          // for a moment; nothing else.
          EXPECT_EQ(reply.status, 503) << reply.body;
          if (++refused == 1) {
            std::lock_guard lock(refusal_mutex);
            first_refusal = reply.body;
          }
          std::this_thread::sleep_for(10ms);
        }
      }
    });
  }
  for (auto& c : clients) c.join();
  std::set<std::string> all;
  std::map<std::string, std::set<long>> numbers_by_day;
  for (const auto& ids : from) {
    for (const auto& id : ids) {
      EXPECT_TRUE(all.insert(id).second) << "repeated: " << id;
      // Eight digits: the two nodes draw a few hundred thousand a second
      // here, which would use up a day of six in seconds.
      ASSERT_EQ(id.size(), 21u) << id;
      numbers_by_day[id.substr(4, 8)].insert(std::stol(id.substr(13)));
    }
  }
  ASSERT_EQ(numbers_by_day.size(), 2u) << "both days served; " << refused << " refused, first: "
                                       << first_refusal << "\n" << a->log();
  for (const auto& [day_label, numbers] : numbers_by_day) {
    EXPECT_EQ(*numbers.begin(), 1) << day_label << " starts at 1";
  }
  EXPECT_GT(from[0].size(), 100u);
  EXPECT_GT(from[1].size(), 100u);
}

// A tag created, changed and retired on one node is served accordingly by
// the other without a restart; every change is in the audit log, with who.
TEST_F(BusinessIdTest, AdministeredOnOneNodeServedByTheOther) {
  auto a = start("a", 1);
  auto b = start("b", 2);
  ASSERT_TRUE(a->started()) << a->log();
  ASSERT_TRUE(b->started()) << b->log();

  // Administration needs an admin token: a tag's token is refused as a wrong one is.
  const HttpReply not_admin =
      request(a->port(), "POST", "/v1/tags", "orders-secret", R"({"tag": "orders"})");
  EXPECT_EQ(not_admin.status, 401) << not_admin.body;
  const HttpReply wrong = request(a->port(), "POST", "/v1/tags", "nope", R"({"tag": "orders"})");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(wrong.body, not_admin.body);

  // Checked at creation: one clear error each.
  for (const char* bad : {R"({"tag": "orders", "template": "ORD-{seq:19}"})",
                          R"({"tag": "orders", "template": "ORD-{yyyyMMdd}-{nope}"})",
                          R"({"tag": "orders", "template": "{MMdd}{seq:04}"})",
                          R"({"tag": "orders", "step": 0})", R"({"tag": "orders", "stpe": 5})",
                          R"({"tag": "orders", "template": "A{seq:04}", "zone": "Mars/Base"})",
                          R"({"tag": "orders", "tag": "payments"})",
                          R"({"tag": "orders", "start": 9223372036854775807})",
                          "not json"}) {
    const HttpReply refused = admin(*a, "POST", "/v1/tags", bad);
    EXPECT_EQ(refused.status, 400) << bad << ": " << refused.body;
    EXPECT_NE(nlohmann::json::parse(refused.body)["error"].get<std::string>(), "") << bad;
  }

  ASSERT_EQ(admin(*a, "POST", "/v1/tags",
                  R"({"tag": "orders", "step": 10, "template": "ORD{seq:06}"})")
                .status,
            201);
  EXPECT_EQ(admin(*a, "POST", "/v1/tags", R"({"tag": "orders"})").status, 409);
  std::vector<std::string> ids;
  HttpReply served = business(*b, "orders", 5, ids);
  ASSERT_EQ(served.status, 200) << served.body;
  EXPECT_EQ(ids.front(), "ORD000001");

  // A change that could repeat strings is refused; a widened width is not.
  EXPECT_EQ(admin(*a, "PATCH", "/v1/tags/orders", R"({"template": "ORD0{seq:05}"})").status, 400);
  const HttpReply widened = admin(*a, "PATCH", "/v1/tags/orders", R"({"template": "ORD{seq:08}"})");
  ASSERT_EQ(widened.status, 200) << widened.body;
  EXPECT_TRUE(eventually([&] {
    std::vector<std::string> now;
    return business(*b, "orders", 1, now).status == 200 && now.front().size() == 11;
  })) << "node b serves the new template";
  EXPECT_EQ(admin(*a, "PATCH", "/v1/tags/orders", R"({"step": 0})").status, 400);

  // Retired: refused on the other node with a message naming it.
  ASSERT_EQ(admin(*a, "DELETE", "/v1/tags/orders").status, 200);
  HttpReply refused;
  EXPECT_TRUE(eventually([&] {
    std::vector<std::string> none;
    refused = business(*b, "orders", 1, none);
    return refused.status == 409;
  })) << refused.status << " " << refused.body;
  EXPECT_NE(refused.body.find("'orders' is retired"), std::string::npos) << refused.body;
  const HttpReply plain = request(b->port(), "GET", "/v1/segment/orders", "orders-secret");
  EXPECT_EQ(plain.status, 409) << plain.body;

  // Created again: never below what was handed out, and its strings go on above.
  const HttpReply tag = admin(*a, "GET", "/v1/tags/orders");
  ASSERT_EQ(tag.status, 200) << tag.body;
  EXPECT_TRUE(nlohmann::json::parse(tag.body)["retired"].get<bool>());
  EXPECT_EQ(admin(*a, "POST", "/v1/tags",
                  R"({"tag": "orders", "start": 0, "template": "ORD{seq:08}"})")
                .status,
            409);
  ASSERT_EQ(admin(*a, "POST", "/v1/tags",
                  R"({"tag": "orders", "start": 1000000, "template": "ORD{seq:08}"})")
                .status,
            201);
  std::vector<std::string> again;
  EXPECT_TRUE(eventually([&] {
    again.clear();
    return business(*b, "orders", 3, again).status == 200;
  }));
  ASSERT_FALSE(again.empty());
  for (const auto& id : again) {
    EXPECT_GT(id, ids.back()) << id;
    EXPECT_EQ(std::find(ids.begin(), ids.end(), id), ids.end());
  }

  const HttpReply listed = admin(*b, "GET", "/v1/tags");
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_EQ(nlohmann::json::parse(listed.body)["tags"][0]["template"], "ORD{seq:08}");

  // The audit log of the node that made the changes: each, with who.
  const std::string log = test::read_file(dir.file("a-audit.log"));
  std::vector<std::string> actions;
  for (std::size_t at = 0, end; (end = log.find('\n', at)) != std::string::npos; at = end + 1) {
    const auto line = nlohmann::json::parse(log.substr(at, end - at));
    EXPECT_EQ(line["actor"], "ops");
    EXPECT_EQ(line["tag"], "orders");
    actions.push_back(line["action"]);
  }
  EXPECT_EQ(actions, (std::vector<std::string>{"create", "change", "retire", "create"}));
}

// A period's numbers outgrow the template's width: warned first (log and
// /metrics), then refused; never a longer string.
TEST_F(BusinessIdTest, AWidthOutgrownIsWarnedThenRefused) {
  auto a = start("a", 1);
  ASSERT_TRUE(a->started()) << a->log();
  ASSERT_EQ(admin(*a, "POST", "/v1/tags", R"({"tag": "small", "step": 1, "template": "S{seq:02}"})")
                .status,
            201);
  std::vector<std::string> ids;
  HttpReply last;
  bool warned_before_refused = false;
  for (int i = 0; i < 120; ++i) {
    last = business(*a, "small", 1, ids);
    if (last.status != 200) break;
    if (!warned_before_refused &&
        a->log().find("tag 'small' has taken numbers up to") != std::string::npos) {
      const HttpReply metrics = test::http_get(a->port(), "/metrics");
      warned_before_refused =
          metrics.body.find("snowid_business_width_warning{tag=\"small\"} 1") != std::string::npos;
    }
  }
  EXPECT_EQ(last.status, 409) << last.body;
  EXPECT_NE(last.body.find("every number"), std::string::npos) << last.body;
  EXPECT_TRUE(warned_before_refused) << a->log();
  EXPECT_EQ(ids.size(), 99u);
  std::set<std::string> distinct(ids.begin(), ids.end());
  EXPECT_EQ(distinct.size(), ids.size());
  for (const auto& id : ids) EXPECT_EQ(id.size(), 3u) << id;
  const HttpReply metrics = test::http_get(a->port(), "/metrics");
  EXPECT_NE(metrics.body.find("snowid_business_refused_total{tag=\"small\",reason=\"width\"} "),
            std::string::npos);
}

}  // namespace
}  // namespace snowid
