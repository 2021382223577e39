// Generator benchmarks (Google Benchmark). Build type Release; run with
// bench/run.sh, which records the figures in docs/performance.md.
//
//   BM_SingleThreadAtCap       twitter layout, reject policy: IDs/s against the 4,096,000/s cap
//   BM_BurstCostPerId          median ns per ID of 1000 calls started just after a ms tick
//   BM_ReferenceMutexBurst     the same for a textbook mutex + clock_gettime generator
//   BM_RawThroughput           22 sequence bits: a cap out of reach
//   BM_LongestCallAtCap        the slowest single next() while saturating the cap
//   BM_Batch1000               next(span) of 1000 IDs, 22 sequence bits
//   BM_SharedByThreads         several threads on one generator
//   BM_OpaqueOne               next() then its opaque ID (opaque_id.h), one at a time
//   BM_OpaqueBatch1000         next(span) of 1000 IDs, then their opaque IDs in place
//   BM_EncodeBase58            one ID as fixed-width base58 text (id_encoding.h)
#include <benchmark/benchmark.h>
#include <x86intrin.h>

#include <algorithm>
#include <ctime>
#include <mutex>
#include <vector>

#include "snowid/generator.h"
#include "snowid/id_encoding.h"
#include "snowid/opaque_id.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;

std::unique_ptr<Generator> make(ClockPolicy policy, int sequence_bits) {
  GeneratorOptions options;
  options.clock_policy = policy;
  if (sequence_bits != 12) {
    options.layout.sequence_bits = sequence_bits;
    options.layout.datacenter_bits = 0;
    options.layout.worker_bits = 22 - sequence_bits;
  }
  return std::move(*Generator::create(options));
}

long long realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

// Spins until a new millisecond begins.
void wait_for_ms_tick() {
  const long long ms = realtime_ns() / 1'000'000;
  while (realtime_ns() / 1'000'000 == ms) {
  }
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void BM_SingleThreadAtCap(benchmark::State& state) {
  auto g = make(ClockPolicy::kReject, 12);
  for (auto _ : state) benchmark::DoNotOptimize(g->next());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_SingleThreadAtCap)->MinTime(3.0);

// Times runs of 1000 next() calls, each started just after a millisecond
// tick so the cap (4096 per ms) is never reached within a run.
template <typename NextFn>
void burst(benchmark::State& state, NextFn&& next) {
  constexpr int kRun = 1000, kRuns = 300;
  std::vector<double> per_id;
  for (auto _ : state) {
    per_id.clear();
    for (int r = 0; r < kRuns; ++r) {
      wait_for_ms_tick();
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < kRun; ++i) benchmark::DoNotOptimize(next());
      const auto elapsed = std::chrono::steady_clock::now() - start;
      per_id.push_back(std::chrono::duration<double, std::nano>(elapsed).count() / kRun);
    }
  }
  state.counters["median_ns_per_id"] = median(per_id);
  state.counters["min_ns_per_id"] = *std::min_element(per_id.begin(), per_id.end());
}

void BM_BurstCostPerId(benchmark::State& state) {
  auto g = make(ClockPolicy::kMonotonic, 12);
  burst(state, [&] { return g->next(); });
}
BENCHMARK(BM_BurstCostPerId)->Iterations(1)->Unit(benchmark::kMillisecond);

// A textbook thread-safe Snowflake (mutex, one clock_gettime per ID), for
// comparison in the same run. Not part of snowid.
class MutexSnowflake {
 public:
  std::int64_t next() {
    std::lock_guard lock(mutex_);
    std::int64_t ms = realtime_ns() / 1'000'000;
    if (ms < last_ms_) return -1;
    if (ms == last_ms_) {
      sequence_ = (sequence_ + 1) & 4095;
      if (sequence_ == 0) {
        while (ms <= last_ms_) ms = realtime_ns() / 1'000'000;
      }
    } else {
      sequence_ = 0;
    }
    last_ms_ = ms;
    return ((ms - 1288834974657) << 22) | sequence_;
  }

 private:
  std::mutex mutex_;
  std::int64_t last_ms_ = 0;
  std::int64_t sequence_ = 0;
};

void BM_ReferenceMutexBurst(benchmark::State& state) {
  MutexSnowflake g;
  burst(state, [&] { return g.next(); });
}
BENCHMARK(BM_ReferenceMutexBurst)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_ClockGettimeRealtime(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(realtime_ns());
}
BENCHMARK(BM_ClockGettimeRealtime);

void BM_RawThroughput(benchmark::State& state) {
  auto g = make(ClockPolicy::kMonotonic, 22);
  for (auto _ : state) benchmark::DoNotOptimize(g->next());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_RawThroughput)->MinTime(1.0);

void BM_LongestCallAtCap(benchmark::State& state) {
  auto g = make(ClockPolicy::kReject, 12);
  unsigned long long longest = 0;
  std::int64_t calls = 0;
  for (auto _ : state) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{2};
    while (std::chrono::steady_clock::now() < deadline) {
      for (int i = 0; i < 4096; ++i) {
        const unsigned long long t0 = __rdtsc();
        benchmark::DoNotOptimize(g->next());
        longest = std::max(longest, __rdtsc() - t0);
      }
      calls += 4096;
    }
  }
  // Convert cycles to microseconds with a 20 ms calibration.
  const auto c0 = __rdtsc();
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < milliseconds{20}) {
  }
  const double cycles_per_us =
      static_cast<double>(__rdtsc() - c0) /
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  state.counters["longest_call_us"] = static_cast<double>(longest) / cycles_per_us;
  state.counters["calls"] = static_cast<double>(calls);
}
BENCHMARK(BM_LongestCallAtCap)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_Batch1000(benchmark::State& state) {
  auto g = make(ClockPolicy::kMonotonic, 22);
  std::vector<Id> ids(1000);
  for (auto _ : state) {
    benchmark::DoNotOptimize(g->next(ids).ok());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1000);
}
BENCHMARK(BM_Batch1000)->MinTime(1.0);

Generator* shared_generator = nullptr;

void BM_SharedByThreads(benchmark::State& state) {
  static std::unique_ptr<Generator> owner;
  if (state.thread_index() == 0) {
    owner = make(state.range(0) == 12 ? ClockPolicy::kReject : ClockPolicy::kMonotonic,
                 static_cast<int>(state.range(0)));
    shared_generator = owner.get();
  }
  for (auto _ : state) benchmark::DoNotOptimize(shared_generator->next());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_SharedByThreads)->Arg(12)->Arg(22)->Threads(2)->MinTime(2.0)->UseRealTime();

std::unique_ptr<OpaqueIds> bench_opaque_ids() {
  return std::move(*OpaqueIds::create("benchmark key, sixteen bytes or more"));
}

void BM_OpaqueOne(benchmark::State& state) {
  auto g = make(ClockPolicy::kMonotonic, 22);
  auto opaque = bench_opaque_ids();
  for (auto _ : state) benchmark::DoNotOptimize(opaque->to_opaque(*g->next()));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_OpaqueOne)->MinTime(1.0);

void BM_OpaqueBatch1000(benchmark::State& state) {
  auto g = make(ClockPolicy::kMonotonic, 22);
  auto opaque = bench_opaque_ids();
  std::vector<Id> ids(1000);
  for (auto _ : state) {
    benchmark::DoNotOptimize(g->next(ids).ok());
    benchmark::DoNotOptimize(
        opaque->permute(std::span(reinterpret_cast<std::uint64_t*>(ids.data()), ids.size())).ok());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1000);
}
BENCHMARK(BM_OpaqueBatch1000)->MinTime(1.0);

void BM_EncodeBase58(benchmark::State& state) {
  auto g = make(ClockPolicy::kMonotonic, 22);
  char text[kMaxEncodedIdLength];
  for (auto _ : state) {
    benchmark::DoNotOptimize(encode_id(*g->next(), IdEncoding::kBase58, text));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_EncodeBase58)->MinTime(1.0);

}  // namespace
}  // namespace snowid

BENCHMARK_MAIN();
