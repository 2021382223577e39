// Segment mode from memory: numbers per second per tag on a SQLite store with
// a realistic step, and how many requests had to wait for the database.
//
//   BM_SegmentNext/threads:1|2   next(tag) as fast as the threads can call it
//   BM_SegmentBatch              next(tag, 100, out)
//   BM_SegmentPaced100k          100,000 numbers/s for 3 s: the steady-state
//                                target, where no request may wait
//
// Counters: waited = requests that found both ranges empty and waited for
// the store (the first request of a tag always does); fetched = ranges taken.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "snowid/ext/segment.h"

namespace {

using snowid::SegmentAllocator;

// A fresh SQLite file per benchmark run, holding tag "bench" with `step`.
class BenchStore {
 public:
  explicit BenchStore(std::int64_t step) {
    char pattern[] = "/tmp/snowid-segment-bench-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    url_ = "sqlite://" + dir_ + "/segments.db";
    auto store = snowid::open_segment_store(url_);
    if (!store.ok() || !(*store)->create_tag("bench", 1, step, "benchmark").ok()) std::abort();
    // Ranges of up to 100 M numbers: at tens of millions of numbers a second
    // the default max_step (1 M) lasts milliseconds, and on two cores the
    // fetching thread then competes with the benchmark's threads for CPU,
    // which would measure the scheduler rather than the allocator.
    snowid::SegmentAllocatorOptions options;
    options.max_step = 100'000'000;
    auto allocator = SegmentAllocator::open(url_, options);
    if (!allocator.ok()) std::abort();
    allocator_ = std::move(*allocator);
  }
  ~BenchStore() {
    allocator_.reset();
    std::filesystem::remove_all(dir_);
  }
  SegmentAllocator& allocator() { return *allocator_; }

  std::uint64_t waited() const {
    const auto stats = allocator_->stats();
    return stats.empty() ? 0 : stats[0].requests_waited;
  }

  void report(benchmark::State& state) {
    const auto stats = allocator_->stats();
    if (stats.empty()) return;
    state.counters["waited"] = static_cast<double>(stats[0].requests_waited);
    state.counters["fetched"] = static_cast<double>(stats[0].segments_fetched);
    state.counters["step"] = static_cast<double>(stats[0].current_step);
    state.counters["fetch_ms_max"] =
        static_cast<double>(stats[0].fetch_latency_max.count()) / 1000.0;
  }

 private:
  std::string dir_, url_;
  std::unique_ptr<SegmentAllocator> allocator_;
};

BenchStore* shared_store = nullptr;

void BM_SegmentNext(benchmark::State& state) {
  if (state.thread_index() == 0) shared_store = new BenchStore(10'000);
  // Google Benchmark starts the timed loop of all threads together, after setup.
  for (auto _ : state) {
    auto number = shared_store->allocator().next("bench");
    if (!number.ok()) {
      state.SkipWithError(number.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(*number);
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    shared_store->report(state);
    delete shared_store;
    shared_store = nullptr;
  }
}
BENCHMARK(BM_SegmentNext)->Threads(1)->Threads(2)->UseRealTime()->MinTime(2.0);

void BM_SegmentBatch(benchmark::State& state) {
  BenchStore store(10'000);
  std::vector<std::int64_t> numbers;
  for (auto _ : state) {
    numbers.clear();
    if (!store.allocator().next("bench", 100, numbers).ok()) {
      state.SkipWithError("next failed");
      break;
    }
    benchmark::DoNotOptimize(numbers.data());
  }
  state.SetItemsProcessed(state.iterations() * 100);
  store.report(state);
}
BENCHMARK(BM_SegmentBatch)->UseRealTime()->MinTime(2.0);

// 100 numbers every millisecond for 3 s, one at a time, with the default step
// of a new tag (1000): the step must grow and the prefetch must keep every
// request off the database.
void BM_SegmentPaced100k(benchmark::State& state) {
  for (auto _ : state) {
    BenchStore store(1000);
    auto tick = std::chrono::steady_clock::now();
    double waited_after_first_second = 0;
    for (int ms = 0; ms < 3000; ++ms) {
      for (int i = 0; i < 100; ++i) benchmark::DoNotOptimize(store.allocator().next("bench"));
      if (ms == 999) waited_after_first_second = -static_cast<double>(store.waited());
      tick += std::chrono::milliseconds{1};
      std::this_thread::sleep_until(tick);
    }
    store.report(state);
    // The steady state: waits in the last 2 s, once the step has grown.
    state.counters["waited_steady"] =
        waited_after_first_second + static_cast<double>(store.waited());
  }
  state.SetItemsProcessed(state.iterations() * 300'000);
}
BENCHMARK(BM_SegmentPaced100k)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
