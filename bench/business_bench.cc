// Business IDs from memory, side by side with the plain segment numbers they
// are made from, on one SQLite store, in one run:
//
//   BM_SegmentNumbers          SegmentAllocator::next(tag, 100, out): numbers
//   BM_BusinessIds/<template>  TagBook::next(tag, 100, out): strings of the
//                              template, from the same kind of store
//   BM_Render/<template>       BusinessFormat::render alone (no store, no lock)
//
// Both start at step 10,000 and grow it to 1,000,000 by the same rule, each
// taking its next range ahead on a thread of its own; so the difference is
// the tag book's render and string per ID, under the tag's lock.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "snowid/ext/business_format.h"
#include "snowid/ext/segment.h"
#include "tag_book.h"

namespace {

constexpr const char* kTemplates[] = {"ORD-{yyyyMMdd}-{seq:08}", "{yyMM}{seq:10}{luhn}",
                                      "INV{seq:12}{mod97}"};

class BenchDir {
 public:
  BenchDir() {
    char pattern[] = "/tmp/snowid-business-bench-XXXXXX";
    dir_ = ::mkdtemp(pattern);
  }
  ~BenchDir() { std::filesystem::remove_all(dir_); }
  std::string url() const { return "sqlite://" + dir_ + "/segments.db"; }

 private:
  std::string dir_;
};

void BM_SegmentNumbers(benchmark::State& state) {
  BenchDir dir;
  auto store = snowid::open_segment_store(dir.url());
  if (!store.ok() || !(*store)->create_tag("bench", 1, 10'000, "").ok()) std::abort();
  // Default options: the step grows to 1,000,000 as the tag book's does.
  auto allocator = snowid::SegmentAllocator::open(dir.url());
  if (!allocator.ok()) std::abort();
  std::vector<std::int64_t> numbers;
  for (auto _ : state) {
    numbers.clear();
    if (!(*allocator)->next("bench", 100, numbers).ok()) {
      state.SkipWithError("next failed");
      break;
    }
    benchmark::DoNotOptimize(numbers.data());
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
BENCHMARK(BM_SegmentNumbers)->UseRealTime()->MinTime(2.0);

void BM_BusinessIds(benchmark::State& state) {
  BenchDir dir;
  auto store = snowid::open_segment_store(dir.url());
  if (!store.ok()) std::abort();
  auto book = snowid::tags::TagBook::open(std::move(*store));
  if (!book.ok()) std::abort();
  snowid::tags::TagCreation creation;
  creation.tag = "bench";
  creation.step = 10'000;
  creation.template_text = kTemplates[state.range(0)];
  if (!(*book)->create(creation, "bench").ok()) std::abort();
  std::vector<std::string> ids;
  for (auto _ : state) {
    ids.clear();
    if (!(*book)->next("bench", 100, ids).ok()) {
      state.SkipWithError("next failed");
      break;
    }
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetItemsProcessed(state.iterations() * 100);
  state.SetLabel(kTemplates[state.range(0)]);
}
BENCHMARK(BM_BusinessIds)->DenseRange(0, 2)->UseRealTime()->MinTime(2.0);

void BM_Render(benchmark::State& state) {
  auto format = snowid::BusinessFormat::parse(kTemplates[state.range(0)], "Asia/Shanghai");
  if (!format.ok()) std::abort();
  const auto at = format->civil_time(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch()));
  std::string out;
  std::int64_t number = 1;
  for (auto _ : state) {
    out.clear();
    format->render(at, number++, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(kTemplates[state.range(0)]);
}
BENCHMARK(BM_Render)->DenseRange(0, 2)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
