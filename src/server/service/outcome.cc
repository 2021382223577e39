#include "outcome.h"

namespace snowid::server {

std::string_view protocol_name(Protocol protocol) {
  switch (protocol) {
    case Protocol::kHttp:
      return "http";
    case Protocol::kGrpc:
      return "grpc";
    case Protocol::kThrift:
      return "thrift";
    case Protocol::kResp:
      return "resp";
  }
  return "other";
}

std::string_view call_name(Call call) {
  switch (call) {
    case Call::kNextId:
      return "next_id";
    case Call::kNextIds:
      return "next_ids";
    case Call::kSegment:
      return "segment";
    case Call::kDecode:
      return "decode";
    case Call::kInfo:
      return "info";
    case Call::kNextUuids:
      return "next_uuids";
    case Call::kNextUlids:
      return "next_ulids";
    case Call::kNextObjectIds:
      return "next_objectids";
    case Call::kOpaque:
      return "opaque";
    case Call::kBusiness:
      return "business";
    case Call::kTagAdmin:
      return "tag_admin";
  }
  return "other";
}

std::string_view outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kUnauthenticated:
      return "unauthenticated";
    case Outcome::kInvalidArgument:
      return "invalid_argument";
    case Outcome::kTooLarge:
      return "too_large";
    case Outcome::kNotFound:
      return "not_found";
    case Outcome::kDisabled:
      return "disabled";
    case Outcome::kUnavailable:
      return "unavailable";
    case Outcome::kInternal:
      return "internal";
    case Outcome::kConflict:
      return "conflict";
  }
  return "other";
}

Answer generator_refusal(const Error& error) {
  const bool transient = error.code == ErrorCode::kClockBehind ||
                         error.code == ErrorCode::kStateFile ||
                         error.code == ErrorCode::kUnavailable;
  return Answer{transient ? Outcome::kUnavailable : Outcome::kInternal, error.message};
}

}  // namespace snowid::server
