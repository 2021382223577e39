// How snowidd shares its open-file limit between its listeners, so that no
// one listener's clients can take the descriptors the others, the state
// file, the audit log and the stores need.
//
// At start the soft limit is raised to the hard one; then, beside the
// descriptors open now and kSpareDescriptors kept free (state file writes,
// the segment store, etcd, gRPC's own), each listener gets a connection
// limit: its configured one (max_connections for HTTP, grpc_max_connections
// for gRPC, …), or, if they do not all fit, a share of what does in
// proportion to the configured limits (at least one each), logged.
//
// The limit can change while snowidd runs (prlimit on the live process):
// main() re-reads it every kDescriptorReplanPeriod and gives the listeners
// their new shares (Listener::set_connection_limit), so that a lowered
// limit leaves the spare descriptors free for the state file, the audit log
// and the probes, whatever idle connections a client opens. Connections
// already open beyond a new share stay until they close.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "service_config.h"

namespace snowid::server {

// Entries of /proc/self/fd: the descriptors open in this process, the one
// reading the directory included; 0 if /proc cannot be read.
std::uint64_t open_descriptors();

inline constexpr std::chrono::seconds kDescriptorReplanPeriod{1};

struct DescriptorBudget {
  std::uint64_t limit = 0;   // the soft open-file limit in force
  std::uint64_t in_use = 0;  // descriptors open before the listeners opened
  // What each listener asked for (its configured limit), by protocol.
  std::vector<std::pair<std::string, std::int64_t>> wanted;
  // Open connections each listener may hold, by protocol ("http", …).
  std::vector<std::pair<std::string, std::int64_t>> connections;
  std::string describe() const;  // for the log
  bool reduced = false;          // the configured limits did not fit

  // The share of `protocol`; 1 for a protocol not planned for.
  std::int64_t connections_for(std::string_view protocol) const;
};

// Raises the soft open-file limit to the hard one and divides it between
// the listeners, each wanting its configured connection limit (by protocol).
DescriptorBudget plan_descriptors(const std::vector<std::pair<std::string, std::int64_t>>& wanted);

// Re-reads the open-file limit (raising the soft limit to the hard one, as
// at start); if it differs from current.limit, the same listeners' shares
// of it beside the same descriptors in use, else nullopt.
std::optional<DescriptorBudget> replan_descriptors(const DescriptorBudget& current);

}  // namespace snowid::server
