#include "load_report.h"

#include <fmt/format.h>

#include <algorithm>

namespace snowid::cli {

namespace {

std::chrono::nanoseconds percentile(const std::vector<std::int64_t>& sorted, double fraction) {
  if (sorted.empty()) return std::chrono::nanoseconds{0};
  const auto index = static_cast<std::size_t>(fraction * static_cast<double>(sorted.size() - 1));
  return std::chrono::nanoseconds{sorted[index]};
}

}  // namespace

void set_latencies(LoadReport& report, std::vector<std::int64_t>& latencies_ns) {
  std::sort(latencies_ns.begin(), latencies_ns.end());
  report.p50 = percentile(latencies_ns, 0.50);
  report.p90 = percentile(latencies_ns, 0.90);
  report.p99 = percentile(latencies_ns, 0.99);
  report.p999 = percentile(latencies_ns, 0.999);
  report.max = percentile(latencies_ns, 1.0);
}

std::uint64_t count_duplicates(std::vector<std::uint64_t>& ids) {
  std::sort(ids.begin(), ids.end());
  std::uint64_t duplicates = 0;
  for (std::size_t i = 1; i < ids.size(); ++i) {
    if (ids[i] == ids[i - 1]) ++duplicates;
  }
  return duplicates;
}

std::string format_load(const LoadReport& report, bool verified) {
  const double seconds = report.elapsed.count();
  auto ms = [](std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e6; };
  std::uint64_t failed = 0;
  for (const auto& [kind, count] : report.failures) failed += count;
  std::string text = fmt::format("calls     {} ok, {} failed, {:.0f} calls/s\n", report.calls_ok,
                                 failed, static_cast<double>(report.calls_ok) / seconds);
  text += fmt::format("IDs       {} received, {:.0f} IDs/s\n", report.ids,
                      static_cast<double>(report.ids) / seconds);
  text += fmt::format(
      "latency   p50 {:.3f} ms, p90 {:.3f} ms, p99 {:.3f} ms, p99.9 {:.3f} ms, max {:.3f} ms\n",
      ms(report.p50), ms(report.p90), ms(report.p99), ms(report.p999), ms(report.max));
  for (const auto& [kind, count] : report.failures) {
    text += fmt::format("failed    {}: {}\n", kind, count);
  }
  if (verified) text += fmt::format("verify    {} duplicate IDs\n", report.duplicates);
  return text;
}

}  // namespace snowid::cli
