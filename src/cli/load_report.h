// What a `snowid bench` load run measured, whatever protocol it spoke, and
// how the CLI prints it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace snowid::cli {

struct LoadReport {
  std::uint64_t calls_ok = 0;
  std::map<std::string, std::uint64_t> failures;  // failure kind -> calls
  std::uint64_t ids = 0;
  std::chrono::duration<double> elapsed{0};
  std::chrono::nanoseconds p50{0}, p90{0}, p99{0}, p999{0}, max{0};
  std::uint64_t duplicates = 0;  // only when IDs were verified
};

// Sets the report's percentiles from every call's latency (sorted here).
void set_latencies(LoadReport& report, std::vector<std::int64_t>& latencies_ns);

// Counts the IDs received more than once (sorts `ids`).
std::uint64_t count_duplicates(std::vector<std::uint64_t>& ids);

// The lines after the header: calls, IDs, latency, failures, duplicates.
std::string format_load(const LoadReport& report, bool verified);

}  // namespace snowid::cli
