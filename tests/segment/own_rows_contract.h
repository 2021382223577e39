// What every store of record (SQLite, PostgreSQL, MariaDB/MySQL) does with
// snowid's own rows ('#' keys, SegmentStore::read_own_row) and its clock,
// written once: each store's test program runs these bodies on its real
// database. A body fails the calling test through GoogleTest assertions.
//
// `open` opens one more store object on the test's database. `prefix` ('#'
// first) is the start of every key a body writes, so that bodies sharing a
// database (one server per test program) never see each other's rows.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "snowid/ext/segment_store.h"

namespace snowid::test {

using OpenStore = std::function<std::unique_ptr<SegmentStore>()>;

inline std::vector<std::string> own_row_keys(const Result<std::vector<SegmentTagRecord>> &rows) {
  std::vector<std::string> keys;
  if (!rows.ok()) {
    ADD_FAILURE() << rows.error().message;
    return keys;
  }
  for (const SegmentTagRecord &row : *rows) keys.push_back(row.tag);
  return keys;
}

// Rows are created once, read back as written, and listed by prefix in byte
// order: LIKE's wildcards '%' and '_' in a prefix match only themselves, case
// counts, and a trailing space is not ignored. Tags never list them.
inline void check_own_rows_are_created_read_and_listed(const OpenStore &open,
                                                       const std::string &prefix) {
  auto store = open();
  ASSERT_NE(store, nullptr);
  const std::string first = prefix + "a_b";
  ASSERT_TRUE(store->create_own_row(first, 7, 10, "first 'quoted' \\ text").ok());
  EXPECT_EQ(store->create_own_row(first, 1, 1, "").error().code, ErrorCode::kAlreadyExists);
  auto read = store->read_own_row(first);
  ASSERT_TRUE(read.ok()) << read.error().message;
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->tag, first);
  EXPECT_EQ((*read)->max_id, 7);
  EXPECT_EQ((*read)->step, 10);
  EXPECT_EQ((*read)->description, "first 'quoted' \\ text");
  EXPECT_FALSE((*read)->updated_at.empty());
  auto absent = store->read_own_row(prefix + "absent");
  ASSERT_TRUE(absent.ok()) << absent.error().message;
  EXPECT_FALSE(absent->has_value());

  std::vector<std::string> keys = {first,
                                   prefix + "axb",
                                   prefix + "a%c",
                                   prefix + "abc",
                                   prefix + "a%",
                                   prefix + "A_b",
                                   prefix + "a",
                                   prefix + "a_b:x",
                                   prefix + "\u8ba2",
                                   prefix + "!",
                                   prefix + "\u8ba2x",
                                   prefix + "\U0010ffff",
                                   prefix + "\U0010ffffz"};
  for (std::size_t k = 1; k < keys.size(); ++k) {
    ASSERT_TRUE(store->create_own_row(keys[k], 1, 1, "").ok()) << keys[k];
  }
  std::sort(keys.begin(), keys.end());  // bytes, as std::string compares
  EXPECT_EQ(own_row_keys(store->list_own_rows(prefix, kAllSegmentTags)), keys);
  EXPECT_EQ(own_row_keys(store->list_own_rows(prefix, 3)),
            std::vector<std::string>(keys.begin(), keys.begin() + 3));
  using Keys = std::vector<std::string>;
  EXPECT_EQ(own_row_keys(store->list_own_rows(prefix + "a_", 100)), (Keys{first, first + ":x"}));
  EXPECT_EQ(own_row_keys(store->list_own_rows(prefix + "a%", 100)),
            (Keys{prefix + "a%", prefix + "a%c"}));
  EXPECT_EQ(own_row_keys(store->list_own_rows(prefix + "a ", 100)), Keys{});
  EXPECT_EQ(own_row_keys(store->list_own_rows(prefix + "\u8ba2", 100)),
            (Keys{prefix + "\u8ba2", prefix + "\u8ba2x"}));
  EXPECT_EQ(own_row_keys(store->list_own_rows(prefix + "\U0010ffff", 100)),
            (Keys{prefix + "\U0010ffff", prefix + "\U0010ffffz"}));
  EXPECT_EQ(own_row_keys(store->list_own_rows(prefix + "none", 100)), Keys{});

  auto tags = store->list_tags(kAllSegmentTags);
  ASSERT_TRUE(tags.ok()) << tags.error().message;
  for (const SegmentTagRecord &tag : *tags) EXPECT_NE(tag.tag.front(), '#') << tag.tag;
}

// A replacement is a compare and set on max_id: it writes only over the
// version it names and raises the version by one; a stale version, from
// this store object or another, writes nothing.
inline void check_own_rows_are_replaced_only_over_their_version(const OpenStore &open,
                                                                const std::string &prefix) {
  auto store = open();
  auto other = open();
  ASSERT_NE(store, nullptr);
  ASSERT_NE(other, nullptr);
  const std::string key = prefix + "settings";
  ASSERT_TRUE(store->create_own_row(key, 0, 1, "v0").ok());
  const auto row = [&] { return store->read_own_row(key).value().value(); };
  auto replaced = store->replace_own_row(key, 0, "v1");
  ASSERT_TRUE(replaced.ok()) << replaced.error().message;
  EXPECT_TRUE(*replaced);
  EXPECT_EQ(row().max_id, 1);
  EXPECT_EQ(row().description, "v1");
  auto stale = store->replace_own_row(key, 0, "stale");
  ASSERT_TRUE(stale.ok()) << stale.error().message;
  EXPECT_FALSE(*stale);
  EXPECT_EQ(row().max_id, 1);
  EXPECT_EQ(row().description, "v1");
  EXPECT_TRUE(other->replace_own_row(key, 1, "v2").value());
  EXPECT_FALSE(store->replace_own_row(key, 1, "v3").value());
  EXPECT_EQ(row().max_id, 2);
  EXPECT_EQ(row().description, "v2");
  EXPECT_EQ(store->replace_own_row(prefix + "absent", 0, "").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(store->replace_own_row(key, 2, std::string(257, 'd')).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(row().max_id, 2);
}

// Two store objects (two connections) taking ranges of one row from two
// threads at once get ranges that never overlap and together cover every
// number from the row's start to its max_id; max_id never passes 2^63-1.
inline void check_own_ranges_never_overlap(const OpenStore &open, const std::string &prefix) {
  const std::string key = prefix + "2026-12:order";
  {
    auto store = open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->create_own_row(key, 1, 1, "").ok());
  }
  constexpr int kTakes = 150;
  std::vector<SegmentRange> ranges[2];
  std::string failures[2];
  std::thread takers[2];
  for (int t = 0; t < 2; ++t) {
    takers[t] = std::thread([&, t] {
      auto store = open();
      for (int i = 0; store != nullptr && i < kTakes; ++i) {
        auto range = store->take_own_range(key, 1 + (i * 7 + t) % 5);
        if (!range.ok()) {
          failures[t] = range.error().message;
          return;
        }
        ranges[t].push_back(*range);
      }
    });
  }
  for (auto &taker : takers) taker.join();
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
  std::vector<SegmentRange> all = ranges[0];
  all.insert(all.end(), ranges[1].begin(), ranges[1].end());
  ASSERT_EQ(all.size(), 2u * kTakes);
  std::sort(all.begin(), all.end(),
            [](const SegmentRange &a, const SegmentRange &b) { return a.first < b.first; });
  std::int64_t next = 1;
  for (const SegmentRange &range : all) {
    ASSERT_EQ(range.first, next) << "a gap or an overlap";
    ASSERT_GT(range.end, range.first);
    next = range.end;
  }
  auto store = open();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->read_own_row(key).value().value().max_id, next);

  constexpr std::int64_t kLargest = std::numeric_limits<std::int64_t>::max();
  const std::string full = prefix + "full";
  ASSERT_TRUE(store->create_own_row(full, kLargest - 5, 1, "").ok());
  auto last = store->take_own_range(full, 5);
  ASSERT_TRUE(last.ok()) << last.error().message;
  EXPECT_EQ(last->end, kLargest);
  EXPECT_EQ(store->take_own_range(full, 1).error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(store->replace_own_row(full, kLargest, "").error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(store->read_own_row(full).value().value().max_id, kLargest);
  EXPECT_EQ(store->take_own_range(prefix + "absent", 1).error().code, ErrorCode::kNotFound);
}

// Keys must start with '#' and keep the tag rule's characters, at most
// kMaxOwnRowCharacters in all; the new row's fields keep the tag's bounds;
// the ticket identity's row is no call's to write.
inline void check_own_rows_refuse_bad_arguments(const OpenStore &open, const std::string &prefix) {
  auto store = open();
  ASSERT_NE(store, nullptr);
  constexpr ErrorCode kInvalid = ErrorCode::kInvalidArgument;
  std::string longest = prefix;
  while (longest.size() < kMaxOwnRowCharacters) longest += 'k';
  EXPECT_TRUE(store->create_own_row(longest, 0, 1, "").ok());
  for (const std::string &key : {std::string("order"), std::string(), longest + "k",
                                 prefix + "tab\there", prefix + "\xff"}) {
    EXPECT_EQ(store->create_own_row(key, 0, 1, "").error().code, kInvalid) << key;
    EXPECT_EQ(store->read_own_row(key).error().code, kInvalid) << key;
    EXPECT_EQ(store->list_own_rows(key, 10).error().code, kInvalid) << key;
    EXPECT_EQ(store->replace_own_row(key, 0, "").error().code, kInvalid) << key;
    EXPECT_EQ(store->take_own_range(key, 1).error().code, kInvalid) << key;
  }
  const std::string key = prefix + "bounds";
  EXPECT_EQ(store->create_own_row(key, 0, 0, "").error().code, kInvalid);
  EXPECT_EQ(store->create_own_row(key, 0, kMaxSegmentStep + 1, "").error().code, kInvalid);
  EXPECT_EQ(store->create_own_row(key, -1, 1, "").error().code, kInvalid);
  EXPECT_EQ(store->create_own_row(key, 0, 1, std::string(257, 'd')).error().code, kInvalid);
  ASSERT_TRUE(store->create_own_row(key, 0, 1, std::string(256, 'd')).ok());
  EXPECT_EQ(store->take_own_range(key, 0).error().code, kInvalid);
  EXPECT_EQ(store->take_own_range(key, kMaxSegmentStep + 1).error().code, kInvalid);
  EXPECT_EQ(store->read_own_row(key).value().value().max_id, 0);
  EXPECT_EQ(store->create_own_row("#ticket", 0, 1, "").error().code, kInvalid);
  EXPECT_EQ(store->take_own_range("#ticket", 1).error().code, kInvalid);
  EXPECT_EQ(store->replace_own_row("#ticket", 0, "").error().code, kInvalid);
  // A tag's calls refuse own rows' keys, as ever.
  EXPECT_EQ(store->take_range(key, 1).error().code, kInvalid);
}

// The database's clock agrees with this host's within a few seconds.
inline void check_store_time_is_the_clock(SegmentStore &store) {
  const auto before = std::chrono::system_clock::now().time_since_epoch();
  auto time = store.store_time();
  ASSERT_TRUE(time.ok()) << time.error().message;
  const auto after = std::chrono::system_clock::now().time_since_epoch();
  EXPECT_GT(*time, std::chrono::duration_cast<std::chrono::milliseconds>(before) -
                       std::chrono::seconds{3});
  EXPECT_LT(*time,
            std::chrono::duration_cast<std::chrono::milliseconds>(after) + std::chrono::seconds{3});
}

}  // namespace snowid::test

// The contract's tests for a store's test program: each body above as a
// TEST_F of `Fixture`, opening stores with `open_store` (an expression
// callable as OpenStore) under keys starting with the string literal
// `key_prefix` ('#' first), so that every store runs every body.
#define SNOWID_OWN_ROWS_CONTRACT_TESTS(Fixture, open_store, key_prefix)                          \
  TEST_F(Fixture, OwnRowsAreCreatedReadAndListedByPrefix) {                                      \
    ::snowid::test::check_own_rows_are_created_read_and_listed(open_store, key_prefix ".list:"); \
  }                                                                                              \
  TEST_F(Fixture, OwnRowsAreReplacedOnlyOverTheirVersion) {                                      \
    ::snowid::test::check_own_rows_are_replaced_only_over_their_version(open_store,              \
                                                                        key_prefix ".cas:");     \
  }                                                                                              \
  TEST_F(Fixture, OwnRangesOfTwoStoresNeverOverlap) {                                            \
    ::snowid::test::check_own_ranges_never_overlap(open_store, key_prefix ".ranges:");           \
  }                                                                                              \
  TEST_F(Fixture, OwnRowsRefuseBadKeysAndFields) {                                               \
    ::snowid::test::check_own_rows_refuse_bad_arguments(open_store, key_prefix ".bad:");         \
  }                                                                                              \
  TEST_F(Fixture, StoreTimeIsTheDatabasesClock) {                                                \
    auto store_to_ask = ::snowid::test::OpenStore(open_store)();                                 \
    ASSERT_NE(store_to_ask, nullptr);                                                            \
    ::snowid::test::check_store_time_is_the_clock(*store_to_ask);                                \
  }
