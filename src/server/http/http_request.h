// An HTTP request as snowidd's router reads it: views into the parser's
// buffer (http_request_parser.h), valid until the next request is read.
#pragma once

#include <string_view>

namespace snowid::server {

struct HttpRequest {
  std::string_view method;
  std::string_view target;
  std::string_view accept;
  std::string_view authorization;
  std::string_view agent_header;  // X-Snowid-Agent
  std::string_view body;          // empty for a request without one
};

}  // namespace snowid::server
