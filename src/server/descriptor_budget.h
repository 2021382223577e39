// How snowidd shares its open-file limit between its listeners, so that no
// one listener's clients can take the descriptors the others, the state
// file, the audit log and the stores need.
//
// At start the soft limit is raised to the hard one; then, beside the
// descriptors open now and kSpareDescriptors kept free (state file writes,
// the segment store, etcd, gRPC's own), each listener gets a connection
// limit: max_connections for HTTP and grpc_max_connections for gRPC, or, if
// both do not fit, shares of what does (HTTP three quarters), logged.
#pragma once

#include <cstdint>
#include <string>

#include "config.h"

namespace snowid::server {

struct DescriptorBudget {
  std::uint64_t limit = 0;   // the soft open-file limit in force
  std::uint64_t in_use = 0;  // descriptors open when it was made
  std::int64_t http_connections = 0;
  std::int64_t grpc_connections = 0;
  std::string describe() const;  // for the log
  bool reduced = false;          // the configured limits did not fit
};

// Raises the soft open-file limit to the hard one and divides it.
DescriptorBudget plan_descriptors(const ServerConfig& config);

}  // namespace snowid::server
