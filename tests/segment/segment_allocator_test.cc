// The segment allocator on a real SQLite store: order, concurrency,
// restarts, the dynamic step, outages and bad input.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "id_checks.h"
#include "range_memory.h"
#include "segment_test_support.h"
#include "snowid/ext/segment.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using test::TempDir;

std::unique_ptr<SegmentStore> sqlite_store(const TempDir& dir) {
  auto store = open_segment_store("sqlite://" + dir.file("segments.db"));
  EXPECT_TRUE(store.ok()) << store.error().message;
  return std::move(*store);
}

std::unique_ptr<SegmentAllocator> allocator_on(std::unique_ptr<SegmentStore> store,
                                               SegmentAllocatorOptions options = {}) {
  auto allocator = SegmentAllocator::create(std::move(store), options);
  EXPECT_TRUE(allocator.ok()) << allocator.error().message;
  return std::move(*allocator);
}

// Takes numbers one at a time into `out` until a call fails (at most `limit`);
// returns that call's error, or kInvalidArgument "" if none failed.
Error take_until_error(SegmentAllocator& allocator, const std::string& tag, int limit,
                       std::vector<std::int64_t>& out) {
  for (int i = 0; i < limit; ++i) {
    auto number = allocator.next(tag);
    if (!number.ok()) return number.error();
    out.push_back(*number);
  }
  return Error{ErrorCode::kInvalidArgument, ""};
}

std::vector<std::int64_t> take(SegmentAllocator& allocator, const std::string& tag, int count) {
  std::vector<std::int64_t> numbers;
  const Error error = take_until_error(allocator, tag, count, numbers);
  EXPECT_EQ(error.message, "");
  return numbers;
}

SegmentTagStats stats_of(const SegmentAllocator& allocator, const std::string& tag) {
  for (const SegmentTagStats& s : allocator.stats()) {
    if (s.tag == tag) return s;
  }
  return {};
}

// Waits (bounded) until the background thread has fetched `segments` ranges of `tag`.
bool wait_for_segments(const SegmentAllocator& allocator, const std::string& tag,
                       std::uint64_t segments) {
  for (int i = 0; i < 2000; ++i) {
    if (stats_of(allocator, tag).segments_fetched >= segments) return true;
    std::this_thread::sleep_for(milliseconds{1});
  }
  return false;
}

TEST(SegmentAllocator, NumbersAreDenseAndStrictlyIncreasingWithinARun) {
  TempDir dir;
  auto store = sqlite_store(dir);
  ASSERT_TRUE(store->create_tag("orders", 1, 100, "").ok());
  auto allocator = allocator_on(std::move(store));
  const auto numbers = take(*allocator, "orders", 1000);
  ASSERT_EQ(numbers.size(), 1000u);
  EXPECT_EQ(test::check_unique_and_increasing({numbers}), "");
  EXPECT_EQ(numbers.front(), 1);
  // One process alone skips nothing: the ranges it takes follow each other.
  EXPECT_EQ(numbers.back(), 1000);
}

TEST(SegmentAllocator, BatchesSpanRanges) {
  TempDir dir;
  auto store = sqlite_store(dir);
  ASSERT_TRUE(store->create_tag("orders", 10, 7, "").ok());
  SegmentAllocatorOptions options;
  options.max_step = 7;  // every range 7 numbers
  auto allocator = allocator_on(std::move(store), options);
  std::vector<std::int64_t> numbers;
  ASSERT_TRUE(allocator->next("orders", 50, numbers).ok());
  ASSERT_EQ(numbers.size(), 50u);
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    EXPECT_EQ(numbers[i], 10 + static_cast<std::int64_t>(i));
  }
  EXPECT_GE(stats_of(*allocator, "orders").segments_fetched, 8u);
  EXPECT_EQ(stats_of(*allocator, "orders").numbers_issued, 50u);
}

TEST(SegmentAllocator, ConcurrentThreadsNeverShareANumber) {
  TempDir dir;
  auto store = sqlite_store(dir);
  ASSERT_TRUE(store->create_tag("orders", 1, 50, "").ok());
  SegmentAllocatorOptions options;
  options.max_step = 400;  // many fetches while the threads run
  auto allocator = allocator_on(std::move(store), options);
  constexpr int kThreads = 4;
  std::vector<std::vector<std::int64_t>> per_thread(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::int64_t> batch;
      for (int i = 0; i < 5000; ++i) {
        if (i % 2 == 0) {
          auto number = allocator->next("orders");
          ASSERT_TRUE(number.ok()) << number.error().message;
          per_thread[static_cast<std::size_t>(t)].push_back(*number);
        } else {
          batch.clear();
          ASSERT_TRUE(allocator->next("orders", 3, batch).ok());
          per_thread[static_cast<std::size_t>(t)].insert(
              per_thread[static_cast<std::size_t>(t)].end(), batch.begin(), batch.end());
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(test::check_unique_and_increasing(per_thread), "");
  EXPECT_EQ(stats_of(*allocator, "orders").numbers_issued, 4u * 10000u);
}

TEST(SegmentAllocator, ARestartNeverRepeatsANumber) {
  TempDir dir;
  std::vector<std::vector<std::int64_t>> runs;
  {
    auto store = sqlite_store(dir);
    ASSERT_TRUE(store->create_tag("orders", 1, 100, "").ok());
  }
  for (int run = 0; run < 3; ++run) {
    auto allocator = allocator_on(sqlite_store(dir));
    runs.push_back(take(*allocator, "orders", 250));
  }
  std::vector<std::int64_t> all;
  for (const auto& numbers : runs) all.insert(all.end(), numbers.begin(), numbers.end());
  // Also strictly increasing across runs: each run starts above the ranges the last one took.
  EXPECT_EQ(test::check_unique_and_increasing({all}), "");
}

TEST(SegmentAllocator, UnknownTagIsNotFoundAndNotRemembered) {
  TempDir dir;
  auto allocator = allocator_on(sqlite_store(dir));
  auto number = allocator->next("missing");
  ASSERT_FALSE(number.ok());
  EXPECT_EQ(number.error().code, ErrorCode::kNotFound);
  EXPECT_NE(number.error().message.find("missing"), std::string::npos);
  EXPECT_TRUE(allocator->stats().empty());
  EXPECT_TRUE(allocator->readiness().ready);
}

TEST(SegmentAllocator, ATagCreatedLaterIsFound) {
  TempDir dir;
  auto allocator = allocator_on(sqlite_store(dir));
  ASSERT_EQ(allocator->next("late").error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(sqlite_store(dir)->create_tag("late", 5, 10, "").ok());
  auto number = allocator->next("late");
  ASSERT_TRUE(number.ok()) << number.error().message;
  EXPECT_EQ(*number, 5);
}

TEST(SegmentAllocator, AutoCreationMakesUnknownTags) {
  TempDir dir;
  SegmentAllocatorOptions options;
  options.auto_create_tags = true;
  options.auto_create_start = 1000;
  options.auto_create_step = 20;
  auto allocator = allocator_on(sqlite_store(dir), options);
  auto number = allocator->next("fresh");
  ASSERT_TRUE(number.ok()) << number.error().message;
  EXPECT_EQ(*number, 1000);
  auto records = sqlite_store(dir)->list_tags(kAllSegmentTags);
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ(records->front().step, 20);
}

TEST(SegmentAllocator, BadInputIsRefused) {
  TempDir dir;
  auto allocator = allocator_on(sqlite_store(dir));
  std::vector<std::int64_t> out{42};
  for (const std::string& bad :
       std::vector<std::string>{"", "#ticket", "tab\there", "\xff", std::string(129, 'x')}) {
    EXPECT_EQ(allocator->next(bad).error().code, ErrorCode::kInvalidArgument) << bad;
  }
  ASSERT_TRUE(sqlite_store(dir)->create_tag("t", 1, 10, "").ok());
  EXPECT_EQ(allocator->next("t", 0, out).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(allocator->next("t", 1'000'001, out).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(out, std::vector<std::int64_t>{42});

  SegmentAllocatorOptions options;
  options.prefetch_at_used_fraction = 1.5;
  EXPECT_FALSE(SegmentAllocator::create(sqlite_store(dir), options).ok());
  options = {};
  options.max_step = 0;
  EXPECT_FALSE(SegmentAllocator::create(sqlite_store(dir), options).ok());
  EXPECT_EQ(SegmentAllocator::open("ftp://x").error().code, ErrorCode::kInvalidArgument);
}

TEST(SegmentStep, FollowsLeafsRule) {
  SegmentAllocatorOptions options;  // 15 min, 30 min, max 1,000,000
  EXPECT_EQ(next_segment_step(1000, 1000, minutes{1}, options), 2000);
  EXPECT_EQ(next_segment_step(1000, 1000, minutes{20}, options), 1000);
  EXPECT_EQ(next_segment_step(4000, 1000, minutes{31}, options), 2000);
  EXPECT_EQ(next_segment_step(1000, 1000, minutes{31}, options), 1000);  // never below configured
  EXPECT_EQ(next_segment_step(800'000, 1000, minutes{1}, options), 1'000'000);  // capped
  EXPECT_EQ(next_segment_step(1'000'000, 1000, minutes{1}, options), 1'000'000);
  // A configured step above max_step wins over max_step.
  EXPECT_EQ(next_segment_step(5'000'000, 5'000'000, minutes{1}, options), 5'000'000);
  // A raised configured step (set-step) applies at once.
  EXPECT_EQ(next_segment_step(1000, 3000, minutes{20}, options), 3000);
}

TEST(SegmentAllocator, StepDoublesWhileRangesGoFastAndHalvesWhenSlow) {
  TempDir dir;
  auto store = sqlite_store(dir);
  ASSERT_TRUE(store->create_tag("orders", 1, 100, "").ok());
  ManualClock clock{milliseconds{1'800'000'000'000}};
  SegmentAllocatorOptions options;
  options.clock = &clock;
  options.max_step = 800;
  options.prefetch_at_used_fraction = 0.5;
  auto allocator = allocator_on(std::move(store), options);

  // Uses the current range past its prefetch mark and waits for the fetch.
  std::uint64_t fetched = 0;
  auto fetch_next = [&] {
    const auto before = stats_of(*allocator, "orders");
    const auto buffered = before.segments_fetched == 0 ? 1 : before.buffered_numbers;
    std::vector<std::int64_t> numbers;
    ASSERT_TRUE(allocator->next("orders", static_cast<std::size_t>(buffered), numbers).ok());
    ++fetched;
    ASSERT_TRUE(wait_for_segments(*allocator, "orders", fetched));
  };
  fetch_next();  // first range: the configured step
  EXPECT_EQ(stats_of(*allocator, "orders").current_step, 100);
  std::vector<std::int64_t> steps;
  for (int i = 0; i < 4; ++i) {
    clock.advance(minutes{1});  // each range lasted one minute: grow
    fetch_next();
    steps.push_back(stats_of(*allocator, "orders").current_step);
  }
  EXPECT_EQ(steps, (std::vector<std::int64_t>{200, 400, 800, 800}));
  steps.clear();
  for (int i = 0; i < 2; ++i) {
    clock.advance(minutes{20});  // between the bounds: keep
    fetch_next();
    steps.push_back(stats_of(*allocator, "orders").current_step);
  }
  for (int i = 0; i < 4; ++i) {
    clock.advance(minutes{45});  // slow: shrink to the configured step
    fetch_next();
    steps.push_back(stats_of(*allocator, "orders").current_step);
  }
  EXPECT_EQ(steps, (std::vector<std::int64_t>{800, 800, 400, 200, 100, 100}));
  EXPECT_EQ(stats_of(*allocator, "orders").requests_waited, 1u);  // only the very first request
}

TEST(SegmentAllocator, ServesFromBuffersDuringAnOutageThenRecovers) {
  TempDir dir;
  auto real = sqlite_store(dir);
  ASSERT_TRUE(real->create_tag("orders", 1, 100, "").ok());
  auto down = std::make_shared<std::atomic<bool>>(false);
  SegmentAllocatorOptions options;
  options.max_step = 100;
  options.retry_initial = milliseconds{5};
  options.retry_max = milliseconds{20};
  auto allocator = allocator_on(std::make_unique<test::FlakyStore>(std::move(real), down), options);
  std::vector<std::int64_t> all = take(*allocator, "orders", 20);
  ASSERT_TRUE(wait_for_segments(*allocator, "orders", 2));  // the standby range is ready
  EXPECT_TRUE(allocator->readiness().ready);

  down->store(true);
  const std::size_t before_outage = all.size();
  const Error last = take_until_error(*allocator, "orders", 1000, all);
  EXPECT_EQ(all.size() - before_outage, 180u);  // the rest of both buffered ranges, then the error
  EXPECT_EQ(last.code, ErrorCode::kUnavailable);
  EXPECT_NE(last.message.find("test outage"), std::string::npos) << last.message;
  const SegmentReadiness outage = allocator->readiness();
  EXPECT_FALSE(outage.ready);
  EXPECT_FALSE(outage.store_reachable);
  EXPECT_NE(outage.reason.find("orders"), std::string::npos) << outage.reason;
  EXPECT_GE(stats_of(*allocator, "orders").store_errors, 1u);

  down->store(false);  // the background retry finds the store again
  Result<std::int64_t> recovered = Error{ErrorCode::kUnavailable, ""};
  for (int i = 0; i < 2000 && !recovered.ok(); ++i) {
    std::this_thread::sleep_for(milliseconds{1});
    recovered = allocator->next("orders");
  }
  ASSERT_TRUE(recovered.ok()) << recovered.error().message;
  all.push_back(*recovered);
  EXPECT_TRUE(allocator->readiness().ready);
  auto more = take(*allocator, "orders", 300);
  all.insert(all.end(), more.begin(), more.end());
  EXPECT_EQ(test::check_unique_and_increasing({all}), "");
}

TEST(SegmentAllocator, BuffersShowEachTagsRangesAndPositions) {
  TempDir dir;
  auto store = sqlite_store(dir);
  ASSERT_TRUE(store->create_tag("a", 1, 100, "").ok());
  ASSERT_TRUE(store->create_tag("b", 1000, 10, "").ok());
  ASSERT_TRUE(store->create_tag("c", 1, 100, "").ok());
  SegmentAllocatorOptions options;
  options.max_step = 100;  // the standby range of `a` keeps the configured size
  auto allocator = allocator_on(std::move(store), options);
  take(*allocator, "a", 20);
  take(*allocator, "b", 5);
  ASSERT_TRUE(wait_for_segments(*allocator, "a", 2));
  ASSERT_TRUE(wait_for_segments(*allocator, "b", 2));

  const SegmentBuffersSnapshot all = allocator->buffers(10);
  EXPECT_EQ(all.tags_known, 2u) << "c was never requested";
  ASSERT_EQ(all.tags.size(), 2u);
  const SegmentBufferState& a = all.tags[0];
  EXPECT_EQ(a.tag, "a");
  EXPECT_TRUE(a.initialized);
  EXPECT_EQ(a.current.next, 21);
  EXPECT_EQ(a.current.end, 101);
  EXPECT_EQ(a.current.size, 100);
  EXPECT_EQ(a.current.prefetch_at, 11);
  EXPECT_TRUE(a.standby_ready);
  EXPECT_EQ(a.standby.next, 101);
  EXPECT_EQ(a.standby.end, 201);
  EXPECT_FALSE(a.fetch_pending);
  EXPECT_EQ(a.step, 100);
  EXPECT_EQ(a.configured_step, 100);
  const SegmentBufferState& b = all.tags[1];
  EXPECT_EQ(b.tag, "b");
  EXPECT_EQ(b.current.next, 1005);
  EXPECT_EQ(b.current.end, 1010);
  EXPECT_TRUE(b.standby_ready);
  EXPECT_EQ(b.standby.next, 1010);
  EXPECT_EQ(b.configured_step, 10);

  const SegmentBuffersSnapshot first = allocator->buffers(1);
  EXPECT_EQ(first.tags_known, 2u);
  ASSERT_EQ(first.tags.size(), 1u);
  EXPECT_EQ(first.tags[0].tag, "a");
}

TEST(SegmentAllocator, StoreRowsReadTheStoreAndRefuseWhileItIsDown) {
  TempDir dir;
  auto real = sqlite_store(dir);
  for (const char* tag : {"a", "b", "c"}) ASSERT_TRUE(real->create_tag(tag, 1, 100, "").ok());
  auto down = std::make_shared<std::atomic<bool>>(false);
  SegmentAllocatorOptions options;
  options.retry_initial = milliseconds{5};
  options.retry_max = milliseconds{20};
  auto allocator = allocator_on(std::make_unique<test::FlakyStore>(std::move(real), down), options);
  take(*allocator, "a", 1);

  auto rows = allocator->store_rows(2);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].tag, "a");
  EXPECT_EQ((*rows)[0].max_id, 101);
  EXPECT_EQ((*rows)[1].tag, "b");
  EXPECT_EQ((*rows)[1].max_id, 1);

  down->store(true);
  const auto failed = allocator->store_rows(2);  // the call itself finds the store down
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, ErrorCode::kUnavailable);
  EXPECT_FALSE(allocator->readiness().store_reachable);
  const auto refused = allocator->store_rows(2);  // known down: refused without a call
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("unreachable"), std::string::npos)
      << refused.error().message;

  down->store(false);  // the background pings find the store again
  for (int i = 0; i < 2000 && !allocator->readiness().store_reachable; ++i) {
    std::this_thread::sleep_for(milliseconds{1});
  }
  rows = allocator->store_rows(5);
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  EXPECT_EQ(rows->size(), 3u);
}

TEST(SegmentAllocator, AStoreDownAtStartIsNotReady) {
  TempDir dir;
  auto down = std::make_shared<std::atomic<bool>>(true);
  auto allocator = allocator_on(std::make_unique<test::FlakyStore>(sqlite_store(dir), down));
  for (int i = 0; i < 2000 && allocator->readiness().store_reachable; ++i) {
    std::this_thread::sleep_for(milliseconds{1});
  }
  const SegmentReadiness readiness = allocator->readiness();
  EXPECT_FALSE(readiness.store_reachable);
  EXPECT_FALSE(readiness.ready);
  EXPECT_NE(readiness.reason.find("test outage"), std::string::npos) << readiness.reason;
  EXPECT_EQ(allocator->next("orders").error().code, ErrorCode::kUnavailable);
}

TEST(SegmentAllocator, SteadyStateRequestsNeverWaitForTheStore) {
  TempDir dir;
  auto store = sqlite_store(dir);
  ASSERT_TRUE(store->create_tag("orders", 1, 10000, "").ok());
  auto allocator = allocator_on(std::move(store));
  // Paced like a busy service: the prefetch at 10% leaves the fetch 90% of a
  // range's lifetime to finish (at least 180 ms here, which a loaded 2-core
  // machine's fsync also fits in).
  for (int i = 0; i < 400; ++i) {
    std::vector<std::int64_t> numbers;
    ASSERT_TRUE(allocator->next("orders", 100, numbers).ok());
    std::this_thread::sleep_for(std::chrono::microseconds{2000});
  }
  const SegmentTagStats stats = stats_of(*allocator, "orders");
  EXPECT_EQ(stats.requests_waited, 1u);  // the first request of the tag
  EXPECT_EQ(stats.numbers_issued, 40000u);
  EXPECT_GE(stats.segments_fetched, 3u);
  EXPECT_GT(stats.current_step, 10000);  // ranges went fast: the step grew
}

// Ranges of one to eight numbers, so that nearly every request races the
// switch to the next range; batches larger than a range take the lock-free
// path, the switch and the wait in one call.
TEST(SegmentAllocator, RangeSwitchesUnderContentionNeverRepeatOrReorder) {
  TempDir dir;
  auto store = sqlite_store(dir);
  ASSERT_TRUE(store->create_tag("tiny", 1, 1, "").ok());
  SegmentAllocatorOptions options;
  options.max_step = 8;
  options.prefetch_at_used_fraction = 0.0;  // the standby is fetched as soon as a range starts
  auto allocator = allocator_on(std::move(store), options);
  constexpr int kThreads = 4;
  std::vector<std::vector<std::int64_t>> per_thread(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::int64_t>& mine = per_thread[static_cast<std::size_t>(t)];
      for (int i = 0; i < 150; ++i) {
        const std::size_t count = static_cast<std::size_t>(1 + (i + t) % 7);
        ASSERT_TRUE(allocator->next("tiny", count, mine).ok());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(test::check_unique_and_increasing(per_thread), "");
  std::uint64_t taken = 0;
  for (const auto& numbers : per_thread) taken += numbers.size();
  EXPECT_EQ(stats_of(*allocator, "tiny").numbers_issued, taken);
}

// Tags become known (and enter the lock-free table, which grows) while other
// threads read the tags already known.
TEST(SegmentAllocator, TagsAddedWhileOthersAreReadNeverShareANumber) {
  TempDir dir;
  SegmentAllocatorOptions options;
  options.auto_create_tags = true;
  options.auto_create_step = 20;
  options.max_step = 40;
  auto allocator = allocator_on(sqlite_store(dir), options);
  constexpr int kThreads = 4;
  constexpr int kTags = 70;  // past several of the table's doublings
  std::vector<std::vector<std::vector<std::int64_t>>> per_tag_thread(
      kTags, std::vector<std::vector<std::int64_t>>(kThreads));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3000; ++i) {
        const int tag = (i * (t + 1) / 7) % kTags;
        auto number = allocator->next("tag" + std::to_string(tag));
        ASSERT_TRUE(number.ok()) << number.error().message;
        per_tag_thread[static_cast<std::size_t>(tag)][static_cast<std::size_t>(t)].push_back(
            *number);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int tag = 0; tag < kTags; ++tag) {
    EXPECT_EQ(test::check_unique_and_increasing(per_tag_thread[static_cast<std::size_t>(tag)]), "")
        << "tag" << tag;
  }
  EXPECT_EQ(allocator->stats().size(), static_cast<std::size_t>(kTags));
}

// A store made up in a test: it answers every call but take_range at once.
class RangeOnlyStore : public SegmentStore {
 public:
  Status ping() override { return {}; }
  Status create_tag(std::string_view, std::int64_t, std::int64_t, std::string_view) override {
    return {};
  }
  Result<std::vector<SegmentTagRecord>> list_tags(std::size_t) override {
    return std::vector<SegmentTagRecord>{};
  }
  Status set_step(std::string_view, std::int64_t) override { return {}; }
};

// A store whose ranges are wider than one range of the allocator can hold
// (2^30 - 1 numbers): the rest of each range is skipped, never wrapped.
class WideRangeStore final : public RangeOnlyStore {
 public:
  static constexpr std::int64_t kWidth = std::int64_t{1} << 40;
  const char* kind() const override { return "wide"; }
  Result<SegmentRange> take_range(std::string_view, std::optional<std::int64_t>) override {
    const std::int64_t first = next_first_;
    next_first_ += kWidth;
    return SegmentRange{first, first + kWidth, kWidth};
  }

 private:
  std::int64_t next_first_ = 0;
};

TEST(SegmentAllocator, ARangeWiderThanTheCursorIsCutNotWrapped) {
  SegmentAllocatorOptions options;
  options.prefetch_at_used_fraction = 1.0;  // keep the second range unfetched
  auto allocator = allocator_on(std::make_unique<WideRangeStore>(), options);
  constexpr std::int64_t kCut = (std::int64_t{1} << 30) - 1;
  std::vector<std::int64_t> numbers;
  ASSERT_TRUE(allocator->next("wide", 1000, numbers).ok());
  EXPECT_EQ(numbers.front(), 0);
  EXPECT_EQ(numbers.back(), 999);
  const SegmentBuffersSnapshot buffers = allocator->buffers(1);
  ASSERT_EQ(buffers.tags.size(), 1u);
  EXPECT_EQ(buffers.tags[0].current.next, 1000);
  EXPECT_EQ(buffers.tags[0].current.size, kCut);
  EXPECT_EQ(buffers.tags[0].current.end, kCut);  // not the store's 2^40
}

// A store that hands out the same range again (as after max_id was lowered
// by hand or a backup restored): the allocator must refuse it.
class RewoundStore final : public RangeOnlyStore {
 public:
  const char* kind() const override { return "rewound"; }
  Result<SegmentRange> take_range(std::string_view, std::optional<std::int64_t>) override {
    return SegmentRange{1, 11, 10};
  }
};

TEST(SegmentAllocator, AStoreThatGoesBackIsRefusedNotRepeated) {
  SegmentAllocatorOptions options;
  options.retry_initial = milliseconds{1};
  options.retry_max = milliseconds{2};
  auto allocator = allocator_on(std::make_unique<RewoundStore>(), options);
  std::vector<std::int64_t> numbers;
  const Error refused = take_until_error(*allocator, "orders", 100, numbers);
  EXPECT_EQ(numbers.size(), 10u);
  EXPECT_EQ(refused.code, ErrorCode::kUnavailable);
  EXPECT_NE(refused.message.find("below numbers already issued"), std::string::npos)
      << refused.message;
  EXPECT_EQ(test::check_unique_and_increasing({numbers}), "");
}

// The range memory (range_memory.h): a store put back from an older copy
// is refused by an allocator started later on the same memory, which does
// not take ranges meanwhile, and serves again once max_id was raised past
// what it remembers.
TEST(SegmentAllocator, AStoreRestoredFromAnOlderCopyIsRefusedAcrossRestarts) {
  TempDir dir;
  const std::string db = dir.file("segments.db");
  ASSERT_TRUE(sqlite_store(dir)->create_tag("orders", 1, 10, "").ok());
  std::filesystem::copy_file(db, dir.file("backup.db"));
  SegmentAllocatorOptions options;
  options.retry_initial = milliseconds{1};
  options.retry_max = milliseconds{20};
  options.range_memory = dir.file("segment-ranges");
  options.store_names = {"the-store"};
  std::vector<std::string> reports;
  std::mutex reports_mutex;
  options.report = [&](bool error, std::string_view message) {
    std::lock_guard lock(reports_mutex);
    reports.push_back(fmt::format("{} {}", error ? "error" : "info", message));
  };
  std::vector<std::int64_t> numbers = take(*allocator_on(sqlite_store(dir), options), "orders", 55);

  std::filesystem::copy_file(dir.file("backup.db"), db,
                             std::filesystem::copy_options::overwrite_existing);
  auto restarted = allocator_on(sqlite_store(dir), options);
  std::vector<std::int64_t> after;
  const Error refused = take_until_error(*restarted, "orders", 10, after);
  EXPECT_TRUE(after.empty());
  EXPECT_EQ(refused.code, ErrorCode::kUnavailable);
  EXPECT_NE(refused.message.find("segment tag 'orders' refused: store the-store handed [1, 11)"),
            std::string::npos)
      << refused.message;
  const SegmentReadiness readiness = restarted->readiness();
  EXPECT_FALSE(readiness.ready);
  ASSERT_EQ(readiness.refused_tags.size(), 1u);
  EXPECT_NE(readiness.reason.find("'orders' refused"), std::string::npos) << readiness.reason;
  EXPECT_TRUE(stats_of(*restarted, "orders").refused);
  {
    std::lock_guard lock(reports_mutex);
    ASSERT_FALSE(reports.empty());
    EXPECT_TRUE(reports.front().starts_with("error segment tag 'orders' refused"));
  }
  // Refused, it takes no more ranges: max_id stays where the refused fetch left
  // it.
  std::this_thread::sleep_for(milliseconds{100});
  EXPECT_EQ((*sqlite_store(dir)->list_tags(kAllSegmentTags))[0].max_id, 11);

  // The repair: max_id raised past the end remembered (at most 151: the
  // steps of the 55 numbers grow 10, 20, 40, 80 at most).
  ASSERT_TRUE(sqlite_store(dir)->take_range("orders", 1000).ok());
  for (int i = 0; i < 500 && !restarted->readiness().ready; ++i) {
    std::this_thread::sleep_for(milliseconds{10});
  }
  ASSERT_TRUE(restarted->readiness().ready) << restarted->readiness().reason;
  after = take(*restarted, "orders", 30);
  ASSERT_EQ(after.size(), 30u);
  EXPECT_GE(after.front(), 1011);
  numbers.insert(numbers.end(), after.begin(), after.end());
  EXPECT_EQ(test::check_unique_and_increasing({numbers}), "");
}

TEST(SegmentAllocator, ADamagedRangeMemoryStopsTheStart) {
  TempDir dir;
  SegmentAllocatorOptions options;
  options.range_memory = dir.file("segment-ranges");
  { std::ofstream(dir.file("segment-ranges")) << "range s orders 100\n"; }
  auto refused = SegmentAllocator::create(sqlite_store(dir), options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kStateFile);
  EXPECT_NE(refused.error().message.find("damaged"), std::string::npos) << refused.error().message;
}

TEST(SegmentStoreName, KeepsWhatNamesTheDatabaseAndDropsSecrets) {
  EXPECT_EQ(
      segment::segment_store_name(
          "postgresql://u:secret@db.example:5432/ids?password=x&sslmode=require&dbname=other"),
      "postgresql://db.example:5432/ids?dbname=other");
  EXPECT_EQ(segment::segment_store_name(
                "mysql://root@127.0.0.1:3306/snowid?layout=leaf&password_file=/run/pw"),
            "mysql://127.0.0.1:3306/snowid?layout=leaf");
  EXPECT_EQ(segment::segment_store_name("postgres://h/db?password=a%40b"), "postgres://h/db");
  EXPECT_EQ(segment::segment_store_name("sqlite:///var/lib/snowid/./segments.db"),
            "sqlite:///var/lib/snowid/segments.db");
  EXPECT_TRUE(segment::segment_store_name("sqlite://rel.db").starts_with("sqlite:///"));
}

}  // namespace
}  // namespace snowid
