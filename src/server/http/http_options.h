// snowidd's HTTP listener options and their rows in the option table. The
// I/O threads, timeouts and TLS that HTTP shares with the other listeners
// are NetOptions (config/net_options.h).
#pragma once

#include <cstdint>

#include "endpoint.h"
#include "option_rows.h"
#include "snowid/error.h"

namespace snowid::server {

struct HttpOptions {
  Endpoint endpoint{"127.0.0.1", 8080};
  int max_connections = 10000;
  std::uint32_t max_header_bytes = 8192;
  std::uint32_t max_body_bytes = 4096;
};

// Rows in table order: `http`; later max_connections; later
// max_header_bytes and max_body_bytes.
OptionRows<HttpOptions> http_endpoint_rows();
OptionRows<HttpOptions> http_connection_rows();
OptionRows<HttpOptions> http_request_rows();

// The HTTP listener's own checks (the listener table asks them).
Status check_http_options(const HttpOptions& options);

}  // namespace snowid::server
