// snowidd's HTTP API as a pure function from request to response, separate
// from the transport so that it can be tested and fuzzed without sockets.
//
//   GET /v1/id                  {"id":"…"}
//   GET /v1/ids?count=N         {"ids":["…",…]}, 1 <= N <= max_batch
//   GET /v1/id, /v1/ids: ?format=opaque gives opaque IDs (opaque_id.h; 404 without
//       opaque_key_file), ?encoding=hex|base32|base58|base62 fixed-width text (id_encoding.h)
//   GET /v1/decode/{id}         the CLI's decode JSON: a Snowflake ID, UUID, ULID or ObjectId
//   GET /v1/opaque/encode/{id}, /v1/opaque/decode/{opaque}[?encoding=E]
//       {"id":"…","opaque":"…"}: a Snowflake ID and its opaque ID, the latter in E
//   GET /v1/uuid, /v1/ulid, /v1/objectid [?count=N]  UUIDv7s, ULIDs, ObjectIds as text:
//       {"id":"…"} or {"ids":["…",…]} (id_formats.h)
//   GET /v1/info                version, layout, node, policy, high-water mark, …
//   GET /api/snowflake/get/{key}  the bare ID as text (Meituan Leaf compatible)
//   GET /v1/segment/{tag}       {"id":"…"}: the tag's next segment number
//   GET /v1/segment/{tag}?count=N  {"ids":["…",…]}, 1 <= N <= max_batch
//   GET /api/segment/get/{tag}  the bare number as text (Meituan Leaf compatible)
//   GET /decodeSnowflakeId?snowflakeId=N, /cache, /db  Leaf's decoding and
//       monitoring routes (leaf_monitor_routes.h)
//   GET /healthz, /readyz (generator; segment state in the body), /readyz/segment, /metrics
//   GET /                       the status page (status_page.h): public, its data fetched
//       by its script from the token-protected routes
// IDs are JSON strings. `Accept: text/plain` or `?format=text` gives bare IDs,
// one per line. Errors: {"error":"…"} with 400/401/404/405/503 (segment
// routes: 404 also for an unknown tag, 503 while the store is down and the
// tag's buffers are empty).
//
// Every route is one row of one constant table (http_routes.cc, route_row()):
// its methods, its path or prefix, its name in the request metrics, the
// service call it makes, the query parameters it accepts, whether it issues
// IDs and its handler. Matching, the parameter checks, the metrics and the
// dispatch of handle_http() all read that table. Thread-safety: the table is
// constant; handle_http() may be called from any thread.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http_request.h"
#include "http_target.h"
#include "service.h"

namespace snowid::server {

// The routes, in the order of the request metrics (snowid_http_requests_total);
// kOther (no route) stays last: HttpMetrics counts in an array of kRouteCount.
enum class Route {
  kId,
  kIds,
  kDecode,
  kInfo,
  kLeafSnowflake,
  kHealthz,
  kReadyz,
  kMetrics,
  kSegment,
  kLeafSegment,
  kReadyzSegment,
  kLeafDecode,
  kLeafCache,
  kLeafDb,
  kUuid,
  kUlid,
  kObjectId,
  kStatusPage,
  kOpaqueEncode,
  kOpaqueDecode,
  kBusiness,
  kTags,
  kTag,
  kOther,
};
inline constexpr std::size_t kRouteCount = 24;
static_assert(static_cast<std::size_t>(Route::kOther) + 1 == kRouteCount);

// The route's name in the metrics and messages ("/v1/ids"; "other").
std::string_view route_name(Route route);

// A response as handle_http() leaves it. The transport reuses one per
// connection, so that answering a request allocates nothing once the body's
// buffer has grown to its usual size. Header names and values are constants.
struct HttpResponse {
  unsigned status = 200;
  std::string_view content_type = "application/json";
  std::string body;
  Route route = Route::kOther;
  std::vector<std::pair<std::string_view, std::string_view>> headers;
  // HEAD: the header fields a GET would get, no body. A route that issues
  // numbers issues none for a HEAD, so its length is not known: then
  // Content-Length is left out (RFC 9110 9.3.2 allows it).
  bool head = false;
  bool length_unknown = false;
  // How the request ended, for the request metrics shared with the other
  // protocols; an error the router answers itself is kInvalidArgument
  // (4xx) or kInternal (5xx).
  Outcome outcome = Outcome::kOk;

  // Back to an empty 200, keeping the body's capacity.
  void reset();
};

// A request as a route's handler sees it: the token checked, the target
// parsed and its parameters ones the route accepts (the public routes,
// which ignore their query, get an empty target).
struct RouteRequest {
  IdService& service;
  const HttpRequest& http;
  const Target& target;
  Route route;
  std::string_view tail;  // what follows a prefix route's prefix ("/v1/decode/{id}")

  // The caller, as its Authorization header presents it.
  Caller caller() const { return Caller::presenting(http.authorization); }
};

using RouteHandler = void (*)(const RouteRequest& request, HttpResponse& response);

// Who may call a route: kPublic routes (probes, /metrics, the status page)
// need no token and ignore their query; kToken routes check both.
enum class Access { kPublic, kToken };

// One row of the route table.
struct RouteRow {
  std::string_view allow;  // the methods, as the Allow header lists them
  std::string_view path;   // the path, or the prefix when `prefix` (ends in '/')
  bool prefix;
  Route route;
  Access access;
  std::optional<Call> call;  // the service call, for the request metrics
  std::span<const std::string_view> parameters;
  bool opaque_format;  // also ?format=opaque (the Snowflake ID routes)
  bool binary_format;  // also ?format=binary (the routes that answer many numbers)
  bool issues_ids;     // may wait for the clock under the wait policy
  RouteHandler handler;
};

// The row of `route` (not kOther).
const RouteRow& route_row(Route route);

// The row `path` names, its prefix's tail in `tail`; nullptr for none.
const RouteRow* find_route(std::string_view path, std::string_view& tail);

// True for the routes that issue Snowflake IDs or time-ordered IDs (and so
// may wait for the clock under the wait policy): /v1/id, /v1/ids,
// /api/snowflake/get/{key}, /v1/uuid, /v1/ulid, /v1/objectid.
bool issues_ids(std::string_view target);

// Answers `request` into `response` (which it resets first).
void handle_http(IdService& service, const HttpRequest& request, HttpResponse& response);

// The service call a route makes, for the request metrics; nullopt for the
// probes, /metrics and unknown routes. Leaf's /cache and /db count as info.
std::optional<Call> call_of(Route route);

// Makes `response` the error {"error":"…"} with the given status.
void set_error(HttpResponse& response, unsigned status, std::string_view message);

// Makes `response` a request the adapter itself found malformed (its target,
// a parameter that does not parse): 400, as the service's kInvalidArgument.
void set_invalid(HttpResponse& response, const Error& error);

// Makes `response` a refused request: the outcome's status and
// {"error":"…"}; a 401 asks for the token, a 503 says when to retry.
void set_refusal(HttpResponse& response, const Answer& answer);

// Makes `response`'s body `body` as one line of JSON.
void set_json(HttpResponse& response, const nlohmann::json& body);

}  // namespace snowid::server
