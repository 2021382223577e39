#include "grpc_options.h"

#include "http_options.h"

namespace snowid::server {

OptionRows<GrpcOptions> grpc_endpoint_rows() {
  return {endpoint_row("grpc", &GrpcOptions::endpoint)};
}

OptionRows<GrpcOptions> grpc_connection_rows() {
  return {
      {"grpc_max_connections",
       option::number(&GrpcOptions::max_connections, 1'000'000),
       option::shown(&GrpcOptions::max_connections),
       {}},
  };
}

}  // namespace snowid::server
