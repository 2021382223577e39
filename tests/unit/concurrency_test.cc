// Several threads share one generator on the real clock: no duplicates, and
// each thread sees its own IDs strictly increasing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "snowid/generator.h"

namespace snowid {
namespace {

void run_threads(const GeneratorOptions& options, int threads, std::size_t per_thread,
                 bool batches) {
  auto created = Generator::create(options);
  ASSERT_TRUE(created.ok()) << created.error().message;
  Generator& g = **created;
  std::vector<std::vector<Id>> ids(static_cast<std::size_t>(threads));
  std::atomic<int> failures{0};
  std::mutex error_mutex;
  std::string first_error;
  auto record = [&](const Error& e) {
    std::lock_guard lock(error_mutex);
    if (first_error.empty()) first_error = e.message;
  };
  std::vector<std::thread> workers;
  for (auto& mine : ids) {
    workers.emplace_back([&g, &mine, &failures, &record, per_thread, batches] {
      mine.resize(per_thread);
      std::size_t i = 0;
      while (i < per_thread) {
        if (batches) {
          auto block = g.next_block(static_cast<std::uint32_t>(std::min<std::size_t>(
              per_thread - i, 100)));
          if (!block.ok()) {
            record(block.error());
            failures.fetch_add(1);
            mine.resize(i);
            return;
          }
          for (std::uint32_t k = 0; k < block->count; ++k) mine[i++] = block->at(k);
        } else {
          auto id = g.next();
          if (!id.ok()) {
            record(id.error());
            failures.fetch_add(1);
            mine.resize(i);
            return;
          }
          mine[i++] = *id;
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(failures.load(), 0) << "the generator refused calls under plain load: " << first_error;
  std::vector<Id> all;
  all.reserve(per_thread * static_cast<std::size_t>(threads));
  for (const auto& mine : ids) {
    for (std::size_t i = 1; i < mine.size(); ++i) {
      ASSERT_LT(mine[i - 1], mine[i]) << "thread's IDs not strictly increasing at " << i;
    }
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::sort(all.begin(), all.end());
  const auto repeat = std::adjacent_find(all.begin(), all.end());
  EXPECT_EQ(repeat, all.end()) << "duplicate ID " << (repeat == all.end() ? 0 : *repeat);
}

TEST(Concurrency, TwoThreadsFiveMillionEachMonotonic) {
  run_threads(GeneratorOptions{}, 2, 5'000'000, false);
}

TEST(Concurrency, FourThreadsRejectPolicyWaitsAtTheCap) {
  GeneratorOptions options;
  options.clock_policy = ClockPolicy::kReject;
  run_threads(options, 4, 1'500'000, false);
}

TEST(Concurrency, ThreadsMixingSingleIdsAndBlocks) {
  GeneratorOptions options;
  options.layout.sequence_bits = 16;
  options.layout.datacenter_bits = 0;
  options.sequence_start = SequenceStart::kRandom;
  run_threads(options, 3, 3'000'000, true);
}

// Under load a clock that is not behind is never reported behind: /readyz
// reads readiness() while requests issue in every millisecond, and a unit
// issued between its reads of the clock and of the last unit must not look
// like a clock step back (reject allows no lead at all).
TEST(Concurrency, ReadinessStaysOkWhileOtherThreadsIssue) {
  GeneratorOptions options;
  options.clock_policy = ClockPolicy::kReject;
  auto created = Generator::create(options);
  ASSERT_TRUE(created.ok()) << created.error().message;
  Generator& g = **created;
  std::atomic<bool> stop{false};
  std::vector<std::thread> issuers;
  for (int t = 0; t < 2; ++t) {
    issuers.emplace_back([&g, &stop] {
      while (!stop.load(std::memory_order_relaxed)) (void)g.next();
    });
  }
  std::size_t checks = 0;
  std::string first_refusal;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds{1500};
  while (std::chrono::steady_clock::now() < until) {
    Status ready = g.readiness();
    ++checks;
    if (!ready.ok() && first_refusal.empty()) first_refusal = ready.error().message;
  }
  stop = true;
  for (auto& t : issuers) t.join();
  EXPECT_EQ(first_refusal, "") << "after " << checks << " checks";
}

}  // namespace
}  // namespace snowid
