// The route table and handle_http() (see http_routes.h): each route is one
// row, read by matching, the parameter checks, the metrics and the dispatch.
#include "http_routes.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "leaf_monitor_routes.h"
#include "snowid/id_encoding.h"
#include "snowid_routes.h"
#include "status_page.h"
#include "tag_routes.h"

namespace snowid::server {
namespace {

// HTTP's status for each outcome (outcome.h). kTooLarge is a 400 as any
// bad parameter; kDisabled a 404, as a route that is not served.
unsigned http_status(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk:
      return 200;
    case Outcome::kUnauthenticated:
      return 401;
    case Outcome::kInvalidArgument:
    case Outcome::kTooLarge:
      return 400;
    case Outcome::kNotFound:
    case Outcome::kDisabled:
      return 404;
    case Outcome::kUnavailable:
      return 503;
    case Outcome::kInternal:
      return 500;
    case Outcome::kConflict:
      return 409;
  }
  return 500;
}

// The query parameters of each kind of route.
constexpr std::array<std::string_view, 3> kIdParameters{"format", "agent", "encoding"};
constexpr std::array<std::string_view, 4> kIdsParameters{"count", "format", "agent", "encoding"};
constexpr std::array<std::string_view, 3> kCountedParameters{"count", "format", "agent"};
constexpr std::array<std::string_view, 1> kLeafIdParameters{"agent"};
constexpr std::array<std::string_view, 1> kOpaqueParameters{"encoding"};
constexpr std::array<std::string_view, 1> kLeafDecodeParameters{"snowflakeId"};
constexpr std::array<std::string_view, 2> kBusinessParameters{"count", "agent"};
constexpr std::span<const std::string_view> kNone;

constexpr std::string_view kGetHead = "GET, HEAD";

// A public route: GET and HEAD, no token, no query, no service call.
constexpr RouteRow public_row(std::string_view path, Route route, RouteHandler handler) {
  return {kGetHead, path,  false, route, Access::kPublic, std::nullopt,
          kNone,    false, false, false, handler};
}

// A route behind the token, GET and HEAD.
constexpr RouteRow token_row(std::string_view path, bool prefix, Route route, Call call,
                             std::span<const std::string_view> parameters, RouteHandler handler,
                             bool issues_ids = false, bool opaque_format = false,
                             bool binary_format = false) {
  return {kGetHead, path,       prefix,        route,         Access::kToken, call,
          parameters, opaque_format, binary_format, issues_ids,   handler};
}

// The routes, in Route's order (route_row() indexes it). A prefix route
// matches a longer path only; no path matches two rows.
constexpr std::array<RouteRow, kRouteCount - 1> kRoutes{
    token_row("/v1/id", false, Route::kId, Call::kNextId, kIdParameters, answer_id, true, true),
    token_row("/v1/ids", false, Route::kIds, Call::kNextIds, kIdsParameters, answer_ids, true,
              true, true),
    token_row("/v1/decode/", true, Route::kDecode, Call::kDecode, kNone, answer_decode),
    token_row("/v1/info", false, Route::kInfo, Call::kInfo, kNone, answer_info),
    token_row("/api/snowflake/get/", true, Route::kLeafSnowflake, Call::kNextId, kLeafIdParameters,
              answer_leaf_snowflake, true),
    public_row("/healthz", Route::kHealthz, answer_healthz),
    public_row("/readyz", Route::kReadyz, answer_readyz),
    public_row("/metrics", Route::kMetrics, answer_metrics),
    token_row("/v1/segment/", true, Route::kSegment, Call::kSegment, kCountedParameters,
              answer_segment, false, false, true),
    token_row("/api/segment/get/", true, Route::kLeafSegment, Call::kSegment, kLeafIdParameters,
              answer_segment),
    public_row("/readyz/segment", Route::kReadyzSegment, answer_readyz_segment),
    token_row("/decodeSnowflakeId", false, Route::kLeafDecode, Call::kDecode, kLeafDecodeParameters,
              answer_leaf_decode),
    token_row("/cache", false, Route::kLeafCache, Call::kInfo, kNone, answer_leaf_cache),
    token_row("/db", false, Route::kLeafDb, Call::kInfo, kNone, answer_leaf_db),
    token_row("/v1/uuid", false, Route::kUuid, Call::kNextUuids, kCountedParameters,
              answer_formatted, true),
    token_row("/v1/ulid", false, Route::kUlid, Call::kNextUlids, kCountedParameters,
              answer_formatted, true),
    token_row("/v1/objectid", false, Route::kObjectId, Call::kNextObjectIds, kCountedParameters,
              answer_formatted, true),
    public_row("/", Route::kStatusPage, answer_status_page),
    token_row("/v1/opaque/encode/", true, Route::kOpaqueEncode, Call::kOpaque, kOpaqueParameters,
              answer_opaque),
    token_row("/v1/opaque/decode/", true, Route::kOpaqueDecode, Call::kOpaque, kOpaqueParameters,
              answer_opaque),
    // GET only: a HEAD would have to take numbers to say whether it could.
    RouteRow{"GET", "/v1/business/", true, Route::kBusiness, Access::kToken, Call::kBusiness,
             kBusinessParameters, false, false, false, answer_business},
    // Tag administration: a JSON body for POST and PATCH (tag_routes.h).
    RouteRow{"GET, HEAD, POST", "/v1/tags", false, Route::kTags, Access::kToken, Call::kTagAdmin,
             kNone, false, false, false, answer_tags},
    RouteRow{"GET, HEAD, PATCH, DELETE", "/v1/tags/", true, Route::kTag, Access::kToken,
             Call::kTagAdmin, kNone, false, false, false, answer_tag},
};

constexpr bool in_route_order() {
  for (std::size_t i = 0; i < kRoutes.size(); ++i) {
    if (kRoutes[i].route != static_cast<Route>(i)) return false;
  }
  return true;
}
static_assert(in_route_order(), "kRoutes must list the routes in Route's order");

bool matches(const RouteRow& row, std::string_view path) {
  if (!row.prefix) return path == row.path;
  return path.size() > row.path.size() && path.starts_with(row.path);
}

bool allows(const RouteRow& row, std::string_view method) {
  for (std::string_view rest = row.allow; !rest.empty();) {
    const auto comma = rest.find(", ");
    if (rest.substr(0, comma) == method) return true;
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 2);
  }
  return false;
}

// 405, naming the methods the route accepts ("GET and HEAD").
void refuse_method(const RouteRow& row, HttpResponse& response) {
  std::string methods(row.allow);
  if (const auto last = methods.rfind(", "); last != std::string::npos) {
    methods.replace(last, 2, " and ");
  }
  set_error(response, 405, fmt::format("{} accepts {} only", route_name(row.route), methods));
  response.headers.emplace_back("Allow", row.allow);
}

// A format the row answers in: json and text everywhere, opaque and binary
// where the row allows them.
bool answers_in(const RouteRow& row, std::string_view format) {
  return format == "json" || format == "text" || (format == "opaque" && row.opaque_format) ||
         (format == "binary" && row.binary_format);
}

// The row's parameters only; a format the row does not answer in and an
// unknown encoding are refused too, and so is an encoding beside
// format=binary (whose numbers are 64-bit integers, not text).
Status check_parameters(const RouteRow& row, const Target& target) {
  for (const auto& [name, value] : target.query) {
    if (std::find(row.parameters.begin(), row.parameters.end(), name) == row.parameters.end()) {
      return invalid_argument(fmt::format("unknown query parameter '{}' for {}",
                                          std::string_view(name).substr(0, 40),
                                          route_name(row.route)));
    }
    if (name == "format" && !answers_in(row, value)) {
      return invalid_argument(fmt::format("format '{}' is not json or text{}{}",
                                          std::string_view(value).substr(0, 40),
                                          row.opaque_format ? " or opaque" : "",
                                          row.binary_format ? " or binary" : ""));
    }
    if (name == "encoding") {
      if (auto encoding = parse_id_encoding(value); !encoding.ok()) return encoding.error();
      if (auto format = target.query.find("format");
          format != target.query.end() && format->second == "binary") {
        return invalid_argument("format=binary answers 64-bit integers: no encoding applies");
      }
    }
  }
  return {};
}

}  // namespace

void set_json(HttpResponse& response, const nlohmann::json& body) {
  // Replaces invalid UTF-8 (say, from a request path echoed in a message)
  // rather than throwing.
  response.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  response.body += '\n';
}

void set_refusal(HttpResponse& response, const Answer& answer) {
  set_error(response, http_status(answer.outcome), answer.message);
  response.outcome = answer.outcome;
  if (answer.outcome == Outcome::kUnauthenticated) {
    response.headers.emplace_back("WWW-Authenticate", "Bearer");
  } else if (answer.outcome == Outcome::kUnavailable) {
    response.headers.emplace_back("Retry-After", "1");
  }
}

void HttpResponse::reset() {
  status = 200;
  content_type = "application/json";
  body.clear();
  route = Route::kOther;
  headers.clear();
  head = false;
  length_unknown = false;
  outcome = Outcome::kOk;
}

void set_error(HttpResponse& response, unsigned status, std::string_view message) {
  response.status = status;
  response.outcome = status < 500 ? Outcome::kInvalidArgument : Outcome::kInternal;
  response.content_type = "application/json";
  set_json(response, nlohmann::json{{"error", message}});
}

void set_invalid(HttpResponse& response, const Error& error) {
  set_refusal(response, Answer{Outcome::kInvalidArgument, error.message});
}

std::string_view route_name(Route route) {
  if (route == Route::kOther) return "other";
  const RouteRow& row = route_row(route);
  return row.prefix ? row.path.substr(0, row.path.size() - 1) : row.path;  // "/v1/decode"
}

const RouteRow& route_row(Route route) { return kRoutes[static_cast<std::size_t>(route)]; }

const RouteRow* find_route(std::string_view path, std::string_view& tail) {
  for (const RouteRow& row : kRoutes) {
    if (!matches(row, path)) continue;
    if (row.prefix) tail = path.substr(row.path.size());
    return &row;
  }
  return nullptr;
}

std::optional<Call> call_of(Route route) {
  if (route == Route::kOther) return std::nullopt;
  return route_row(route).call;
}

bool issues_ids(std::string_view target) {
  std::string_view tail;
  const RouteRow* row = find_route(target_path(target), tail);
  return row != nullptr && row->issues_ids;
}

void handle_http(IdService& service, const HttpRequest& request, HttpResponse& response) {
  response.reset();
  const std::string_view path = target_path(request.target);
  std::string_view tail;
  const RouteRow* row = find_route(path, tail);
  if (row == nullptr) {
    return set_error(response, 404, fmt::format("no route for {}", path.substr(0, 100)));
  }
  response.route = row->route;
  response.head = request.method == "HEAD";
  if (!allows(*row, request.method)) return refuse_method(*row, response);
  // The public routes ignore their query, whatever it holds (cache busters,
  // repeats); the others check the token first, then their parameters.
  if (row->access == Access::kPublic) {
    static const Target kNoTarget{};
    return row->handler({service, request, kNoTarget, row->route, tail}, response);
  }
  const Caller caller = Caller::presenting(request.authorization);
  if (Answer allowed = service.authorize(caller); !allowed.ok()) {
    return set_refusal(response, allowed);
  }
  auto target = parse_target(request.target);
  if (!target.ok()) return set_invalid(response, target.error());
  if (Status known = check_parameters(*row, *target); !known.ok()) {
    return set_invalid(response, known.error());
  }
  // A prefix route's tail is one value (a tag, an ID), percent-decoded:
  // /v1/segment/order%3Apay and /api/segment/get/a%2Fb name "order:pay" and "a/b".
  auto decoded_tail = percent_decode_path(tail);
  if (!decoded_tail.ok()) return set_invalid(response, decoded_tail.error());
  row->handler({service, request, *target, row->route, *decoded_tail}, response);
}

}  // namespace snowid::server
