#include "http_routes.h"

#include <fmt/format.h>

#include <charconv>
#include <map>
#include <optional>

#include "id_json.h"
#include "snowid/decode.h"

namespace snowid::server {
namespace {

struct Target {
  std::string_view path;
  std::map<std::string_view, std::string_view> query;
};

// Splits "/path?a=1&b=2". A parameter given twice is an error.
Result<Target> parse_target(std::string_view target) {
  Target out;
  const auto q = target.find('?');
  out.path = target.substr(0, q);
  if (q == std::string_view::npos) return out;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    if (!out.query.emplace(key, value).second) {
      return invalid_argument(fmt::format("query parameter '{}' given twice",
                                          key.substr(0, 40)));
    }
  }
  return out;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

bool wants_text(const HttpRequest& request, const Target& target) {
  if (auto it = target.query.find("format"); it != target.query.end()) return it->second == "text";
  return request.accept.find("text/plain") != std::string_view::npos &&
         request.accept.find("application/json") == std::string_view::npos;
}

HttpResponse json_response(const nlohmann::json& body) {
  HttpResponse r;
  r.body = body.dump();
  r.body += '\n';
  return r;
}

HttpResponse text_response(std::string body) {
  HttpResponse r;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(body);
  return r;
}

// The generator's refusal as an HTTP error: 503 while the clock or the state
// file keeps it from issuing, 500 otherwise.
HttpResponse refusal(const Error& error) {
  const bool transient = is_transient(error);
  HttpResponse r = error_response(transient ? 503 : 500, error.message);
  if (transient) r.headers.emplace_back("Retry-After", "1");
  return r;
}

HttpResponse issue(IdService& service, std::uint32_t count, bool text, std::string_view agent,
                   bool leaf_text) {
  std::vector<Id> ids;
  ids.reserve(count);
  Status issued = service.issue(count, agent, ids);
  if (!issued.ok()) return refusal(issued.error());
  char digits[24];
  auto decimal = [&digits](Id id) {
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, id);
    (void)ec;
    return std::string_view(digits, static_cast<std::size_t>(end - digits));
  };
  if (text) {
    std::string body;
    body.reserve(ids.size() * 20);
    for (Id id : ids) {
      body += decimal(id);
      if (!leaf_text) body += '\n';
    }
    return text_response(std::move(body));
  }
  if (count == 1) return json_response(nlohmann::json{{"id", decimal(ids[0])}});
  nlohmann::json array = nlohmann::json::array();
  for (Id id : ids) array.emplace_back(decimal(id));
  return json_response(nlohmann::json{{"ids", std::move(array)}});
}

}  // namespace

HttpResponse error_response(unsigned status, std::string_view message) {
  HttpResponse r;
  r.status = status;
  r.body = nlohmann::json{{"error", message}}.dump() + "\n";
  return r;
}

HttpResponse handle_http(IdService& service, const HttpRequest& request) {
  auto parsed = parse_target(request.target);
  if (!parsed.ok()) return error_response(400, parsed.error().message);
  const Target& target = *parsed;
  const std::string_view path = target.path;

  Route route = Route::kOther;
  std::string_view tail;
  auto under = [&](std::string_view prefix) {
    if (path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix) {
      tail = path.substr(prefix.size());
      return true;
    }
    return false;
  };
  if (path == "/v1/id") route = Route::kId;
  else if (path == "/v1/ids") route = Route::kIds;
  else if (under("/v1/decode/")) route = Route::kDecode;
  else if (path == "/v1/info") route = Route::kInfo;
  else if (under("/api/snowflake/get/")) route = Route::kLeafSnowflake;
  else if (path == "/healthz") route = Route::kHealthz;
  else if (path == "/readyz") route = Route::kReadyz;
  else if (path == "/metrics") route = Route::kMetrics;

  auto finish = [route](HttpResponse r) {
    r.route = route;
    return r;
  };
  if (route == Route::kOther) {
    return finish(error_response(404, fmt::format("no route for {}", path.substr(0, 100))));
  }
  if (request.method != "GET") {
    HttpResponse r = error_response(405, fmt::format("{} accepts GET only", route_name(route)));
    r.headers.emplace_back("Allow", "GET");
    return finish(r);
  }
  if (route == Route::kHealthz) return finish(json_response(nlohmann::json{{"status", "ok"}}));
  if (route == Route::kReadyz) {
    Status ready = service.generator().readiness();
    if (!ready.ok()) return finish(error_response(503, ready.error().message));
    return finish(json_response(nlohmann::json{{"status", "ready"}}));
  }
  if (route == Route::kMetrics) {
    HttpResponse r = text_response(service.metrics_text());
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return finish(r);
  }

  const std::string& token = service.config().bearer_token;
  if (!token.empty()) {
    constexpr std::string_view kBearer = "Bearer ";
    const std::string_view auth = request.authorization;
    if (auth.substr(0, kBearer.size()) != kBearer ||
        !constant_time_equal(auth.substr(std::min(auth.size(), kBearer.size())), token)) {
      HttpResponse r = error_response(401, "a valid bearer token is required");
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return finish(r);
    }
  }

  std::string_view agent = request.agent_header;
  if (auto it = target.query.find("agent"); it != target.query.end()) agent = it->second;
  if (!agent.empty() && !valid_agent(agent)) {
    return finish(error_response(
        400, "agent must match [a-zA-Z][a-zA-Z0-9-]* and be at most 64 characters"));
  }

  switch (route) {
    case Route::kId:
      return finish(issue(service, 1, wants_text(request, target), agent, false));
    case Route::kIds: {
      const std::uint32_t max = service.config().max_batch;
      auto it = target.query.find("count");
      if (it == target.query.end()) {
        return finish(error_response(400, fmt::format("count is required (1..{})", max)));
      }
      auto count = parse_unsigned(it->second, UINT64_MAX, "count");
      if (!count.ok()) return finish(error_response(400, count.error().message));
      if (*count < 1 || *count > max) {
        return finish(error_response(
            400, fmt::format("count {} is out of range 1..{}", *count, max)));
      }
      return finish(issue(service, static_cast<std::uint32_t>(*count),
                          wants_text(request, target), agent, false));
    }
    case Route::kDecode: {
      auto id = parse_id(tail);
      if (!id.ok()) return finish(error_response(400, id.error().message));
      auto fields = decode(service.layout(), *id);
      if (!fields.ok()) return finish(error_response(400, fields.error().message));
      return finish(json_response(decoded_id_json(*id, *fields)));
    }
    case Route::kInfo:
      return finish(json_response(service.info()));
    case Route::kLeafSnowflake: {
      if (tail.size() > 128 || tail.find('/') != std::string_view::npos) {
        return finish(error_response(400, "key must be at most 128 characters without '/'"));
      }
      return finish(issue(service, 1, true, agent, true));
    }
    default:
      return finish(error_response(404, "no such route"));
  }
}

}  // namespace snowid::server
