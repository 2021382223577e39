// snowidd's gRPC listener options and their rows in the option table (TLS
// and timeouts are the HTTP listener's, http_options.h).
#pragma once

#include <optional>

#include "endpoint.h"
#include "option_rows.h"

namespace snowid::server {

struct GrpcOptions {
  // nullopt: the listener is off (grpc = "off"); nothing listens for gRPC.
  std::optional<Endpoint> endpoint = Endpoint{"127.0.0.1", 9090};
  // Open gRPC connections at most (plain text; see descriptor_budget.h).
  int max_connections = 1000;
};

// Rows in table order: `grpc`; later grpc_max_connections, which applies
// only while the listener is on.
OptionRows<GrpcOptions> grpc_endpoint_rows();
OptionRows<GrpcOptions> grpc_connection_rows();

// Ok unless the listener is on with an unusable connection limit.
Status check_grpc_options(const GrpcOptions& options);

}  // namespace snowid::server
