#include "http_routes.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <span>

#include "http_target.h"
#include "id_json.h"
#include "snowid/decode.h"

namespace snowid::server {
namespace {

bool wants_text(const HttpRequest& request, const Target& target) {
  if (auto it = target.query.find("format"); it != target.query.end()) return it->second == "text";
  return request.accept.find("text/plain") != std::string_view::npos &&
         request.accept.find("application/json") == std::string_view::npos;
}

void set_json(HttpResponse& response, const nlohmann::json& body) {
  // Replaces invalid UTF-8 (say, from a request path echoed in a message)
  // rather than throwing.
  response.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  response.body += '\n';
}

void set_text_type(HttpResponse& response) { response.content_type = "text/plain; charset=utf-8"; }

// 503 with Retry-After: the request may succeed if repeated in a moment.
void set_unavailable(HttpResponse& response, std::string_view message) {
  set_error(response, 503, message);
  response.headers.emplace_back("Retry-After", "1");
}

// The generator's refusal as an HTTP error: 503 while the clock or the state
// file keeps it from issuing, 500 otherwise.
void set_refusal(HttpResponse& response, const Error& error) {
  if (!is_transient(error)) return set_error(response, 500, error.message);
  set_unavailable(response, error.message);
}

void append_decimal(std::string& out, Id id) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, id);
  (void)ec;
  out.append(digits, static_cast<std::size_t>(end - digits));
}

enum class IdFormat { kJson, kTextLines, kLeafText };

// One number as {"id":"…"}, a text line, or bare (Leaf), built without a
// JSON document: the hot path of /v1/id.
void write_number(std::int64_t number, IdFormat format, HttpResponse& response) {
  if (format == IdFormat::kJson) {
    response.body += "{\"id\":\"";
    append_decimal(response.body, number);
    response.body += "\"}\n";
    return;
  }
  set_text_type(response);
  append_decimal(response.body, number);
  if (format == IdFormat::kTextLines) response.body += '\n';
}

// The query parameters each route takes; any other is refused, and so is a
// format other than json or text.
Status check_parameters(Route route, const Target& target) {
  static constexpr std::array<std::string_view, 3> kAll{"count", "format", "agent"};
  std::span<const std::string_view> known;  // a tail of kAll
  switch (route) {
    case Route::kIds:
    case Route::kSegment:
      known = std::span(kAll);
      break;
    case Route::kId:
      known = std::span(kAll).subspan(1);
      break;
    case Route::kLeafSnowflake:
    case Route::kLeafSegment:
      known = std::span(kAll).subspan(2);
      break;
    default:
      break;
  }
  for (const auto& [name, value] : target.query) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return invalid_argument(fmt::format("unknown query parameter '{}' for {}",
                                          std::string_view(name).substr(0, 40), route_name(route)));
    }
    if (name == "format" && value != "json" && value != "text") {
      return invalid_argument(
          fmt::format("format '{}' is not json or text", std::string_view(value).substr(0, 40)));
    }
  }
  return {};
}

// A HEAD on a route that issues numbers: the GET's header fields, nothing issued.
void answer_head(IdFormat format, HttpResponse& response) {
  if (format != IdFormat::kJson) set_text_type(response);
  response.length_unknown = true;
}

void issue_one(IdService& service, std::string_view agent, IdFormat format,
               HttpResponse& response) {
  auto id = service.issue_one(agent);
  if (!id.ok()) return set_refusal(response, id.error());
  write_number(*id, format, response);
}

// Numbers as {"ids":["…",…]}, or one per line for kTextLines.
void write_numbers(const std::vector<std::int64_t>& numbers, IdFormat format,
                   HttpResponse& response) {
  std::string& body = response.body;
  body.reserve(numbers.size() * 22 + 16);
  if (format == IdFormat::kTextLines) {
    set_text_type(response);
    for (std::int64_t number : numbers) {
      append_decimal(body, number);
      body += '\n';
    }
    return;
  }
  body += "{\"ids\":[";
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    if (i > 0) body += ',';
    body += '"';
    append_decimal(body, numbers[i]);
    body += '"';
  }
  body += "]}\n";
}

void issue_many(IdService& service, std::uint32_t count, std::string_view agent, IdFormat format,
                HttpResponse& response) {
  thread_local std::vector<Id> ids;
  ids.clear();
  Status issued = service.issue(count, agent, ids);
  if (!issued.ok()) return set_refusal(response, issued.error());
  write_numbers(ids, format, response);
}

// A segment allocator's refusal: 400 bad tag or count, 404 unknown tag, 503
// (with Retry-After) while the store is down and the tag's buffers are empty.
void set_segment_error(HttpResponse& response, const Error& error) {
  switch (error.code) {
    case ErrorCode::kInvalidArgument: return set_error(response, 400, error.message);
    case ErrorCode::kNotFound: return set_error(response, 404, error.message);
    case ErrorCode::kUnavailable: return set_unavailable(response, error.message);
    default: return set_error(response, 500, error.message);
  }
}

// GET /v1/segment/{tag}[?count=N] and the Leaf route /api/segment/get/{tag}.
void issue_segment(const IdService& service, SegmentAllocator& segments, std::string_view tag,
                   std::optional<std::uint32_t> count, IdFormat format, HttpResponse& response) {
  if (!count) {
    auto number = segments.next(tag);
    if (!number.ok()) {
      return set_segment_error(response, service.segment_error_for_client(tag, number.error()));
    }
    return write_number(*number, format, response);
  }
  thread_local std::vector<std::int64_t> numbers;
  numbers.clear();
  Status issued = segments.next(tag, *count, numbers);
  if (!issued.ok()) {
    return set_segment_error(response, service.segment_error_for_client(tag, issued.error()));
  }
  write_numbers(numbers, format, response);
}

}  // namespace

void HttpResponse::reset() {
  status = 200;
  content_type = "application/json";
  body.clear();
  route = Route::kOther;
  headers.clear();
  head = false;
  length_unknown = false;
}

void set_error(HttpResponse& response, unsigned status, std::string_view message) {
  response.status = status;
  response.content_type = "application/json";
  set_json(response, nlohmann::json{{"error", message}});
}

bool issues_ids(std::string_view target) {
  const std::string_view path = target_path(target);
  return path == "/v1/id" || path == "/v1/ids" || path.starts_with("/api/snowflake/get/");
}

void handle_http(IdService& service, const HttpRequest& request, HttpResponse& response) {
  response.reset();
  const std::string_view path = target_path(request.target);

  std::string_view tail;
  auto under = [&](std::string_view prefix) {
    if (path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix) {
      tail = path.substr(prefix.size());
      return true;
    }
    return false;
  };
  Route& route = response.route;
  if (path == "/v1/id") route = Route::kId;
  else if (path == "/v1/ids") route = Route::kIds;
  else if (under("/v1/decode/")) route = Route::kDecode;
  else if (path == "/v1/info") route = Route::kInfo;
  else if (under("/api/snowflake/get/")) route = Route::kLeafSnowflake;
  else if (path == "/healthz") route = Route::kHealthz;
  else if (path == "/readyz") route = Route::kReadyz;
  else if (path == "/metrics") route = Route::kMetrics;
  else if (under("/v1/segment/")) route = Route::kSegment;
  else if (under("/api/segment/get/")) route = Route::kLeafSegment;
  else if (path == "/readyz/segment") route = Route::kReadyzSegment;

  if (route == Route::kOther) {
    return set_error(response, 404, fmt::format("no route for {}", path.substr(0, 100)));
  }
  response.head = request.method == "HEAD";
  if (request.method != "GET" && !response.head) {
    set_error(response, 405, fmt::format("{} accepts GET and HEAD only", route_name(route)));
    response.headers.emplace_back("Allow", "GET, HEAD");
    return;
  }
  if (route == Route::kHealthz) return set_json(response, nlohmann::json{{"status", "ok"}});
  if (route == Route::kReadyz) {
    // The node's readiness (its claim and generator) alone decides the status; segment mode's is
    // reported beside it (and decides /readyz/segment), so one database
    // being down does not take the whole node out of a load balancer.
    Status ready = service.readiness();
    nlohmann::json body =
        ready.ok() ? nlohmann::json{{"status", "ready"}}
                   : nlohmann::json{{"status", "not ready"}, {"error", ready.error().message}};
    body["segment"] = service.segment_readiness();
    if (!ready.ok()) response.status = 503;
    return set_json(response, body);
  }
  if (route == Route::kReadyzSegment) {
    nlohmann::json body = service.segment_readiness();
    if (!body["enabled"].get<bool>()) return set_error(response, 404, "segment mode is off");
    const bool ready = body["ready"].get<bool>();
    body["status"] = ready ? "ready" : "not ready";
    if (!ready) {
      body["error"] = body["reason"];
      response.status = 503;
    }
    return set_json(response, body);
  }
  if (route == Route::kMetrics) {
    response.body = service.metrics_text();
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return;
  }

  if (!service.authorized(request.authorization)) {
    set_error(response, 401, "a valid bearer token is required");
    response.headers.emplace_back("WWW-Authenticate", "Bearer");
    return;
  }

  // The token first, then the request's parameters: every route from here
  // on takes a query, and accepts its own parameters only. (The probes and
  // /metrics above ignore theirs, whatever it holds: cache busters, repeats.)
  auto parsed = parse_target(request.target);
  if (!parsed.ok()) return set_error(response, 400, parsed.error().message);
  const Target& target = *parsed;
  if (Status known = check_parameters(route, target); !known.ok()) {
    return set_error(response, 400, known.error().message);
  }

  std::string_view agent = request.agent_header;
  if (auto it = target.query.find("agent"); it != target.query.end()) agent = it->second;
  if (!agent.empty() && !valid_agent(agent)) {
    return set_error(response, 400,
                     "agent must match [a-zA-Z][a-zA-Z0-9-]* and be at most 64 characters");
  }

  switch (route) {
    case Route::kId: {
      const IdFormat format = wants_text(request, target) ? IdFormat::kTextLines : IdFormat::kJson;
      if (response.head) return answer_head(format, response);
      return issue_one(service, agent, format, response);
    }
    case Route::kIds: {
      const std::uint32_t max = service.config().max_batch;
      auto count = parse_count(target, max);
      if (!count.ok()) return set_error(response, 400, count.error().message);
      if (!*count) return set_error(response, 400, fmt::format("count is required (1..{})", max));
      const IdFormat format = wants_text(request, target) ? IdFormat::kTextLines : IdFormat::kJson;
      if (response.head) return answer_head(format, response);
      return issue_many(service, **count, agent, format, response);
    }
    case Route::kSegment:
    case Route::kLeafSegment: {
      SegmentAllocator* segments = service.segments();
      if (segments == nullptr) {
        return set_error(response, 404, "segment mode is off (segment_store = \"off\")");
      }
      if (route == Route::kLeafSegment) {
        if (response.head) return answer_head(IdFormat::kLeafText, response);
        return issue_segment(service, *segments, tail, std::nullopt, IdFormat::kLeafText, response);
      }
      auto count = parse_count(target, service.config().max_batch);
      if (!count.ok()) return set_error(response, 400, count.error().message);
      const IdFormat format = wants_text(request, target) ? IdFormat::kTextLines : IdFormat::kJson;
      if (response.head) return answer_head(format, response);
      return issue_segment(service, *segments, tail, *count, format, response);
    }
    case Route::kDecode: {
      auto id = parse_id(tail);
      if (!id.ok()) return set_error(response, 400, id.error().message);
      auto fields = decode(service.layout(), *id);
      if (!fields.ok()) return set_error(response, 400, fields.error().message);
      return set_json(response, decoded_id_json(*id, *fields));
    }
    case Route::kInfo:
      return set_json(response, service.info());
    case Route::kLeafSnowflake: {
      if (tail.size() > 128 || tail.find('/') != std::string_view::npos) {
        return set_error(response, 400, "key must be at most 128 characters without '/'");
      }
      if (response.head) return answer_head(IdFormat::kLeafText, response);
      return issue_one(service, agent, IdFormat::kLeafText, response);
    }
    default:
      return set_error(response, 404, "no such route");
  }
}

}  // namespace snowid::server
