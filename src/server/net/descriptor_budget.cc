#include "descriptor_budget.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace snowid::server {
namespace {

// Kept free for what opens descriptors while serving: state file writes, the
// segment store, etcd, gRPC's own threads and pipes.
constexpr std::uint64_t kSpareDescriptors = 64;

}  // namespace

std::uint64_t open_descriptors() {
  std::error_code ec;
  std::uint64_t count = 0;
  for (std::filesystem::directory_iterator fd("/proc/self/fd", ec), end; !ec && fd != end;
       fd.increment(ec)) {
    ++count;
  }
  return count;
}

std::string DescriptorBudget::describe() const {
  std::string shares;
  for (const auto& [protocol, share] : connections) {
    shares += fmt::format(", {} up to {} connections", protocol, share);
  }
  return fmt::format("open-file limit {}, {} in use, {} kept spare{}", limit, in_use,
                     kSpareDescriptors, shares);
}

std::int64_t DescriptorBudget::connections_for(std::string_view protocol) const {
  for (const auto& [name, share] : connections) {
    if (name == protocol) return share;
  }
  return 1;
}

namespace {

// The soft open-file limit, raised to the hard one first if it is lower;
// UINT64_MAX for no limit.
std::uint64_t raised_open_file_limit() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return UINT64_MAX;
  if (files.rlim_cur < files.rlim_max) {
    const rlim_t soft = files.rlim_cur;
    files.rlim_cur = files.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &files) != 0) {
      spdlog::warn("cannot raise the open-file limit to {}: {}", files.rlim_max,
                   std::strerror(errno));
      files.rlim_cur = soft;
    }
  }
  return files.rlim_cur == RLIM_INFINITY ? UINT64_MAX : files.rlim_cur;
}

// Divides `budget.limit` between `budget.wanted` beside budget.in_use and
// the spare descriptors.
void divide(DescriptorBudget& budget) {
  budget.connections = budget.wanted;
  budget.reduced = false;
  if (budget.limit == UINT64_MAX) return;
  const std::uint64_t reserved = budget.in_use + kSpareDescriptors;
  const std::uint64_t room =
      budget.limit > reserved ? budget.limit - reserved : budget.wanted.size();
  std::uint64_t total = 0;
  for (const auto& share : budget.wanted) total += static_cast<std::uint64_t>(share.second);
  if (total <= room) return;
  budget.reduced = true;
  for (auto& share : budget.connections) {
    // room * share / total without overflow: both factors are below 2^32.
    const auto part = static_cast<long double>(room) * static_cast<long double>(share.second) /
                      static_cast<long double>(total);
    share.second = std::max<std::int64_t>(1, static_cast<std::int64_t>(part));
  }
}

}  // namespace

DescriptorBudget plan_descriptors(const std::vector<std::pair<std::string, std::int64_t>>& wanted) {
  DescriptorBudget budget;
  budget.limit = raised_open_file_limit();
  budget.wanted = wanted;
  budget.in_use = open_descriptors();
  divide(budget);
  return budget;
}

std::optional<DescriptorBudget> replan_descriptors(const DescriptorBudget& current) {
  const std::uint64_t limit = raised_open_file_limit();
  if (limit == current.limit) return std::nullopt;
  DescriptorBudget budget = current;
  budget.limit = limit;
  divide(budget);
  return budget;
}

}  // namespace snowid::server
