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

std::uint64_t open_descriptors() {
  std::error_code ec;
  std::uint64_t count = 0;
  for (std::filesystem::directory_iterator fd("/proc/self/fd", ec), end; !ec && fd != end;
       fd.increment(ec)) {
    ++count;
  }
  return count;
}

}  // namespace

std::string DescriptorBudget::describe() const {
  return fmt::format(
      "open-file limit {}, {} in use, {} kept spare: http up to {} connections, "
      "grpc up to {}",
      limit, in_use, kSpareDescriptors, http_connections, grpc_connections);
}

DescriptorBudget plan_descriptors(const ServerConfig& config) {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &files) != 0) {
      spdlog::warn("cannot raise the open-file limit to {}: {}", files.rlim_max,
                   std::strerror(errno));
      (void)::getrlimit(RLIMIT_NOFILE, &files);
    }
  }
  DescriptorBudget budget;
  budget.http_connections = config.http.max_connections;
  budget.grpc_connections = config.grpc.max_connections;
  budget.in_use = open_descriptors();
  if (files.rlim_cur == RLIM_INFINITY) {
    budget.limit = UINT64_MAX;
    return budget;
  }
  budget.limit = files.rlim_cur;
  const std::uint64_t reserved = budget.in_use + kSpareDescriptors;
  const std::uint64_t room = budget.limit > reserved ? budget.limit - reserved : 2;
  const auto wanted = static_cast<std::uint64_t>(config.http.max_connections) +
                      static_cast<std::uint64_t>(config.grpc.max_connections);
  if (wanted <= room) return budget;
  budget.reduced = true;
  const std::uint64_t grpc_share = std::max<std::uint64_t>(1, room / 4);
  budget.grpc_connections = static_cast<std::int64_t>(
      std::min<std::uint64_t>(grpc_share, static_cast<std::uint64_t>(config.grpc.max_connections)));
  budget.http_connections = static_cast<std::int64_t>(std::max<std::uint64_t>(
      1, std::min<std::uint64_t>(room - static_cast<std::uint64_t>(budget.grpc_connections),
                                 static_cast<std::uint64_t>(config.http.max_connections))));
  return budget;
}

}  // namespace snowid::server
