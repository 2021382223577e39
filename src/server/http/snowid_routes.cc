// The handlers of snowid's own routes and Leaf's two ID routes, rows of the
// route table (http_routes.cc; their paths and answers in http_routes.h).
// Each answers a request whose token and parameter names handle_http() has
// checked. Stateless apart from thread-local scratch vectors: safe on any
// thread.
#include "snowid_routes.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "id_json.h"
#include "info_json.h"
#include "issuer.h"
#include "snowid/decode.h"

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

// `id` in `encoding` (id_encoding.h); decimal unless ?encoding= said otherwise.
void append_id(std::string& out, Id id, IdEncoding encoding) {
  char text[kMaxEncodedIdLength];
  out.append(text, encode_id(id, encoding, text));
}

// kBinary (format=binary, the routes that answer many numbers): each
// number as 8 bytes, a little-endian two's-complement 64-bit integer, one
// after another; the body's length is 8 times the count.
enum class IdFormat { kJson, kTextLines, kLeafText, kBinary };

constexpr std::string_view kBinaryType = "application/octet-stream";

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

// A HEAD on a route that issues numbers: the request's checks (`admitted`,
// the service's admit()), then the GET's header fields; nothing is issued,
// so the length is not known.
void answer_head(const Answer& admitted, IdFormat format, HttpResponse& response) {
  if (!admitted.ok()) return set_refusal(response, admitted);
  if (format == IdFormat::kBinary) {
    response.content_type = kBinaryType;
  } else if (format != IdFormat::kJson) {
    set_text_type(response);
  }
  response.length_unknown = true;
}

// How /v1/id and /v1/ids write their IDs: Snowflake or opaque, and in
// which encoding (?format=opaque, ?encoding=E; checked by handle_http()).
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

// Numbers as {"ids":["…",…]}, one per line for kTextLines, or 8 bytes
// each for kBinary.
void write_numbers(const std::vector<std::int64_t>& numbers, IdFormat format,
                   HttpResponse& response, IdEncoding encoding = IdEncoding::kDecimal) {
  std::string& body = response.body;
  if (format == IdFormat::kBinary) {
    response.content_type = kBinaryType;
    body.resize(numbers.size() * 8);
    char* out = body.data();
    for (std::int64_t number : numbers) {
      auto bits = static_cast<std::uint64_t>(number);
      for (int byte = 0; byte < 8; ++byte, bits >>= 8) *out++ = static_cast<char>(bits & 0xff);
    }
    return;
  }
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
void encode_or_decode_opaque(const IdService& service, Route route, std::string_view tail,
                             const Caller& authorization, IdEncoding encoding,
                             HttpResponse& response) {
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
  if (!request.count && format != IdFormat::kBinary) {
    return write_number(numbers.front(), format, response);
  }
  write_numbers(numbers, format, response);
}

// ?agent= if given, else the X-Snowid-Agent header.
std::string_view agent_of(const RouteRequest& request) {
  if (auto it = request.target.query.find("agent"); it != request.target.query.end()) {
    return it->second;
  }
  return request.http.agent_header;
}

IdFormat format_of(const RouteRequest& request) {
  if (auto it = request.target.query.find("format");
      it != request.target.query.end() && it->second == "binary") {
    return IdFormat::kBinary;  // check_parameters() let it through for this route only
  }
  return wants_text(request.http, request.target) ? IdFormat::kTextLines : IdFormat::kJson;
}

// /v1/id and /api/snowflake/get/{key}: one ID, as JSON or text, or bare.
void answer_one_id(const RouteRequest& request, IdFormat format, HttpResponse& response) {
  const IdRequest id_request{request.caller(), agent_of(request), 1};
  const IdForm form = id_form(request.target);
  if (response.head) {
    return answer_head(admit_ids(request.service, id_request, form), format, response);
  }
  issue_one(request.service, id_request, format, form, response);
}

}  // namespace

void answer_id(const RouteRequest& request, HttpResponse& response) {
  answer_one_id(request, format_of(request), response);
}

void answer_leaf_snowflake(const RouteRequest& request, HttpResponse& response) {
  if (request.tail.size() > 128 || request.tail.find('/') != std::string_view::npos) {
    return set_error(response, 400, "key must be at most 128 characters without '/'");
  }
  answer_one_id(request, IdFormat::kLeafText, response);
}

void answer_ids(const RouteRequest& request, HttpResponse& response) {
  IdService& service = request.service;
  auto count = parse_count(request.target);
  if (!count.ok()) return set_invalid(response, count.error());
  if (!*count) {
    return set_error(response, 400,
                     fmt::format("count is required (1..{})", service.config().max_batch));
  }
  const IdRequest ids_request{request.caller(), agent_of(request), **count};
  const IdForm form = id_form(request.target);
  const IdFormat format = format_of(request);
  // Opaque and encoded forms are not in the IDs' order: no issuer's promise.
  if (!form.opaque && form.encoding == IdEncoding::kDecimal) {
    response.headers.emplace_back("Snowid-Issuer", issuer_token());
  }
  if (response.head) {
    return answer_head(admit_ids(service, ids_request, form), format, response);
  }
  issue_many(service, ids_request, format, form, response);
}

void answer_formatted(const RouteRequest& request, HttpResponse& response) {
  auto count = parse_count(request.target);
  if (!count.ok()) return set_invalid(response, count.error());
  const IdRequest formatted_request{request.caller(), agent_of(request),
                                    count->value_or(1)};
  const IdFormat format = format_of(request);
  if (response.head) return answer_head(request.service.admit(formatted_request), format, response);
  issue_formatted(request.service, formatted_request, kind_of(request.route), count->has_value(),
                  format, response);
}

void answer_segment(const RouteRequest& request, HttpResponse& response) {
  const bool leaf = request.route == Route::kLeafSegment;
  SegmentRequest segment_request{request.caller(), agent_of(request), request.tail,
                                 std::nullopt};
  if (!leaf) {
    auto count = parse_count(request.target);
    if (!count.ok()) return set_invalid(response, count.error());
    segment_request.count = *count;
  }
  const IdFormat format = leaf ? IdFormat::kLeafText : format_of(request);
  // Copied into the answer before this thread handles another request.
  thread_local std::string issuer;
  issuer = answer_issuer(request.service.segment_numbers_rise());
  response.headers.emplace_back("Snowid-Issuer", issuer);
  if (response.head) return answer_head(request.service.admit(segment_request), format, response);
  issue_segment(request.service, segment_request, format, response);
}

void answer_decode(const RouteRequest& request, HttpResponse& response) {
  // A Snowflake ID, UUID, ULID or ObjectId, told apart by its shape.
  thread_local DecodedId decoded;
  Answer answer = request.service.decode(request.caller(), request.tail, decoded);
  if (!answer.ok()) return set_refusal(response, answer);
  set_json(response, decoded_json(decoded));
}

void answer_opaque(const RouteRequest& request, HttpResponse& response) {
  encode_or_decode_opaque(request.service, request.route, request.tail, request.caller(),
                          id_form(request.target).encoding, response);
}

void answer_info(const RouteRequest& request, HttpResponse& response) {
  thread_local NodeInfo info;
  Answer answer = request.service.info(request.caller(), info);
  if (!answer.ok()) return set_refusal(response, answer);
  set_json(response, info_json(info));
}

// The probes and /metrics: public, their query ignored.
void answer_healthz(const RouteRequest&, HttpResponse& response) {
  set_json(response, nlohmann::json{{"status", "ok"}});
}

void answer_readyz(const RouteRequest& request, HttpResponse& response) {
  // The node's readiness (its claim and generator) alone decides the status; segment mode's is
  // reported beside it (and decides /readyz/segment), so one database
  // being down does not take the whole node out of a load balancer.
  Status ready = request.service.readiness();
  nlohmann::json body =
      ready.ok() ? nlohmann::json{{"status", "ready"}}
                 : nlohmann::json{{"status", "not ready"}, {"error", ready.error().message}};
  body["segment"] = segment_readiness_json(request.service.segment_readiness());
  if (!ready.ok()) response.status = 503;
  set_json(response, body);
}

void answer_readyz_segment(const RouteRequest& request, HttpResponse& response) {
  const auto readiness = request.service.segment_readiness();
  if (!readiness) return set_error(response, 404, "segment mode is off");
  nlohmann::json body = segment_readiness_json(readiness);
  body["status"] = readiness->ready ? "ready" : "not ready";
  if (!readiness->ready) {
    body["error"] = readiness->reason;
    response.status = 503;
  }
  set_json(response, body);
}

void answer_metrics(const RouteRequest& request, HttpResponse& response) {
  response.body = request.service.metrics_text();
  response.content_type = "text/plain; version=0.0.4; charset=utf-8";
}

}  // namespace snowid::server
