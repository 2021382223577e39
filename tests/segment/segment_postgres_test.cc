// Segment mode on a real PostgreSQL 15 cluster made for the test: several
// processes and allocators on one database, and the database stopped and
// restarted under load; ticket servers on that cluster and a second one.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "id_checks.h"
#include "own_rows_contract.h"
#include "postgres_suite.h"
#include "segment_test_support.h"
#include "snowid/ext/segment.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using SteadyClock = std::chrono::steady_clock;

const std::string kCli = SNOWID_CLI_PATH;
const std::string kLoad = SEGMENT_LOAD_PATH;

class SegmentPostgres : public test::PostgresSuite {
 protected:
  // For setting tags up: generous, since a loaded machine running the
  // sanitizer builds can take more than a second for a first connection.
  static std::unique_ptr<SegmentStore> store() {
    SegmentStoreOptions options;
    options.call_timeout = milliseconds{10000};
    auto opened = open_segment_store(postgres_->url(), options);
    EXPECT_TRUE(opened.ok()) << opened.error().message;
    return std::move(*opened);
  }
};

TEST_F(SegmentPostgres, StoreCreatesItsTableAndTakesRanges) {
  auto pg = store();
  EXPECT_STREQ(pg->kind(), "postgresql");
  ASSERT_TRUE(pg->create_tag("pg.basic", 1, 100, "first").ok());
  EXPECT_EQ(pg->create_tag("pg.basic", 1, 100, "").error().code, ErrorCode::kAlreadyExists);
  auto first = pg->take_range("pg.basic", std::nullopt);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->first, 1);
  EXPECT_EQ(first->end, 101);
  auto second = pg->take_range("pg.basic", 1000);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->first, 101);
  EXPECT_EQ(second->end, 1101);
  EXPECT_EQ(pg->take_range("pg.none", std::nullopt).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(pg->set_step("pg.none", 5).error().code, ErrorCode::kNotFound);
  ASSERT_TRUE(pg->set_step("pg.basic", 5).ok());
  auto tags = pg->list_tags(kAllSegmentTags);
  ASSERT_TRUE(tags.ok()) << tags.error().message;
  bool seen = false;
  for (const auto& tag : *tags) {
    if (tag.tag != "pg.basic") continue;
    seen = true;
    EXPECT_EQ(tag.max_id, 1101);
    EXPECT_EQ(tag.step, 5);
    EXPECT_EQ(tag.description, "first");
    EXPECT_FALSE(tag.updated_at.empty());
  }
  EXPECT_TRUE(seen);
  auto first_row = pg->list_tags(1);
  ASSERT_TRUE(first_row.ok()) << first_row.error().message;
  ASSERT_EQ(first_row->size(), 1u);
  EXPECT_EQ(first_row->front().tag, tags->front().tag);
}

// snowid's own rows (own_rows_contract.h), each test under keys of its own.
SNOWID_OWN_ROWS_CONTRACT_TESTS(SegmentPostgres, store, "#pg")

TEST_F(SegmentPostgres, TheCliManagesTags) {
  EXPECT_EQ(test::check_cli_manages_tags(kCli, postgres_->url(), "pg"), "");
}

TEST_F(SegmentPostgres, UnreachableServerIsATimelyTransientError) {
  // A port nobody listens on: refused at once, and bounded whatever happens.
  EXPECT_EQ(test::check_unreachable_is_timely("postgresql://postgres@127.0.0.1:1/postgres"), "");
}

TEST_F(SegmentPostgres, TwoProcessesUnderLoadNeverShareANumber) {
  ASSERT_TRUE(store()->create_tag("pg.shared", 1, 50, "").ok());
  EXPECT_EQ(test::check_two_loads_share_nothing(kLoad, postgres_->url(), "pg.shared", 100000, 400),
            "");
}

// Two allocators (two connections) with two threads each draw numbers while
// the server is stopped (immediate mode, like a crash) and started again.
TEST_F(SegmentPostgres, ServesFromBuffersWhileDownThenRecovers) {
  ASSERT_TRUE(store()->create_tag("pg.outage", 1, 200, "").ok());
  SegmentAllocatorOptions options;
  options.max_step = 2000;
  options.request_timeout = milliseconds{1000};
  options.retry_initial = milliseconds{20};
  options.retry_max = milliseconds{200};
  options.store.call_timeout = milliseconds{1000};
  std::vector<std::unique_ptr<SegmentAllocator>> allocators;
  for (int a = 0; a < 2; ++a) {
    auto allocator = SegmentAllocator::open(postgres_->url(), options);
    ASSERT_TRUE(allocator.ok()) << allocator.error().message;
    allocators.push_back(std::move(*allocator));
  }

  constexpr int kThreadsPerAllocator = 2;
  std::atomic<bool> stop{false};
  std::atomic<bool> paused{false};
  std::vector<std::atomic<std::uint64_t>> served(2);
  std::vector<std::atomic<std::uint64_t>> refused(2);
  std::vector<std::vector<std::int64_t>> per_thread(2 * kThreadsPerAllocator);
  std::mutex errors_mutex;
  std::vector<std::string> unexpected_errors;
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < per_thread.size(); ++t) {
    threads.emplace_back([&, t] {
      const std::size_t a = t / kThreadsPerAllocator;
      std::vector<std::int64_t> batch;
      while (!stop.load()) {
        if (paused.load()) {
          std::this_thread::sleep_for(milliseconds{1});
          continue;
        }
        batch.clear();
        Status taken = allocators[a]->next("pg.outage", 10, batch);
        if (taken.ok()) {
          per_thread[t].insert(per_thread[t].end(), batch.begin(), batch.end());
          served[a] += batch.size();
        } else if (taken.error().code == ErrorCode::kUnavailable) {
          ++refused[a];
        } else {
          std::lock_guard lock(errors_mutex);
          unexpected_errors.push_back(taken.error().message);
        }
        std::this_thread::sleep_for(std::chrono::microseconds{200});
      }
    });
  }
  auto wait_until = [](auto condition, seconds limit) {
    const auto deadline = SteadyClock::now() + limit;
    while (!condition()) {
      if (SteadyClock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds{5});
    }
    return true;
  };
  auto finish = [&] {
    stop = true;
    for (auto& thread : threads) thread.join();
  };

  // Load for a while, then pause it while the server goes down, so that what
  // is served afterwards provably comes from the buffers.
  std::this_thread::sleep_for(milliseconds{400});
  paused = true;
  const bool numbers_buffered = wait_until(
      [&] {
        return allocators[0]->stats().at(0).buffered_numbers > 0 &&
               allocators[1]->stats().at(0).buffered_numbers > 0;
      },
      seconds{10});
  std::this_thread::sleep_for(milliseconds{20});  // no call still in flight
  ASSERT_TRUE(postgres_->stop(true)) << postgres_->error();
  const std::uint64_t served_at_stop[2] = {served[0].load(), served[1].load()};
  paused = false;

  // Both keep serving from their buffered ranges, then refuse with kUnavailable.
  const bool both_refusing =
      wait_until([&] { return refused[0] > 0 && refused[1] > 0; }, seconds{20});
  const bool served_while_down = served[0] > served_at_stop[0] && served[1] > served_at_stop[1];
  std::vector<SegmentReadiness> while_down;
  for (const auto& allocator : allocators) while_down.push_back(allocator->readiness());

  ASSERT_TRUE(postgres_->start()) << postgres_->error();
  const std::uint64_t served_at_start[2] = {served[0].load(), served[1].load()};
  const bool recovered = wait_until(
      [&] {
        return served[0] > served_at_start[0] + 2000 && served[1] > served_at_start[1] + 2000 &&
               allocators[0]->readiness().ready && allocators[1]->readiness().ready;
      },
      seconds{30});
  std::this_thread::sleep_for(milliseconds{200});
  finish();

  EXPECT_TRUE(numbers_buffered);
  EXPECT_TRUE(both_refusing);
  EXPECT_TRUE(served_while_down) << "served at stop " << served_at_stop[0] << "/"
                                 << served_at_stop[1];
  for (const SegmentReadiness& readiness : while_down) {
    EXPECT_FALSE(readiness.store_reachable);
    EXPECT_FALSE(readiness.ready);
    EXPECT_NE(readiness.reason.find("pg.outage"), std::string::npos) << readiness.reason;
  }
  EXPECT_TRUE(recovered);
  EXPECT_TRUE(unexpected_errors.empty()) << unexpected_errors.front();
  for (const auto& allocator : allocators) {
    const auto stats = allocator->stats();
    ASSERT_EQ(stats.size(), 1u);
    EXPECT_GT(stats[0].store_errors, 0u);
    EXPECT_GT(stats[0].requests_waited, 0u);
  }
  EXPECT_EQ(test::check_unique_and_increasing(per_thread), "");
}

// Flickr's ticket servers on two PostgreSQL clusters: two nodes draw numbers
// while the first cluster crashes (immediate stop) and starts again. The
// second keeps every request served; no number is handed out twice; the
// first serves again once it is back.
TEST_F(SegmentPostgres, TicketServersServeThroughAClusterCrashWithoutRepeats) {
  test::PostgresProcess second;
  ASSERT_TRUE(second.started()) << second.error();
  ASSERT_TRUE(postgres_->psql("CREATE DATABASE tickets")) << postgres_->error();
  auto in_tickets = [](const std::string& url) {
    return url.substr(0, url.rfind('/')) + "/tickets";  // an empty database of its own
  };
  const std::string first_url = in_tickets(postgres_->url());
  const std::string second_url = second.url();
  SegmentStoreOptions store_options;
  store_options.call_timeout = milliseconds{10000};
  for (const auto& [url, remainder] : {std::pair{first_url, 0}, std::pair{second_url, 1}}) {
    auto store = open_segment_store(url, store_options);
    ASSERT_TRUE(store.ok()) << store.error().message;
    ASSERT_TRUE((*store)->set_ticket_identity({2, remainder}).ok());
  }
  const std::string set_url = first_url + " " + second_url;
  ASSERT_TRUE(open_segment_store(set_url, store_options).value()->create_tag("t", 1, 100, "").ok());

  SegmentAllocatorOptions options;
  options.max_step = 400;
  options.request_timeout = milliseconds{8000};
  options.store.call_timeout = milliseconds{2000};
  std::vector<std::unique_ptr<SegmentAllocator>> nodes;
  for (int n = 0; n < 2; ++n) {
    auto node = SegmentAllocator::open(set_url, options);
    ASSERT_TRUE(node.ok()) << node.error().message;
    nodes.push_back(std::move(*node));
  }
  constexpr int kThreads = 4;
  std::atomic<bool> stop{false}, restarted{false};
  std::atomic<std::uint64_t> served{0}, even_after_restart{0};
  std::mutex errors_mutex;
  std::vector<std::string> errors;
  std::vector<std::vector<std::int64_t>> per_thread(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::int64_t>& mine = per_thread[static_cast<std::size_t>(t)];
      while (!stop.load()) {
        const std::size_t before = mine.size();
        Status taken = nodes[static_cast<std::size_t>(t % 2)]->next("t", 5, mine);
        if (!taken.ok()) {
          std::lock_guard lock(errors_mutex);
          errors.push_back(taken.error().message);
        }
        served += mine.size() - before;
        if (restarted.load()) {
          for (std::size_t i = before; i < mine.size(); ++i) even_after_restart += mine[i] % 2 == 0;
        }
        std::this_thread::sleep_for(std::chrono::microseconds{200});
      }
    });
  }
  auto wait_until = [](auto condition, seconds limit) {
    const auto deadline = SteadyClock::now() + limit;
    while (!condition()) {
      if (SteadyClock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds{5});
    }
    return true;
  };
  const bool loaded = wait_until([&] { return served.load() > 3000; }, seconds{20});
  ASSERT_TRUE(postgres_->stop(true)) << postgres_->error();
  const std::uint64_t at_stop = served.load();
  const bool served_while_down =
      wait_until([&] { return served.load() > at_stop + 5000; }, seconds{30});
  ASSERT_TRUE(postgres_->start()) << postgres_->error();
  restarted = true;
  const bool first_back = wait_until([&] { return even_after_restart.load() > 500; }, seconds{60});
  stop = true;
  for (auto& thread : threads) thread.join();

  EXPECT_TRUE(loaded);
  EXPECT_TRUE(served_while_down) << "served " << served.load() - at_stop << " after the stop";
  EXPECT_TRUE(first_back);
  EXPECT_TRUE(errors.empty()) << errors.size() << " refusals, first: " << errors.front();
  std::vector<std::int64_t> all;
  for (const auto& numbers : per_thread) all.insert(all.end(), numbers.begin(), numbers.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a number was issued twice";
}

}  // namespace
}  // namespace snowid
