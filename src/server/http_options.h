// snowidd's HTTP listener options and their rows in the option table. TLS
// (tls_cert, tls_key) and the read and idle timeouts hold for the gRPC
// listener too.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "endpoint.h"
#include "option_rows.h"

namespace snowid::server {

struct HttpOptions {
  Endpoint endpoint{"127.0.0.1", 8080};
  int io_threads = 2;
  int max_connections = 10000;
  std::uint32_t max_header_bytes = 8192;
  std::uint32_t max_body_bytes = 4096;
  std::chrono::milliseconds read_timeout{10000};
  std::chrono::milliseconds idle_timeout{60000};
  std::string tls_cert;
  std::string tls_key;
};

// Rows in table order: `http`; later io_threads and max_connections; later
// max_header_bytes ... tls_key.
OptionRows<HttpOptions> http_endpoint_rows();
OptionRows<HttpOptions> http_thread_rows();
OptionRows<HttpOptions> http_request_rows();

}  // namespace snowid::server
