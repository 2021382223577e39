#include "http_options.h"

#include "endpoint_rows.h"

namespace snowid::server {

using option::shown;

OptionRows<HttpOptions> http_endpoint_rows() {
  return {endpoint_row("http", &HttpOptions::endpoint)};
}

OptionRows<HttpOptions> http_thread_rows() {
  using H = HttpOptions;
  return {
      {"io_threads", option::number(&H::io_threads, 256), shown(&H::io_threads), {}},
      {"max_connections",
       option::number(&H::max_connections, 1'000'000),
       shown(&H::max_connections),
       {}},
  };
}

OptionRows<HttpOptions> http_request_rows() {
  using H = HttpOptions;
  return {
      {"max_header_bytes",
       option::number(&H::max_header_bytes, std::uint32_t{1 << 20}),
       shown(&H::max_header_bytes),
       {}},
      {"max_body_bytes",
       option::number(&H::max_body_bytes, std::uint32_t{1 << 20}),
       shown(&H::max_body_bytes),
       {}},
      {"read_timeout_ms", option::duration(&H::read_timeout), shown(&H::read_timeout), {}},
      {"idle_timeout_ms", option::duration(&H::idle_timeout), shown(&H::idle_timeout), {}},
      {"tls_cert", option::text(&H::tls_cert), shown(&H::tls_cert), {}},
      {"tls_key", option::text(&H::tls_key), shown(&H::tls_key), {}},
  };
}

}  // namespace snowid::server
