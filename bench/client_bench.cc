// snowid::Client benchmarks (Google Benchmark) against a running snowidd:
// bench/client.sh starts one and records the figures in docs/performance.md.
//
//   BM_ClientNext        next() from the client's buffer, refilled by NextIds
//                        in the background: IDs/s and the p50/p99/max of one call
//   BM_GrpcNextId        the same thread calling NextId itself, one round trip per ID
//   BM_GeneratorNext     an in-process Generator::next(), no network at all
//
// The snowidd's gRPC endpoint comes from SNOWID_BENCH_GRPC (HOST:PORT). Its
// layout should have room for the rate (bench/client.sh: 16 sequence bits,
// 65.5 M IDs/s), as the generator here has.
// Latencies are timed with the TSC around each call, converted to ns with
// the run's own wall clock; the two TSC reads (~10 ns) are included.
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>
#include <x86intrin.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "grpc_runtime.h"
#include "snowid/client.h"
#include "snowid/generator.h"
#include "snowid/v1/snowid.grpc.pb.h"

namespace snowid {
namespace {

std::string target;
std::unique_ptr<Client> client;

// Cycles per call: 1-cycle buckets below 2^16 cycles, 256-cycle buckets
// above up to 2^24 (about 6 ms at 2.6 GHz), one bucket beyond; quantiles
// are a bucket's lower bound.
class Histogram {
 public:
  void add(std::uint64_t cycles) {
    ++counts_[bucket(cycles)];
    max_ = std::max(max_, cycles);
  }
  std::uint64_t quantile(double q) const {
    std::uint64_t total = 0;
    for (const auto c : counts_) total += c;
    const auto wanted = static_cast<std::uint64_t>(q * static_cast<double>(total));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen > wanted) return i < kFine ? i : (i - kFine) * 256;
    }
    return max_;
  }
  std::uint64_t max() const { return max_; }

 private:
  static constexpr std::size_t kFine = 1 << 16;
  static constexpr std::size_t kCoarse = 1 << 16;
  static std::size_t bucket(std::uint64_t cycles) {
    if (cycles < kFine) return cycles;
    return kFine + std::min<std::uint64_t>(cycles / 256, kCoarse - 1);
  }
  std::vector<std::uint64_t> counts_ = std::vector<std::uint64_t>(kFine + kCoarse);
  std::uint64_t max_ = 0;
};

// Runs `call` once per iteration, timing each with the TSC, and reports
// IDs/s and the latency quantiles in ns.
template <typename Call>
void timed(benchmark::State& state, Call call) {
  Histogram histogram;
  const auto wall_start = std::chrono::steady_clock::now();
  const std::uint64_t tsc_start = __rdtsc();
  for (auto _ : state) {
    const std::uint64_t before = __rdtsc();
    call();
    histogram.add(__rdtsc() - before);
  }
  const double ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::steady_clock::now() - wall_start)
                                            .count());
  const double ns_per_cycle = ns / static_cast<double>(__rdtsc() - tsc_start);
  const auto to_ns = [&](std::uint64_t cycles) {
    return static_cast<double>(cycles) * ns_per_cycle;
  };
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["p50_ns"] =
      benchmark::Counter(to_ns(histogram.quantile(0.50)), benchmark::Counter::kAvgThreads);
  state.counters["p99_ns"] =
      benchmark::Counter(to_ns(histogram.quantile(0.99)), benchmark::Counter::kAvgThreads);
  state.counters["max_us"] =
      benchmark::Counter(to_ns(histogram.max()) / 1000, benchmark::Counter::kAvgThreads);
}

void BM_ClientNext(benchmark::State& state) {
  std::int64_t errors = 0;
  timed(state, [&] {
    auto id = client->next();
    if (!id.ok()) ++errors;
    benchmark::DoNotOptimize(id);
  });
  if (errors != 0) state.SkipWithError("next() failed");
}
BENCHMARK(BM_ClientNext)->MinTime(3.0)->Threads(1)->Threads(2)->UseRealTime();

void BM_GrpcNextId(benchmark::State& state) {
  auto stub =
      v1::IdService::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  bool failed = false;
  timed(state, [&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{5});
    v1::NextIdResponse response;
    failed |= !stub->NextId(&context, v1::NextIdRequest{}, &response).ok();
    benchmark::DoNotOptimize(response);
  });
  if (failed) state.SkipWithError("NextId failed");
}
BENCHMARK(BM_GrpcNextId)->MinTime(3.0)->UseRealTime();

void BM_GeneratorNext(benchmark::State& state) {
  GeneratorOptions options;
  options.layout.datacenter_bits = 0;
  options.layout.worker_bits = 6;
  options.layout.sequence_bits = 16;
  auto generator = std::move(*Generator::create(options));
  timed(state, [&] { benchmark::DoNotOptimize(generator->next()); });
}
BENCHMARK(BM_GeneratorNext)->MinTime(3.0)->UseRealTime();

}  // namespace
}  // namespace snowid

int main(int argc, char** argv) {
  // As snowidd and `snowid bench grpc` do: gRPC's locks without absl's
  // lock-order graph (src/common/grpc_runtime.h).
  snowid::disable_grpc_lock_order_checks();
  const char* target = std::getenv("SNOWID_BENCH_GRPC");
  if (target == nullptr || *target == '\0') {
    std::fprintf(stderr, "client_bench: set SNOWID_BENCH_GRPC=HOST:PORT of a snowidd\n");
    return 2;
  }
  snowid::target = target;
  snowid::ClientOptions options;
  options.endpoints = {snowid::target};
  options.max_batch = 1'000'000;
  options.initial_batch = 10'000;
  options.refill_period = std::chrono::milliseconds{20};
  auto client = snowid::Client::open(options);
  if (!client.ok()) {
    std::fprintf(stderr, "client_bench: %s\n", client.error().message.c_str());
    return 2;
  }
  snowid::client = std::move(*client);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  snowid::client.reset();
  benchmark::Shutdown();
  return 0;
}
