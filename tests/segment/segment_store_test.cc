// The SQLite segment store: tags, ranges, the URL, the schema file.
#include "snowid/ext/segment_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "missing.h"
#include "own_rows_contract.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::TempDir;

std::unique_ptr<SegmentStore> open_sqlite(const TempDir& dir, const std::string& name = "s.db") {
  auto store = open_segment_store("sqlite://" + dir.file(name));
  EXPECT_TRUE(store.ok()) << store.error().message;
  return std::move(*store);
}

TEST(SegmentStore, CreateListAndSetStep) {
  TempDir dir;
  auto store = open_sqlite(dir);
  ASSERT_TRUE(store->create_tag("orders", 1, 1000, "order numbers").ok());
  ASSERT_TRUE(store->create_tag("users.v2", 500, 10, "").ok());
  auto tags = store->list_tags(kAllSegmentTags);
  ASSERT_TRUE(tags.ok()) << tags.error().message;
  ASSERT_EQ(tags->size(), 2u);
  EXPECT_EQ((*tags)[0].tag, "orders");
  EXPECT_EQ((*tags)[0].max_id, 1);
  EXPECT_EQ((*tags)[0].step, 1000);
  EXPECT_EQ((*tags)[0].description, "order numbers");
  EXPECT_FALSE((*tags)[0].updated_at.empty());
  EXPECT_EQ((*tags)[1].tag, "users.v2");

  ASSERT_TRUE(store->set_step("orders", 50).ok());
  tags = store->list_tags(kAllSegmentTags);
  EXPECT_EQ((*tags)[0].step, 50);
}

TEST(SegmentStore, ListingStopsAtItsBound) {
  TempDir dir;
  auto store = open_sqlite(dir);
  for (const char* tag : {"c.tag", "a.tag", "b.tag"}) {
    ASSERT_TRUE(store->create_tag(tag, 1, 10, "").ok());
  }
  auto first_two = store->list_tags(2);
  ASSERT_TRUE(first_two.ok()) << first_two.error().message;
  ASSERT_EQ(first_two->size(), 2u);
  EXPECT_EQ((*first_two)[0].tag, "a.tag");
  EXPECT_EQ((*first_two)[1].tag, "b.tag");
  EXPECT_EQ(store->list_tags(kAllSegmentTags)->size(), 3u);
  EXPECT_EQ(store->list_tags(5)->size(), 3u);
  EXPECT_TRUE(store->list_tags(0)->empty());
}

TEST(SegmentStore, CreatingAnExistingTagIsRefused) {
  TempDir dir;
  auto store = open_sqlite(dir);
  ASSERT_TRUE(store->create_tag("orders", 1, 1000, "").ok());
  Status again = store->create_tag("orders", 7, 10, "");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kAlreadyExists);
  EXPECT_EQ(store->list_tags(kAllSegmentTags)->front().max_id, 1);
}

TEST(SegmentStore, RangesFollowEachOtherWithoutOverlap) {
  TempDir dir;
  auto store = open_sqlite(dir);
  ASSERT_TRUE(store->create_tag("orders", 1, 100, "").ok());
  auto first = store->take_range("orders", std::nullopt);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->first, 1);
  EXPECT_EQ(first->end, 101);
  EXPECT_EQ(first->configured_step, 100);
  auto second = store->take_range("orders", 250);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->first, 101);
  EXPECT_EQ(second->end, 351);
  EXPECT_EQ(store->list_tags(kAllSegmentTags)->front().max_id, 351);
}

// A database file removed or replaced under an open store: SQLite would go
// on taking ranges from the unlinked file, which nobody else sees and the
// next start no longer has. The store refuses instead, for good, naming the
// file, also once another file appears at the path.
TEST(SegmentStore, RemovedOrReplacedFileIsRefusedNotUsedUnseen) {
  TempDir dir;
  auto store = open_sqlite(dir);
  ASSERT_TRUE(store->create_tag("orders", 1, 100, "").ok());
  ASSERT_TRUE(store->take_range("orders", std::nullopt).ok());
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(dir.file(std::string("s.db") + suffix));
  }
  auto range = store->take_range("orders", std::nullopt);
  ASSERT_FALSE(range.ok()) << "took [" << range->first << ", " << range->end
                           << ") from a removed file";
  EXPECT_EQ(range.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(range.error().message.find("removed or replaced"), std::string::npos)
      << range.error().message;
  EXPECT_NE(range.error().message.find(dir.file("s.db")), std::string::npos)
      << range.error().message;

  auto other = open_sqlite(dir);  // a new, empty file at the path
  ASSERT_TRUE(other->create_tag("orders", 1, 100, "").ok());
  EXPECT_FALSE(store->take_range("orders", std::nullopt).ok());
  EXPECT_FALSE(store->list_tags(kAllSegmentTags).ok());
}

TEST(SegmentStore, UnknownTagIsNotFound) {
  TempDir dir;
  auto store = open_sqlite(dir);
  auto range = store->take_range("nope", std::nullopt);
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.error().code, ErrorCode::kNotFound);
  Status step = store->set_step("nope", 10);
  ASSERT_FALSE(step.ok());
  EXPECT_EQ(step.error().code, ErrorCode::kNotFound);
}

TEST(SegmentStore, NumbersNeverPassTheLargestInt64) {
  TempDir dir;
  auto store = open_sqlite(dir);
  ASSERT_TRUE(store->create_tag("edge", INT64_MAX - 150, 100, "").ok());
  ASSERT_TRUE(store->take_range("edge", std::nullopt).ok());
  auto past = store->take_range("edge", std::nullopt);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(past.error().message.find("used up"), std::string::npos) << past.error().message;
  EXPECT_EQ(store->list_tags(kAllSegmentTags)->front().max_id, INT64_MAX - 50);
}

// Tags are what Leaf's biz_tag varchar(128) holds: 1 to 128 characters of
// UTF-8; control characters, a '#' first and malformed UTF-8 are refused by
// every call, and every good tag is a row of its own that serves numbers.
TEST(SegmentStore, BadTagsAreRefusedEverywhere) {
  TempDir dir;
  auto store = open_sqlite(dir);
  std::string cjk_129;
  for (int i = 0; i < 129; ++i) cjk_129 += "\u8ba2";  // 订
  for (const std::string& bad : std::vector<std::string>{
           "", "#ticket", "#x", std::string(129, 'a'), cjk_129, std::string("a\0b", 3), "a\nb",
           "tab\there", "del\x7f", "c1\xc2\x85", "\xff", "\xc3", "\xc0\xaf", "\xed\xa0\x80",
           "\xf4\x90\x80\x80", "\xe2\x82"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(validate_segment_tag(bad).ok());
    Status created = store->create_tag(bad, 1, 10, "");
    ASSERT_FALSE(created.ok());
    EXPECT_EQ(created.error().code, ErrorCode::kInvalidArgument);
    for (char c : created.error().message) {
      EXPECT_TRUE(c >= 0x20 && c < 0x7f) << created.error().message;
    }
    EXPECT_EQ(store->take_range(bad, std::nullopt).error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(store->set_step(bad, 10).error().code, ErrorCode::kInvalidArgument);
  }
  EXPECT_NE(validate_segment_tag(std::string(129, 'a')).error().message.find("129 characters"),
            std::string::npos);
  std::string cjk_128 = cjk_129.substr(3);  // 128 characters, 384 bytes
  for (const std::string& good : std::vector<std::string>{
           "a", "Orders", "order-v2.eu_west", "order:pay", "a/b", "with space", "1abc", "_x",
           "a;drop", "100%", "q?x=1&y", "\xc3\xa9t\xc3\xa9", "\xf0\x9f\x8e\x89",
           std::string(128, 'z'), cjk_128}) {
    SCOPED_TRACE(good);
    ASSERT_TRUE(validate_segment_tag(good).ok()) << validate_segment_tag(good).error().message;
    ASSERT_TRUE(store->create_tag(good, 5, 10, "").ok());
    auto range = store->take_range(good, std::nullopt);
    ASSERT_TRUE(range.ok()) << range.error().message;
    EXPECT_EQ(range->first, 5);  // its own row, not another tag's
  }
  EXPECT_EQ(store->list_tags(kAllSegmentTags)->size(), 15u);
}

TEST(SegmentStore, BadStepsAndStartsAreRefused) {
  TempDir dir;
  auto store = open_sqlite(dir);
  EXPECT_EQ(store->create_tag("t", 1, 0, "").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(store->create_tag("t", 1, kMaxSegmentStep + 1, "").error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(store->create_tag("t", -1, 10, "").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(store->create_tag("t", 1, 10, std::string(257, 'd')).error().code,
            ErrorCode::kInvalidArgument);
  ASSERT_TRUE(store->create_tag("t", 1, 10, "").ok());
  EXPECT_EQ(store->set_step("t", 0).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(store->take_range("t", 0).error().code, ErrorCode::kInvalidArgument);
}

TEST(SegmentStore, UrlsChooseTheStore) {
  TempDir dir;
  EXPECT_EQ(open_segment_store("mongodb://x@y/z").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(open_segment_store("mysql://x@y").error().code, ErrorCode::kInvalidArgument);
  // MySQL connects lazily: a well-formed URL opens without a server.
  auto mysql = open_segment_store("mariadb://x@127.0.0.1:1/z?layout=leaf");
  ASSERT_TRUE(mysql.ok()) << mysql.error().message;
  EXPECT_STREQ((*mysql)->kind(), "mysql");
  EXPECT_EQ(open_segment_store("segments.db").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(open_segment_store("sqlite://").error().code, ErrorCode::kInvalidArgument);
  auto secret = open_segment_store("redis://user:hunter2@host");
  ASSERT_FALSE(secret.ok());
  EXPECT_EQ(secret.error().message.find("hunter2"), std::string::npos) << secret.error().message;
  auto bad_pg = open_segment_store("postgresql://host:notaport:/x?bogus=1");
  ASSERT_FALSE(bad_pg.ok());
  EXPECT_EQ(bad_pg.error().code, ErrorCode::kInvalidArgument);
  // A directory that does not exist: a clear error, not a crash.
  auto missing = open_segment_store("sqlite://" + dir.file("no/such/dir/s.db"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("no/such/dir"), std::string::npos);

  // A relative path is relative to the working directory.
  const auto previous = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  auto relative = open_segment_store("sqlite://relative.db");
  std::filesystem::current_path(previous);
  ASSERT_TRUE(relative.ok()) << relative.error().message;
  EXPECT_STREQ((*relative)->kind(), "sqlite");
  EXPECT_TRUE(std::filesystem::exists(dir.file("relative.db")));
}

TEST(SegmentStore, TheOperatorSchemaFileIsTheOneSnowidUses) {
  TempDir dir;
  const std::string path = dir.file("operator.db");
  const auto applied = test::run_process(
      {"/bin/sh", "-c", "sqlite3 '" + path + "' < '" SNOWID_SEGMENTS_SQL_PATH "'"});
  if (applied.exit_code == 127) {
    SNOWID_SKIP_MISSING("no sqlite3 shell to apply the file with (Debian package sqlite3)");
  }
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  auto store = open_segment_store("sqlite://" + path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  ASSERT_TRUE((*store)->create_tag("orders", 1, 10, "").ok());
  EXPECT_EQ((*store)->take_range("orders", std::nullopt)->end, 11);
}

// snowid's own rows, on one SQLite file opened once per store object.
class SqliteOwnRows : public ::testing::Test {
 protected:
  TempDir dir_;
  test::OpenStore open = [this] { return open_sqlite(dir_); };
};

SNOWID_OWN_ROWS_CONTRACT_TESTS(SqliteOwnRows, open, "#own")

TEST_F(SqliteOwnRows, KeepTheTicketIdentityWorking) {
  auto store = open();
  ASSERT_TRUE(store->set_ticket_identity({2, 1}).ok());
  ASSERT_TRUE(store->create_own_row("#tag:order", 0, 1, "{}").ok());
  EXPECT_EQ(store->ticket_identity().value(), (TicketIdentity{2, 1}));
  EXPECT_EQ(store->list_own_rows("#", kAllSegmentTags).value().size(), 2u);
}

TEST_F(SqliteOwnRows, TicketServerSetsKeepNone) {
  ASSERT_TRUE(open_sqlite(dir_, "a.db")->set_ticket_identity({2, 0}).ok());
  ASSERT_TRUE(open_sqlite(dir_, "b.db")->set_ticket_identity({2, 1}).ok());
  auto set = open_segment_store("sqlite://" + dir_.file("a.db") + " sqlite://" + dir_.file("b.db"));
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ((*set)->create_own_row("#tag:order", 0, 1, "").error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ((*set)->list_own_rows("#", 10).error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace snowid
