#include "http_options.h"

#include "endpoint_rows.h"

namespace snowid::server {

using option::shown;

OptionRows<HttpOptions> http_endpoint_rows() {
  return {endpoint_row("http", &HttpOptions::endpoint)};
}

OptionRows<HttpOptions> http_connection_rows() {
  using H = HttpOptions;
  return {{"max_connections",
           option::number(&H::max_connections, 1'000'000),
           shown(&H::max_connections),
           {}}};
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
  };
}

Status check_http_options(const HttpOptions& options) {
  if (options.max_connections < 1) return invalid_argument("max_connections must be at least 1");
  return {};
}

}  // namespace snowid::server
