#include "http_routes.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <span>

#include "http_target.h"
#include "id_json.h"
#include "info_json.h"
#include "leaf_monitor_routes.h"
#include "snowid/decode.h"
#include "status_page.h"

namespace snowid::server {
namespace {

// format=text, or no format (or format=opaque) and an Accept that asks
// for text/plain only.
bool wants_text(const HttpRequest& request, const Target& target) {
  if (auto it = target.query.find("format"); it != target.query.end() && it->second != "opaque") {
    return it->second == "text";
  }
  return request.accept.find("text/plain") != std::string_view::npos &&
         request.accept.find("application/json") == std::string_view::npos;
}

void set_text_type(HttpResponse& response) { response.content_type = "text/plain; charset=utf-8"; }

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
  }
  return 500;
}

// A request the adapter itself found malformed (its target, a parameter
// that does not parse): 400, as the service's kInvalidArgument.
void set_invalid(HttpResponse& response, const Error& error) {
  set_refusal(response, Answer{Outcome::kInvalidArgument, error.message});
}

// `id` in `encoding` (id_encoding.h); decimal unless ?encoding= said otherwise.
void append_id(std::string& out, Id id, IdEncoding encoding) {
  char text[kMaxEncodedIdLength];
  out.append(text, encode_id(id, encoding, text));
}

enum class IdFormat { kJson, kTextLines, kLeafText };

// One number as {"id":"…"}, a text line, or bare (Leaf), built without a
// JSON document: the hot path of /v1/id.
void write_number(std::int64_t number, IdFormat format, HttpResponse& response,
                  IdEncoding encoding = IdEncoding::kDecimal) {
  if (format == IdFormat::kJson) {
    response.body += "{\"id\":\"";
    append_id(response.body, number, encoding);
    response.body += "\"}\n";
    return;
  }
  set_text_type(response);
  append_id(response.body, number, encoding);
  if (format == IdFormat::kTextLines) response.body += '\n';
}

// The query parameters each route takes; any other is refused, and so is a
// format other than json or text (or opaque, on the Snowflake ID routes)
// and an unknown encoding.
Status check_parameters(Route route, const Target& target) {
  static constexpr std::array<std::string_view, 4> kSnowflake{"count", "format", "agent",
                                                              "encoding"};
  static constexpr std::array<std::string_view, 3> kAll{"count", "format", "agent"};
  static constexpr std::array<std::string_view, 1> kOpaque{"encoding"};
  std::span<const std::string_view> known;  // a tail of one of the lists
  switch (route) {
    case Route::kIds:
      known = std::span(kSnowflake);
      break;
    case Route::kSegment:
    case Route::kUuid:
    case Route::kUlid:
    case Route::kObjectId:
      known = std::span(kAll);
      break;
    case Route::kId:
      known = std::span(kSnowflake).subspan(1);
      break;
    case Route::kLeafSnowflake:
    case Route::kLeafSegment:
      known = std::span(kAll).subspan(2);
      break;
    case Route::kOpaqueEncode:
    case Route::kOpaqueDecode:
      known = std::span(kOpaque);
      break;
    case Route::kLeafDecode:
    case Route::kLeafCache:
    case Route::kLeafDb:
      known = leaf_monitor_parameters(route);
      break;
    default:
      break;
  }
  for (const auto& [name, value] : target.query) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return invalid_argument(fmt::format("unknown query parameter '{}' for {}",
                                          std::string_view(name).substr(0, 40), route_name(route)));
    }
    const bool snowflake = route == Route::kId || route == Route::kIds;
    if (name == "format" && value != "json" && value != "text" &&
        (value != "opaque" || !snowflake)) {
      return invalid_argument(fmt::format("format '{}' is not json or text{}",
                                          std::string_view(value).substr(0, 40),
                                          snowflake ? " or opaque" : ""));
    }
    if (name == "encoding") {
      if (auto encoding = parse_id_encoding(value); !encoding.ok()) return encoding.error();
    }
  }
  return {};
}

// A HEAD on a route that issues numbers: the request's checks (`admitted`,
// the service's admit()), then the GET's header fields; nothing is issued,
// so the length is not known.
void answer_head(const Answer& admitted, IdFormat format, HttpResponse& response) {
  if (!admitted.ok()) return set_refusal(response, admitted);
  if (format != IdFormat::kJson) set_text_type(response);
  response.length_unknown = true;
}

// How /v1/id and /v1/ids write their IDs: Snowflake or opaque, and in
// which encoding (?format=opaque, ?encoding=E; checked by check_parameters).
struct IdForm {
  bool opaque = false;
  IdEncoding encoding = IdEncoding::kDecimal;
};

IdForm id_form(const Target& target) {
  IdForm form;
  if (auto it = target.query.find("format"); it != target.query.end()) {
    form.opaque = it->second == "opaque";
  }
  if (auto it = target.query.find("encoding"); it != target.query.end()) {
    form.encoding = parse_id_encoding(it->second).value();
  }
  return form;
}

// What a GET of /v1/id or /v1/ids checks before it issues, for a HEAD.
Answer admit_ids(const IdService& service, const IdRequest& request, IdForm form) {
  return form.opaque ? service.admit_opaque(request) : service.admit(request);
}

void issue_one(IdService& service, const IdRequest& request, IdFormat format, IdForm form,
               HttpResponse& response) {
  if (form.opaque) {
    thread_local std::vector<Id> ids;
    ids.clear();
    Answer answer = service.next_opaque_ids(request, ids);
    if (!answer.ok()) return set_refusal(response, answer);
    return write_number(ids.front(), format, response, form.encoding);
  }
  Id id = 0;
  Answer answer = service.next_id(request, id);
  if (!answer.ok()) return set_refusal(response, answer);
  write_number(id, format, response, form.encoding);
}

// Numbers as {"ids":["…",…]}, or one per line for kTextLines.
void write_numbers(const std::vector<std::int64_t>& numbers, IdFormat format,
                   HttpResponse& response, IdEncoding encoding = IdEncoding::kDecimal) {
  std::string& body = response.body;
  body.reserve(numbers.size() * 22 + 16);
  if (format == IdFormat::kTextLines) {
    set_text_type(response);
    for (std::int64_t number : numbers) {
      append_id(body, number, encoding);
      body += '\n';
    }
    return;
  }
  body += "{\"ids\":[";
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    if (i > 0) body += ',';
    body += '"';
    append_id(body, numbers[i], encoding);
    body += '"';
  }
  body += "]}\n";
}

void issue_many(IdService& service, const IdRequest& request, IdFormat format, IdForm form,
                HttpResponse& response) {
  thread_local std::vector<Id> ids;
  ids.clear();
  Answer answer =
      form.opaque ? service.next_opaque_ids(request, ids) : service.next_ids(request, ids);
  if (!answer.ok()) return set_refusal(response, answer);
  write_numbers(ids, format, response, form.encoding);
}

// GET /v1/opaque/encode/{id} and /v1/opaque/decode/{opaque}[?encoding=E]:
// {"id":"…","opaque":"…"}, the Snowflake ID in decimal, the opaque one in E.
void answer_opaque(const IdService& service, Route route, std::string_view tail,
                   const Caller& authorization, IdEncoding encoding, HttpResponse& response) {
  Id id = 0;
  Id opaque = 0;
  Answer answer = route == Route::kOpaqueEncode
                      ? service.to_opaque(authorization, tail, opaque)
                      : service.from_opaque(authorization, tail, encoding, id);
  if (!answer.ok()) return set_refusal(response, answer);
  if (route == Route::kOpaqueEncode) {
    id = *parse_id(tail);  // to_opaque() parsed it
  } else {
    opaque = *decode_id(tail, encoding);
  }
  std::string& body = response.body;
  body += "{\"id\":\"";
  append_id(body, id, IdEncoding::kDecimal);
  body += "\",\"opaque\":\"";
  append_id(body, opaque, encoding);
  body += "\"}\n";
}

// The kind each formatted-ID route issues.
IdKind kind_of(Route route) {
  switch (route) {
    case Route::kUlid:
      return IdKind::kUlid;
    case Route::kObjectId:
      return IdKind::kObjectId;
    default:
      return IdKind::kUuid7;
  }
}

// GET /v1/uuid, /v1/ulid, /v1/objectid [?count=N]: {"id":"…"} without a
// count, {"ids":["…",…]} with one, or text lines.
void issue_formatted(IdService& service, const IdRequest& request, IdKind kind, bool many,
                     IdFormat format, HttpResponse& response) {
  thread_local std::vector<FormattedId> ids;
  ids.clear();
  Answer answer = service.next_formatted_ids(request, kind, ids);
  if (!answer.ok()) return set_refusal(response, answer);
  std::string& body = response.body;
  if (format == IdFormat::kTextLines) {
    set_text_type(response);
    for (const FormattedId& id : ids) {
      body += to_text(id);
      body += '\n';
    }
    return;
  }
  body += many ? "{\"ids\":[" : "{\"id\":";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) body += ',';
    body += '"';
    body += to_text(ids[i]);
    body += '"';
  }
  body += many ? "]}\n" : "}\n";
}

// GET /v1/segment/{tag}[?count=N] and the Leaf route /api/segment/get/{tag}.
void issue_segment(IdService& service, const SegmentRequest& request, IdFormat format,
                   HttpResponse& response) {
  thread_local std::vector<std::int64_t> numbers;
  numbers.clear();
  Answer answer = service.next_segment_ids(request, numbers);
  if (!answer.ok()) return set_refusal(response, answer);
  if (!request.count) return write_number(numbers.front(), format, response);
  write_numbers(numbers, format, response);
}

// The route `path` names; `tail` is what follows a route's prefix ("/v1/decode/{id}").
Route route_of(std::string_view path, std::string_view& tail) {
  auto under = [&](std::string_view prefix) {
    if (path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix) {
      tail = path.substr(prefix.size());
      return true;
    }
    return false;
  };
  if (path == "/v1/id") return Route::kId;
  if (path == "/v1/ids") return Route::kIds;
  if (under("/v1/decode/")) return Route::kDecode;
  if (under("/v1/opaque/encode/")) return Route::kOpaqueEncode;
  if (under("/v1/opaque/decode/")) return Route::kOpaqueDecode;
  if (path == "/v1/info") return Route::kInfo;
  if (path == "/v1/uuid") return Route::kUuid;
  if (path == "/v1/ulid") return Route::kUlid;
  if (path == "/v1/objectid") return Route::kObjectId;
  if (under("/api/snowflake/get/")) return Route::kLeafSnowflake;
  if (path == "/healthz") return Route::kHealthz;
  if (path == "/readyz") return Route::kReadyz;
  if (path == "/metrics") return Route::kMetrics;
  if (under("/v1/segment/")) return Route::kSegment;
  if (under("/api/segment/get/")) return Route::kLeafSegment;
  if (path == "/readyz/segment") return Route::kReadyzSegment;
  if (path == "/decodeSnowflakeId") return Route::kLeafDecode;
  if (path == "/cache") return Route::kLeafCache;
  if (path == "/db") return Route::kLeafDb;
  if (path == "/") return Route::kStatusPage;
  return Route::kOther;
}

// The probes and /metrics: no token, their query ignored. False for any
// other route.
bool answer_probe(const IdService& service, Route route, HttpResponse& response) {
  if (route == Route::kHealthz) {
    set_json(response, nlohmann::json{{"status", "ok"}});
    return true;
  }
  if (route == Route::kReadyz) {
    // The node's readiness (its claim and generator) alone decides the status; segment mode's is
    // reported beside it (and decides /readyz/segment), so one database
    // being down does not take the whole node out of a load balancer.
    Status ready = service.readiness();
    nlohmann::json body =
        ready.ok() ? nlohmann::json{{"status", "ready"}}
                   : nlohmann::json{{"status", "not ready"}, {"error", ready.error().message}};
    body["segment"] = segment_readiness_json(service.segment_readiness());
    if (!ready.ok()) response.status = 503;
    set_json(response, body);
    return true;
  }
  if (route == Route::kReadyzSegment) {
    const auto readiness = service.segment_readiness();
    if (!readiness) {
      set_error(response, 404, "segment mode is off");
      return true;
    }
    nlohmann::json body = segment_readiness_json(readiness);
    body["status"] = readiness->ready ? "ready" : "not ready";
    if (!readiness->ready) {
      body["error"] = readiness->reason;
      response.status = 503;
    }
    set_json(response, body);
    return true;
  }
  if (route == Route::kMetrics) {
    response.body = service.metrics_text();
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return true;
  }
  return false;
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

std::optional<Call> call_of(Route route) {
  switch (route) {
    case Route::kId:
    case Route::kLeafSnowflake:
      return Call::kNextId;
    case Route::kIds:
      return Call::kNextIds;
    case Route::kSegment:
    case Route::kLeafSegment:
      return Call::kSegment;
    case Route::kDecode:
    case Route::kLeafDecode:
      return Call::kDecode;
    case Route::kInfo:
    case Route::kLeafCache:
    case Route::kLeafDb:
      return Call::kInfo;
    case Route::kUuid:
      return Call::kNextUuids;
    case Route::kUlid:
      return Call::kNextUlids;
    case Route::kObjectId:
      return Call::kNextObjectIds;
    case Route::kOpaqueEncode:
    case Route::kOpaqueDecode:
      return Call::kOpaque;
    default:
      return std::nullopt;
  }
}

bool issues_ids(std::string_view target) {
  const std::string_view path = target_path(target);
  return path == "/v1/id" || path == "/v1/ids" || path == "/v1/uuid" || path == "/v1/ulid" ||
         path == "/v1/objectid" || path.starts_with("/api/snowflake/get/");
}

void handle_http(IdService& service, const HttpRequest& request, HttpResponse& response) {
  response.reset();
  const std::string_view path = target_path(request.target);
  std::string_view tail;
  const Route route = response.route = route_of(path, tail);
  if (route == Route::kOther) {
    return set_error(response, 404, fmt::format("no route for {}", path.substr(0, 100)));
  }
  response.head = request.method == "HEAD";
  if (request.method != "GET" && !response.head) {
    set_error(response, 405, fmt::format("{} accepts GET and HEAD only", route_name(route)));
    response.headers.emplace_back("Allow", "GET, HEAD");
    return;
  }
  if (answer_probe(service, route, response)) return;
  // The status page holds no data (its script fetches it with the token),
  // so it is public as the probes are, its query ignored (status_page.h).
  if (route == Route::kStatusPage) return answer_status_page(response);

  // The token first, then the request's parameters: every route from here
  // on takes a query, and accepts its own parameters only. (The probes and
  // /metrics above ignore theirs, whatever it holds: cache busters, repeats.)
  const Caller authorization = Caller::presenting(request.authorization);
  if (Answer allowed = service.authorize(authorization); !allowed.ok()) {
    return set_refusal(response, allowed);
  }
  auto parsed = parse_target(request.target);
  if (!parsed.ok()) return set_invalid(response, parsed.error());
  const Target& target = *parsed;
  if (Status known = check_parameters(route, target); !known.ok()) {
    return set_invalid(response, known.error());
  }

  std::string_view agent = request.agent_header;
  if (auto it = target.query.find("agent"); it != target.query.end()) agent = it->second;
  const IdFormat format = wants_text(request, target) ? IdFormat::kTextLines : IdFormat::kJson;

  switch (route) {
    case Route::kId:
    case Route::kLeafSnowflake: {
      const bool leaf = route == Route::kLeafSnowflake;
      if (leaf && (tail.size() > 128 || tail.find('/') != std::string_view::npos)) {
        return set_error(response, 400, "key must be at most 128 characters without '/'");
      }
      const IdRequest id_request{authorization, agent, 1};
      const IdFormat id_format = leaf ? IdFormat::kLeafText : format;
      const IdForm form = id_form(target);
      if (response.head) {
        return answer_head(admit_ids(service, id_request, form), id_format, response);
      }
      return issue_one(service, id_request, id_format, form, response);
    }
    case Route::kIds: {
      auto count = parse_count(target);
      if (!count.ok()) return set_invalid(response, count.error());
      if (!*count) {
        return set_error(response, 400,
                         fmt::format("count is required (1..{})", service.config().max_batch));
      }
      const IdRequest ids_request{authorization, agent, **count};
      const IdForm form = id_form(target);
      if (response.head) {
        return answer_head(admit_ids(service, ids_request, form), format, response);
      }
      return issue_many(service, ids_request, format, form, response);
    }
    case Route::kUuid:
    case Route::kUlid:
    case Route::kObjectId: {
      auto count = parse_count(target);
      if (!count.ok()) return set_invalid(response, count.error());
      const IdRequest formatted_request{authorization, agent, count->value_or(1)};
      if (response.head) return answer_head(service.admit(formatted_request), format, response);
      return issue_formatted(service, formatted_request, kind_of(route), count->has_value(), format,
                             response);
    }
    case Route::kSegment:
    case Route::kLeafSegment: {
      SegmentRequest segment_request{authorization, agent, tail, std::nullopt};
      if (route == Route::kSegment) {
        auto count = parse_count(target);
        if (!count.ok()) return set_invalid(response, count.error());
        segment_request.count = *count;
      }
      const IdFormat segment_format = route == Route::kLeafSegment ? IdFormat::kLeafText : format;
      if (response.head) {
        return answer_head(service.admit(segment_request), segment_format, response);
      }
      return issue_segment(service, segment_request, segment_format, response);
    }
    case Route::kDecode: {
      // A Snowflake ID, UUID, ULID or ObjectId, told apart by its shape.
      thread_local DecodedId decoded;
      Answer answer = service.decode(authorization, tail, decoded);
      if (!answer.ok()) return set_refusal(response, answer);
      return set_json(response, decoded_json(decoded));
    }
    case Route::kLeafDecode:
    case Route::kLeafCache:
    case Route::kLeafDb:
      return answer_leaf_monitor(service, route, request, target, response);
    case Route::kOpaqueEncode:
    case Route::kOpaqueDecode:
      return answer_opaque(service, route, tail, authorization, id_form(target).encoding, response);
    case Route::kInfo: {
      thread_local NodeInfo info;
      Answer answer = service.info(authorization, info);
      if (!answer.ok()) return set_refusal(response, answer);
      return set_json(response, info_json(info));
    }
    default:
      return set_error(response, 404, "no such route");
  }
}

}  // namespace snowid::server
