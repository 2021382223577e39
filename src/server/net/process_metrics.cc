#include "process_metrics.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

#include "descriptor_budget.h"
#include "snowid_version.h"

namespace snowid::server {
namespace {

double seconds_of(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

// Field `index` (1-based, as in proc(5)) of /proc/self/stat. The second
// field, the command name in parentheses, may hold spaces: counting starts
// after its closing parenthesis.
std::optional<std::uint64_t> self_stat_field(int index) {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const auto close = line.rfind(')');
  if (close == std::string::npos || index < 3) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= index; ++i) {
    if (!(rest >> field)) return std::nullopt;
  }
  try {
    return std::stoull(field);
  } catch (...) {
    return std::nullopt;
  }
}

// The system's boot time (seconds since the Unix epoch), /proc/stat's btime.
std::optional<std::uint64_t> boot_time() {
  std::ifstream in("/proc/stat");
  std::string key;
  std::uint64_t value = 0;
  while (in >> key) {
    if (key == "btime" && in >> value) return value;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

void gauge(std::string& out, std::string_view name, std::string_view help, double value,
           std::string_view type = "gauge") {
  out +=
      fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {:.15g}\n", name, help, name, type, name, value);
}

}  // namespace

void ProcessMetrics::render(std::string& out) const {
  out += "# HELP snowid_build_info The running build: its version and compiler.\n";
  out += "# TYPE snowid_build_info gauge\n";
  out += fmt::format(
      "snowid_build_info{{version=\"{}\",compiler=\"{}\"}} 1\n", kVersion,
#if defined(__clang__)
      fmt::format("clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__)
#else
      fmt::format("gcc {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__)
#endif
  );

  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) == 0) {
    gauge(out, "process_cpu_seconds_total", "User and system CPU time spent, in seconds.",
          seconds_of(usage.ru_utime) + seconds_of(usage.ru_stime), "counter");
  }
  const long page = ::sysconf(_SC_PAGESIZE);
  if (const auto pages = self_stat_field(24); pages && page > 0) {
    gauge(out, "process_resident_memory_bytes", "Resident memory size, in bytes.",
          static_cast<double>(*pages) * static_cast<double>(page));
  }
  if (const auto bytes = self_stat_field(23)) {
    gauge(out, "process_virtual_memory_bytes", "Virtual memory size, in bytes.",
          static_cast<double>(*bytes));
  }
  // The count includes the descriptor that read it.
  if (const std::uint64_t fds = open_descriptors(); fds > 0) {
    gauge(out, "process_open_fds", "Open file descriptors.", static_cast<double>(fds - 1));
  }
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    gauge(out, "process_max_fds", "The open-file limit (soft).",
          static_cast<double>(limit.rlim_cur));
  }
  const long ticks = ::sysconf(_SC_CLK_TCK);
  const auto started = self_stat_field(22);  // clock ticks after boot
  const auto booted = boot_time();
  if (started && booted && ticks > 0) {
    gauge(
        out, "process_start_time_seconds",
        "Start time of the process since the Unix epoch, in seconds.",
        static_cast<double>(*booted) + static_cast<double>(*started) / static_cast<double>(ticks));
  }
}

}  // namespace snowid::server
