// snowidd's HTTP API as a pure function from request to response, separate
// from the transport so that it can be tested and fuzzed without sockets.
//
//   GET /v1/id                  {"id":"…"}
//   GET /v1/ids?count=N         {"ids":["…",…]}, 1 <= N <= max_batch
//   GET /v1/decode/{id}         the CLI's decode JSON
//   GET /v1/info                version, layout, node, policy, high-water mark, …
//   GET /api/snowflake/get/{key}  the bare ID as text (Meituan Leaf compatible)
//   GET /healthz, /readyz, /metrics
// IDs are JSON strings. `Accept: text/plain` or `?format=text` gives bare IDs,
// one per line. Errors: {"error":"…"} with 400/401/404/405/503.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics.h"
#include "service.h"

namespace snowid::server {

struct HttpRequest {
  std::string_view method;
  std::string_view target;
  std::string_view accept;
  std::string_view authorization;
  std::string_view agent_header;  // X-Snowid-Agent
};

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  Route route = Route::kOther;
  std::vector<std::pair<std::string, std::string>> headers;
};

HttpResponse handle_http(IdService& service, const HttpRequest& request);

// {"error":"…"} with the given status.
HttpResponse error_response(unsigned status, std::string_view message);

}  // namespace snowid::server
