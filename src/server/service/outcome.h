// How a request to snowidd ends, in words every protocol shares. IdService
// answers each request with an Answer; each protocol's adapter turns the
// Outcome into its own status with one table (HTTP: outcome -> status code,
// gRPC: outcome -> grpc::StatusCode), and every call is counted under its
// protocol, call and outcome in one set of request metrics (metrics.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "snowid/error.h"

namespace snowid::server {

// The protocols snowidd serves, as the `protocol` label names them.
enum class Protocol : std::uint8_t { kHttp, kGrpc, kThrift, kResp };
inline constexpr std::size_t kProtocolCount = 4;
std::string_view protocol_name(Protocol protocol);  // "http", "grpc", "thrift", "resp"

// What a request asked for, whatever protocol carried it.
enum class Call : std::uint8_t {
  kNextId,
  kNextIds,
  kSegment,
  kDecode,
  kInfo,
  kNextUuids,      // UUIDv7 (id_formats.h)
  kNextUlids,      // ULID
  kNextObjectIds,  // MongoDB ObjectId
  kOpaque,         // an opaque ID's mapping either way (opaque_id.h)
  kBusiness,       // business IDs of a tag with a template (tags/tag_book.h)
  kTagAdmin,       // a tag created, listed, shown, changed or retired
};
inline constexpr std::size_t kCallCount = 11;
// "next_id", "next_ids", "segment", "decode", "info", "next_uuids", "next_ulids",
// "next_objectids", "opaque", "business", "tag_admin"
std::string_view call_name(Call call);

enum class Outcome : std::uint8_t {
  kOk,
  kUnauthenticated,  // no bearer token, or the wrong one
  kInvalidArgument,  // a count of 0, a bad agent, tag or ID
  kTooLarge,         // a count above max_batch
  kNotFound,         // an unknown segment tag
  kDisabled,         // segment mode is off, or opaque IDs are (no opaque_key_file)
  kUnavailable,      // may pass by itself: clock behind, state file, claim, store, audit log
  kInternal,         // anything else
  kConflict,         // the named thing's state refuses: a tag retired, existing, or a change
                     // that would repeat numbers; a period's numbers past their width
};
inline constexpr std::size_t kOutcomeCount = 9;
std::string_view outcome_name(Outcome outcome);  // "ok", "unauthenticated", …

// One request's outcome and, unless kOk, the message for the client.
struct Answer {
  Outcome outcome = Outcome::kOk;
  std::string message;

  bool ok() const { return outcome == Outcome::kOk; }
};

// A generator's refusal: kUnavailable if it is expected to pass by itself
// (clock behind, state file failing, claim not held), kInternal otherwise.
Answer generator_refusal(const Error& error);

}  // namespace snowid::server
