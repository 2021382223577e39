#include "http_request_parser.h"

#include <string_view>

namespace snowid::server {
namespace {

namespace http = boost::beast::http;

std::string_view std_view(boost::beast::string_view s) { return {s.data(), s.size()}; }

}  // namespace

void configure_request_parser(RequestParser& parser, const ServerConfig& config) {
  parser.eager(true);
  parser.header_limit(config.max_header_bytes);
  parser.body_limit(config.max_body_bytes);
}

std::size_t max_buffered_request_bytes(const ServerConfig& config) {
  return static_cast<std::size_t>(config.max_header_bytes) + config.max_body_bytes +
         2 * kReadChunkBytes;
}

HttpRequest request_view(const RequestParser::value_type& request) {
  return HttpRequest{std_view(request.method_string()), std_view(request.target()),
                     std_view(request[http::field::accept]),
                     std_view(request[http::field::authorization]),
                     std_view(request["X-Snowid-Agent"])};
}

}  // namespace snowid::server
