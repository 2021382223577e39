// Fuzz target: snowidd's HTTP routing and query parsing (handle_http in
// src/server/http/http_routes.h), on real services (tests/fuzz/fuzz_support.h).
//
// Input: text lines, as a request's parts after Beast has parsed it:
//   service        "guarded" picks the service with a bearer token and the
//                  Sonyflake layout; anything else the open one (segments on)
//   method
//   target         e.g. /v1/ids?count=5&format=text&agent=web&encoding=base58
//   Accept
//   Authorization  e.g. Bearer fuzz-token
//   X-Snowid-Agent
// Missing lines are empty. Checks beyond "no crash, no sanitizer report":
// the status is one the API documents, a JSON body parses, 401 exactly when
// the token is missing or wrong, the IDs and segment numbers of every 200
// answer are greater than all issued before (per service, per tag; IDs read
// in the request's ?encoding=), and with no opaque ID key configured no
// opaque ID route answers 200.
#include <array>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "http_routes.h"
#include "http_target.h"
#include "snowid/id_encoding.h"

namespace {

using snowid::fuzz::IncreasingCheck;
using snowid::fuzz::ServiceKind;
using snowid::server::Route;

struct Checks {
  IncreasingCheck ids;
  IncreasingCheck segment_numbers;
};

std::string_view next_line(std::string_view& rest) {
  const auto newline = rest.find('\n');
  const std::string_view line = rest.substr(0, newline);
  rest = newline == std::string_view::npos ? std::string_view{} : rest.substr(newline + 1);
  return line;
}

bool documented_status(unsigned status) {
  constexpr std::array<unsigned, 6> kStatuses{200, 400, 401, 404, 405, 503};
  for (unsigned s : kStatuses) {
    if (s == status) return true;
  }
  return false;
}

// Calls `check.next()` with each ID of a 200 answer of /v1/id or /v1/ids to
// `target`, read in its ?encoding= (decimal without one); returns how many.
std::size_t check_ids(const snowid::server::Target& target,
                      const snowid::server::HttpResponse& response, IncreasingCheck& check) {
  auto encoding = snowid::IdEncoding::kDecimal;
  if (auto it = target.query.find("encoding"); it != target.query.end()) {
    auto parsed = snowid::parse_id_encoding(it->second);
    SNOWID_FUZZ_CHECK(parsed.ok());
    encoding = *parsed;
  }
  if (encoding == snowid::IdEncoding::kDecimal) {
    return snowid::fuzz::check_numbers(response.body, check);
  }
  std::vector<std::string> texts;
  if (response.content_type == "application/json") {
    const auto json = nlohmann::json::parse(response.body);
    if (json.contains("id")) texts.push_back(json["id"].get<std::string>());
    if (json.contains("ids")) {
      for (const auto& text : json["ids"]) texts.push_back(text.get<std::string>());
    }
  } else {
    std::string_view rest = response.body;
    while (!rest.empty()) texts.emplace_back(next_line(rest));
  }
  for (const std::string& text : texts) {
    auto id = snowid::decode_id(text, encoding);
    SNOWID_FUZZ_CHECK(id.ok());
    check.next(*id);
  }
  return texts.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static std::array<Checks, 2> checks;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  const bool guarded = next_line(rest) == "guarded";
  snowid::server::HttpRequest request;
  request.method = next_line(rest);
  request.target = next_line(rest);
  request.accept = next_line(rest);
  request.authorization = next_line(rest);
  request.agent_header = next_line(rest);

  auto& service = snowid::fuzz::service(guarded ? ServiceKind::kGuarded : ServiceKind::kOpen);
  Checks& issued = checks[guarded ? 1 : 0];
  static snowid::server::HttpResponse response;
  snowid::server::handle_http(service, request, response);

  SNOWID_FUZZ_CHECK(documented_status(response.status));
  // A HEAD on a route that issues numbers issues none and has no body.
  SNOWID_FUZZ_CHECK(!response.body.empty() || (response.head && response.length_unknown));
  if (response.content_type == "application/json" && !response.body.empty()) {
    SNOWID_FUZZ_CHECK(nlohmann::json::accept(response.body));
  }
  const bool token_route = response.route != Route::kOther && response.route != Route::kHealthz &&
                           response.route != Route::kReadyz && response.route != Route::kMetrics &&
                           response.route != Route::kReadyzSegment &&
                           response.route != Route::kStatusPage;  // public, holds no data
  if (response.status == 401) SNOWID_FUZZ_CHECK(guarded && token_route);
  if (guarded && token_route && response.status != 405) {
    // The token is checked right after the method, before the parameters;
    // the scheme name in any case (RFC 9110 11.1).
    std::string scheme(request.authorization.substr(0, 7));
    for (char& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool right = scheme == "bearer " && request.authorization.substr(7) == "fuzz-token";
    SNOWID_FUZZ_CHECK((response.status == 401) == !right);
  }
  // Neither fuzzed service has opaque_key_file: opaque routes are off.
  if (response.route == Route::kOpaqueEncode || response.route == Route::kOpaqueDecode) {
    SNOWID_FUZZ_CHECK(response.status != 200);
  }
  if (response.status != 200 || response.head) return 0;

  switch (response.route) {
    case Route::kId:
    case Route::kLeafSnowflake: {
      auto target = snowid::server::parse_target(request.target);
      SNOWID_FUZZ_CHECK(target.ok());
      SNOWID_FUZZ_CHECK(check_ids(*target, response, issued.ids) == 1);
      break;
    }
    case Route::kIds: {
      auto target = snowid::server::parse_target(request.target);
      SNOWID_FUZZ_CHECK(target.ok());
      auto count = snowid::server::parse_count(*target);
      SNOWID_FUZZ_CHECK(count.ok() && count->has_value() && **count >= 1 &&
                        **count <= service.config().max_batch);
      SNOWID_FUZZ_CHECK(check_ids(*target, response, issued.ids) == **count);
      break;
    }
    case Route::kSegment:
    case Route::kLeafSegment:
      // Only the store's one tag can succeed.
      snowid::fuzz::check_numbers(response.body, issued.segment_numbers);
      break;
    default:
      break;
  }
  return 0;
}
