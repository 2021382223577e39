#include "grpc_options.h"

#include "endpoint_rows.h"

namespace snowid::server {

OptionRows<GrpcOptions> grpc_endpoint_rows() {
  return {optional_endpoint_row("grpc", &GrpcOptions::endpoint)};
}

OptionRows<GrpcOptions> grpc_connection_rows() {
  return {
      {"grpc_max_connections", option::number(&GrpcOptions::max_connections, 1'000'000),
       option::shown(&GrpcOptions::max_connections),
       [](const GrpcOptions& o) { return o.endpoint ? std::string() : "grpc = \"ADDR:PORT\""; }},
  };
}

Status check_grpc_options(const GrpcOptions& options) {
  if (options.endpoint && options.max_connections < 1) {
    return invalid_argument("grpc_max_connections must be at least 1");
  }
  return {};
}

}  // namespace snowid::server
