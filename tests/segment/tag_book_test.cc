// TagBook (src/tags/tag_book.h) on real SQLite files, with a manual clock:
// business IDs across a period change from two books on one store, the
// check of the node's clock against the store's, template changes,
// retirement, and a width outgrown.
#include "tag_book.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "subprocess.h"

namespace snowid::tags {
namespace {

using std::chrono::milliseconds;

TagCreation creation(std::string tag, std::int64_t step = 1000, std::string template_text = "",
                     std::string zone = "UTC", std::int64_t start = 1) {
  TagCreation c;
  c.tag = std::move(tag);
  c.step = step;
  c.template_text = std::move(template_text);
  c.zone = std::move(zone);
  c.start = start;
  return c;
}

TagChange new_template(std::string text) {
  TagChange c;
  c.template_text = std::move(text);
  return c;
}

TagChange new_step(std::int64_t step) {
  TagChange c;
  c.step = step;
  return c;
}

class TagBookTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::string url = "sqlite://" + dir.file("segments.db");

  std::unique_ptr<TagBook> book(Clock* clock, std::vector<std::string>* audit = nullptr) {
    auto store = open_segment_store(url);
    EXPECT_TRUE(store.ok()) << store.error().message;
    TagBookOptions options;
    options.clock = clock;
    options.refresh = milliseconds{50};
    if (audit != nullptr) {
      options.audit = [audit](std::string_view line) { audit->emplace_back(line); };
    }
    auto opened = TagBook::open(std::move(*store), options);
    EXPECT_TRUE(opened.ok()) << opened.error().message;
    return std::move(*opened);
  }

  static milliseconds now() {
    return std::chrono::duration_cast<milliseconds>(
        std::chrono::system_clock::now().time_since_epoch());
  }
};

TEST_F(TagBookTest, TheNodesClockMustAgreeWithTheStoresAboutThePeriod) {
  // SQLite's clock is this host's: a node clock a day ahead disagrees.
  ManualClock ahead(now() + milliseconds{86'400'000});
  auto node = book(&ahead);
  ASSERT_TRUE(node->create(creation("orders", 10, "O{yyyyMMdd}{seq:04}"),
                           "test")
                  .ok());
  std::vector<std::string> out;
  const Status refused = node->next("orders", 1, out);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(refused.error().message.find("refusing rather than guessing"), std::string::npos)
      << refused.error().message;
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(node->stats().front().refused_clock, 1u);
  // A template without a date has no period to disagree about.
  ASSERT_TRUE(node->create(creation("plain", 10, "P{seq:04}"), "test").ok());
  EXPECT_TRUE(node->next("plain", 3, out).ok());
  EXPECT_EQ(out, (std::vector<std::string>{"P0001", "P0002", "P0003"}));
}

TEST_F(TagBookTest, TwoBooksOnOneStoreNeverRepeatAndEachDayRestartsAtOne) {
  // The clocks agree with the store's (SQLite's is this host's), so both
  // books serve today's period; the faked midnight is the integration
  // test's (tests/integration/business_id_test.cc).
  ManualClock clock(now());
  auto a = book(&clock);
  auto b = book(&clock);
  ASSERT_TRUE(a->create(creation("orders", 7, "ORD-{yyyyMMdd}-{seq:06}"),
                        "test")
                  .ok());
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (int round = 0; round < 50; ++round) {
    out.clear();
    ASSERT_TRUE(a->next("orders", 3, out).ok());
    ASSERT_TRUE(b->next("orders", 5, out).ok());
    for (const auto& id : out) EXPECT_TRUE(seen.insert(id).second) << id;
  }
  EXPECT_EQ(seen.size(), 400u);
  EXPECT_TRUE(seen.count("ORD-" + std::string(seen.begin()->substr(4, 8)) + "-000001"));
}

TEST_F(TagBookTest, ChangesAreCheckedAndRetiredTagsRefuse) {
  std::vector<std::string> audit;
  auto node = book(&SystemClock::instance(), &audit);
  ASSERT_TRUE(node->create(creation("inv", 5, "INV{seq:05}"), "alice").ok());
  EXPECT_EQ(node->create(creation("inv"), "alice").error().code, ErrorCode::kAlreadyExists);
  std::vector<std::string> out;
  ASSERT_TRUE(node->next("inv", 2, out).ok());
  EXPECT_EQ(out, (std::vector<std::string>{"INV00001", "INV00002"}));

  // "INV0{seq:04}" renders "INV00001" too: refused.
  auto same = node->change("inv", new_template("INV0{seq:04}"), "alice");
  ASSERT_FALSE(same.ok());
  EXPECT_EQ(same.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(node->change("inv", new_step(0), "alice").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(node->change("inv", TagChange{}, "alice").error().code, ErrorCode::kInvalidArgument);
  auto wider = node->change("inv", new_template("INV{seq:07}"), "bob");
  ASSERT_TRUE(wider.ok()) << wider.error().message;
  out.clear();
  ASSERT_TRUE(node->next("inv", 1, out).ok());
  EXPECT_GT(out.front(), std::string("INV0000002"));  // numbers go on above the old ones

  // Plain numbers of a tag with a template are refused.
  EXPECT_EQ(node->check_plain("inv").error().code, ErrorCode::kFailedPrecondition);
  ASSERT_TRUE(node->retire("inv", "carol").ok());
  EXPECT_EQ(node->retire("inv", "carol").error().code, ErrorCode::kFailedPrecondition);
  const Status retired = node->next("inv", 1, out);
  ASSERT_FALSE(retired.ok());
  EXPECT_EQ(retired.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(retired.error().message.find("'inv' is retired"), std::string::npos);
  EXPECT_EQ(node->change("inv", new_step(9), "carol").error().code,
            ErrorCode::kFailedPrecondition);

  // A plain tag retired refuses its plain numbers too.
  ASSERT_TRUE(node->create(creation("plain", 5), "alice").ok());
  EXPECT_TRUE(node->check_plain("plain").ok());
  ASSERT_TRUE(node->retire("plain", "alice").ok());
  EXPECT_EQ(node->check_plain("plain").error().code, ErrorCode::kFailedPrecondition);

  ASSERT_EQ(audit.size(), 5u);
  EXPECT_NE(audit[1].find("\"actor\":\"bob\""), std::string::npos) << audit[1];
  EXPECT_NE(audit[2].find("\"action\":\"retire\""), std::string::npos) << audit[2];
}

TEST_F(TagBookTest, AnotherBooksChangeIsSeenWithinARefresh) {
  auto a = book(&SystemClock::instance());
  auto b = book(&SystemClock::instance());
  ASSERT_TRUE(a->create(creation("t", 5, "T{seq:04}"), "x").ok());
  std::vector<std::string> out;
  // Created on a, served at once by b (a tag b has not read is read on demand).
  ASSERT_TRUE(b->next("t", 1, out).ok());
  ASSERT_TRUE(a->retire("t", "x").ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  Status served;
  do {
    served = b->next("t", 1, out);
    if (!served.ok()) break;
    std::this_thread::sleep_for(milliseconds{20});
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_FALSE(served.ok());
  EXPECT_EQ(served.error().code, ErrorCode::kFailedPrecondition);
}

TEST_F(TagBookTest, ATemplateOrNameThatCouldRepeatIsRefusedAtCreation) {
  auto node = book(&SystemClock::instance());
  for (const char* bad : {"{MMdd}{seq:04}", "A{seq:19}", "A{seq}{seq}", "A{nope}{seq}", "A"}) {
    auto refused = node->create(creation("bad", 1000, bad), "x");
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(node->create(creation("bad", 1000, "A{seq}", "Nowhere/None"), "x")
                .error()
                .code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(node->create(creation(std::string(119, 'x')), "x").error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(node->create(creation("bad", 1000, "", "UTC", -1), "x").error().code,
            ErrorCode::kInvalidArgument);
  // Nothing was created by the refusals.
  auto listed = node->list(100);
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
}

// A store put back below the ranges it handed this node (as a restore from
// an older backup does) is refused, never rendered, by a book that keeps a
// range memory; once the store is above them again, the tag serves.
TEST_F(TagBookTest, AStoreThatWentBackIsRefused) {
  const auto open_remembering = [&] {
    auto store = open_segment_store(url);
    EXPECT_TRUE(store.ok());
    TagBookOptions options;
    options.range_memory = dir.file("business-ranges");
    options.store_name = "test-store";
    auto opened = TagBook::open(std::move(*store), options);
    EXPECT_TRUE(opened.ok()) << opened.error().message;
    return std::move(*opened);
  };
  const auto set_max_id = [&](const std::string& key, std::int64_t max_id) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(dir.file("segments.db").c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    const std::string sql = "UPDATE snowid_segments SET max_id = " + std::to_string(max_id) +
                            " WHERE tag = '" + key + "'";
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  };
  std::vector<std::string> before;
  {
    auto node = open_remembering();
    ASSERT_TRUE(node->create(creation("orders", 10, "O{seq:05}"), "x").ok());
    ASSERT_TRUE(node->next("orders", 25, before).ok());
  }
  set_max_id("orders", 1);  // the store as a backup taken before those numbers
  auto node = open_remembering();
  std::vector<std::string> out;
  const Status refused = node->next("orders", 1, out);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(refused.error().message.find("older backup"), std::string::npos)
      << refused.error().message;
  EXPECT_TRUE(out.empty());
  set_max_id("orders", 1000);  // repaired: above every number handed out
  ASSERT_TRUE(node->next("orders", 3, out).ok());
  for (const auto& id : out) {
    EXPECT_EQ(std::find(before.begin(), before.end(), id), before.end()) << id;
  }
}

// A template is checked against every template the tag has carried, not
// only the last: A -> B -> C is refused when A -> C would be, whether B is
// another template, no template (plain numbers), or a retirement between.
TEST_F(TagBookTest, ATemplateIsCheckedAgainstEveryTemplateTheTagCarried) {
  auto node = book(&SystemClock::instance());
  ASSERT_TRUE(node->create(creation("orders", 100, "X{yyyy}{seq:04}"), "x").ok());
  std::vector<std::string> out;
  ASSERT_TRUE(node->next("orders", 1000, out).ok());  // X20260001 .. X20261000
  EXPECT_FALSE(node->change("orders", new_template("X{yyyyMM}{seq:02}"), "x").ok());
  ASSERT_TRUE(node->change("orders", new_template("Y{seq}"), "x").ok());
  const auto refused = node->change("orders", new_template("X{yyyyMM}{seq:02}"), "x");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("carried the template 'X{yyyy}{seq:04}' before"),
            std::string::npos)
      << refused.error().message;
  ASSERT_TRUE(node->change("orders", new_template(""), "x").ok());
  EXPECT_FALSE(node->change("orders", new_template("X{yyyyMM}{seq:02}"), "x").ok());
  ASSERT_TRUE(node->retire("orders", "x").ok());
  EXPECT_FALSE(node->create(creation("orders", 100, "X{yyyyMM}{seq:02}", "UTC", 100000), "x").ok());
  // A template it carried before is welcome again (its counters continue).
  ASSERT_TRUE(node->create(creation("orders", 100, "X{yyyy}{seq:04}", "UTC", 100000), "x").ok());
  std::vector<std::string> again;
  ASSERT_TRUE(node->next("orders", 5, again).ok());
  for (const auto& id : again) {
    EXPECT_EQ(std::find(out.begin(), out.end(), id), out.end()) << id;
  }
}

// A width outgrown, then widened: served again until the new width is used.
TEST_F(TagBookTest, AWidenedTemplateServesAgainAfterItsWidthRanOut) {
  auto node = book(&SystemClock::instance());
  ASSERT_TRUE(node->create(creation("w", 1, "W{seq:1}"), "x").ok());
  std::vector<std::string> out;
  ASSERT_TRUE(node->next("w", 9, out).ok());
  EXPECT_EQ(node->next("w", 1, out).error().code, ErrorCode::kFailedPrecondition);
  ASSERT_TRUE(node->change("w", new_template("W{seq:4}"), "x").ok());
  for (int i = 0; i < 20; ++i) {
    const Status served = node->next("w", 1, out);
    ASSERT_TRUE(served.ok()) << i << ": " << served.error().message;
  }
  std::set<std::string> distinct(out.begin(), out.end());
  EXPECT_EQ(distinct.size(), out.size());
}

// A real store that can be made to stop answering: while `down`, every
// call waits `timeout` (as a silent database does) and fails unavailable.
class SilencedStore final : public SegmentStore {
 public:
  SilencedStore(std::unique_ptr<SegmentStore> store, std::atomic<bool>& down)
      : store_(std::move(store)), down_(down) {}
  const char* kind() const override { return store_->kind(); }
  Status create_tag(std::string_view tag, std::int64_t start, std::int64_t step,
                    std::string_view description) override {
    return gate([&] { return store_->create_tag(tag, start, step, description); });
  }
  Status ping() override { return gate([&] { return store_->ping(); }); }
  Result<std::vector<SegmentTagRecord>> list_tags(std::size_t max_rows) override {
    return gate([&] { return store_->list_tags(max_rows); });
  }
  Result<std::optional<SegmentTagRecord>> read_tag(std::string_view tag) override {
    return gate([&] { return store_->read_tag(tag); });
  }
  Status set_step(std::string_view tag, std::int64_t step) override {
    return gate([&] { return store_->set_step(tag, step); });
  }
  Result<SegmentRange> take_range(std::string_view tag,
                                  std::optional<std::int64_t> increment) override {
    return gate([&] { return store_->take_range(tag, increment); });
  }
  Result<std::optional<SegmentTagRecord>> read_own_row(std::string_view key) override {
    return gate([&] { return store_->read_own_row(key); });
  }
  Result<std::vector<SegmentTagRecord>> list_own_rows(std::string_view prefix,
                                                      std::size_t max_rows) override {
    return gate([&] { return store_->list_own_rows(prefix, max_rows); });
  }
  Status create_own_row(std::string_view key, std::int64_t start, std::int64_t step,
                        std::string_view description) override {
    return gate([&] { return store_->create_own_row(key, start, step, description); });
  }
  Result<bool> replace_own_row(std::string_view key, std::int64_t version,
                               std::string_view description) override {
    return gate([&] { return store_->replace_own_row(key, version, description); });
  }
  Result<SegmentRange> take_own_range(std::string_view key, std::int64_t increment) override {
    return gate([&] { return store_->take_own_range(key, increment); });
  }
  Result<std::chrono::milliseconds> store_time() override {
    return gate([&] { return store_->store_time(); });
  }

 private:
  template <typename Call>
  auto gate(Call call) -> decltype(call()) {
    if (!down_) return call();
    std::this_thread::sleep_for(milliseconds{300});
    return Error{ErrorCode::kUnavailable, "the store did not answer"};
  }
  std::unique_ptr<SegmentStore> store_;
  std::atomic<bool>& down_;
};

// A store that stops answering costs a business request one call timeout,
// not one per request: the next are refused at once until the book's thread
// finds the store answering again.
TEST_F(TagBookTest, AStoreThatDoesNotAnswerIsNotWaitedOnByEveryRequest) {
  std::atomic<bool> down{false};
  auto store = open_segment_store(url);
  ASSERT_TRUE(store.ok());
  TagBookOptions options;
  options.refresh = milliseconds{100};
  auto node =
      TagBook::open(std::make_unique<SilencedStore>(std::move(*store), down), options);
  ASSERT_TRUE(node.ok());
  ASSERT_TRUE((*node)->create(creation("orders", 10, "O{seq:05}"), "x").ok());
  std::vector<std::string> out;
  ASSERT_TRUE((*node)->next("orders", 10, out).ok());
  down = true;
  // The book's own thread finds the store silent first (a refresh, a range
  // taken ahead); then five requests that need the store are refused at once.
  std::this_thread::sleep_for(milliseconds{800});
  const auto refused_at = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {
    const Status refused = (*node)->next("orders", 50, out);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - refused_at, milliseconds{250})
      << "the requests waited on the silent store";
  down = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{5};
  Status served;
  do {
    served = (*node)->next("orders", 50, out);
    if (served.ok()) break;
    std::this_thread::sleep_for(milliseconds{50});
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_TRUE(served.ok()) << served.error().message;
  std::set<std::string> distinct(out.begin(), out.end());
  EXPECT_EQ(distinct.size(), out.size());
}

}  // namespace
}  // namespace snowid::tags
