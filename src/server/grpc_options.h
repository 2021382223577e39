// snowidd's gRPC listener options and their rows in the option table (TLS
// and timeouts are the HTTP listener's, http_options.h).
#pragma once

#include "endpoint.h"
#include "option_rows.h"

namespace snowid::server {

struct GrpcOptions {
  Endpoint endpoint{"127.0.0.1", 9090};
  // Open gRPC connections at most (plain text; see descriptor_budget.h).
  int max_connections = 1000;
};

// Rows in table order: `grpc`; later grpc_max_connections.
OptionRows<GrpcOptions> grpc_endpoint_rows();
OptionRows<GrpcOptions> grpc_connection_rows();

}  // namespace snowid::server
