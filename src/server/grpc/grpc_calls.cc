#include "grpc_calls.h"

#include <fmt/format.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "id_json.h"
#include "info_json.h"
#include "snowid/decode.h"
#include "time_text.h"

namespace snowid::server {
namespace {

// gRPC's status for each outcome (outcome.h).
grpc::StatusCode grpc_code(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk:
      return grpc::StatusCode::OK;
    case Outcome::kUnauthenticated:
      return grpc::StatusCode::UNAUTHENTICATED;
    case Outcome::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case Outcome::kTooLarge:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case Outcome::kNotFound:
      return grpc::StatusCode::NOT_FOUND;
    case Outcome::kDisabled:
      return grpc::StatusCode::FAILED_PRECONDITION;
    case Outcome::kUnavailable:
      return grpc::StatusCode::UNAVAILABLE;
    case Outcome::kInternal:
      return grpc::StatusCode::INTERNAL;
    case Outcome::kConflict:
      return grpc::StatusCode::FAILED_PRECONDITION;
  }
  return grpc::StatusCode::INTERNAL;
}

// How gRPC's callers are authenticated: each call presents its
// "authorization" metadata.
Caller caller(GrpcAuthorization authorization) { return Caller::presenting(authorization); }

// Runs `answer` (returning an Answer), counts the call and converts its outcome.
template <typename Answerer>
grpc::Status counted(IdService& service, Call call, Answerer&& answer) {
  const Answer outcome = service.timed(Protocol::kGrpc, call, std::forward<Answerer>(answer));
  if (outcome.ok()) return grpc::Status::OK;
  return grpc::Status(grpc_code(outcome.outcome), outcome.message);
}

// The Tag message of `view`: the HTTP JSON's fields (tag_routes.h).
void set_tag(const tags::TagView& view, v1::Tag& out) {
  out.set_tag(view.tag);
  out.set_max_id(view.max_id);
  out.set_step(view.step);
  out.set_description(view.description);
  out.set_updated_at(view.updated_at);
  out.set_template_(view.settings.template_text);
  out.set_zone(view.settings.zone);
  out.set_business_step(view.settings.step);
  out.set_retired(view.settings.retired);
  out.set_version(view.settings.version);
}

// A tag administration call answered with one tag: `ask(view)` asks the
// service.
template <typename Asker>
grpc::Status answer_with_tag(IdService& service, v1::Tag& response, Asker&& ask) {
  return counted(service, Call::kTagAdmin, [&] {
    tags::TagView view;
    Answer answer = std::forward<Asker>(ask)(view);
    if (answer.ok()) set_tag(view, response);
    return answer;
  });
}

}  // namespace

grpc::Status answer_next_id(IdService& service, GrpcAuthorization authorization,
                            const v1::NextIdRequest& request, v1::NextIdResponse& response) {
  return counted(service, Call::kNextId, [&] {
    Id id = 0;
    Answer answer = service.next_id({caller(authorization), request.agent(), 1}, id);
    if (answer.ok()) response.set_id(static_cast<std::uint64_t>(id));
    return answer;
  });
}

grpc::Status answer_next_ids(IdService& service, GrpcAuthorization authorization,
                             const v1::NextIdsRequest& request, v1::NextIdsResponse& response) {
  return counted(service, Call::kNextIds, [&] {
    thread_local std::vector<Id> ids;
    ids.clear();
    Answer answer =
        service.next_ids({caller(authorization), request.agent(), request.count()}, ids);
    if (!answer.ok()) return answer;
    response.mutable_ids()->Reserve(static_cast<int>(ids.size()));
    for (Id id : ids) response.add_ids(static_cast<std::uint64_t>(id));
    return answer;
  });
}

grpc::Status answer_decode(IdService& service, GrpcAuthorization authorization,
                           const v1::DecodeRequest& request, v1::DecodeResponse& response) {
  return counted(service, Call::kDecode, [&] {
    IdFields fields;
    Answer answer = service.decode(caller(authorization), request.id(), fields);
    if (!answer.ok()) return answer;
    response.set_id(request.id());
    response.set_timestamp_ms(fields.timestamp.count());
    response.set_time(format_time(fields.timestamp));
    response.set_datacenter(fields.datacenter);
    response.set_worker(fields.worker);
    response.set_sequence(fields.sequence);
    return answer;
  });
}

grpc::Status answer_info(IdService& service, GrpcAuthorization authorization,
                         const v1::InfoRequest&, v1::InfoResponse& response) {
  return counted(service, Call::kInfo, [&] {
    NodeInfo info;
    Answer answer = service.info(caller(authorization), info);
    if (!answer.ok()) return answer;
    response.set_version(kVersion);
    response.set_layout(describe(info.generator.layout));
    response.set_datacenter_id(info.generator.datacenter_id);
    response.set_worker_id(info.generator.worker_id);
    response.set_clock_policy(clock_policy_name(info.generator.clock_policy));
    response.set_high_water_ms(info.stats.high_water.count());
    response.set_ids_issued(info.ids_issued);
    response.set_uptime_seconds(info.uptime.count());
    response.set_info_json(info_json_text(info));
    return answer;
  });
}

grpc::Status answer_next_segment_ids(IdService& service, GrpcAuthorization authorization,
                                     const v1::NextSegmentIdsRequest& request,
                                     v1::NextSegmentIdsResponse& response) {
  return counted(service, Call::kSegment, [&] {
    thread_local std::vector<std::int64_t> numbers;
    numbers.clear();
    Answer answer = service.next_segment_ids(
        {caller(authorization), request.agent(), request.tag(), request.count()}, numbers);
    if (answer.ok()) response.mutable_ids()->Add(numbers.begin(), numbers.end());
    return answer;
  });
}

grpc::Status answer_next_formatted_ids(IdService& service, GrpcAuthorization authorization,
                                       const v1::NextFormattedIdsRequest& request,
                                       v1::NextFormattedIdsResponse& response) {
  IdKind kind = IdKind::kUuid7;
  Call call = Call::kNextUuids;
  switch (request.kind()) {
    case v1::ID_KIND_UUID7:
      break;
    case v1::ID_KIND_ULID:
      kind = IdKind::kUlid;
      call = Call::kNextUlids;
      break;
    case v1::ID_KIND_OBJECTID:
      kind = IdKind::kObjectId;
      call = Call::kNextObjectIds;
      break;
    default:
      // The token first, as on every call: a caller without it is told
      // nothing about its arguments.
      return counted(service, Call::kNextUuids, [&] {
        if (Answer allowed = service.authorize(caller(authorization)); !allowed.ok())
          return allowed;
        return Answer{Outcome::kInvalidArgument,
                      fmt::format("kind {} is not ID_KIND_UUID7, ID_KIND_ULID or ID_KIND_OBJECTID",
                                  static_cast<int>(request.kind()))};
      });
  }
  return counted(service, call, [&] {
    thread_local std::vector<FormattedId> ids;
    ids.clear();
    Answer answer = service.next_formatted_ids(
        {caller(authorization), request.agent(), request.count()}, kind, ids);
    if (!answer.ok()) return answer;
    response.mutable_ids()->Reserve(static_cast<int>(ids.size()));
    response.mutable_texts()->Reserve(static_cast<int>(ids.size()));
    for (const FormattedId& id : ids) {
      const auto binary = id.binary();
      response.add_ids(reinterpret_cast<const char*>(binary.data()), binary.size());
      response.add_texts(to_text(id));
    }
    return answer;
  });
}

grpc::Status answer_decode_text(IdService& service, GrpcAuthorization authorization,
                                const v1::DecodeTextRequest& request,
                                v1::DecodeTextResponse& response) {
  return counted(service, Call::kDecode, [&] {
    DecodedId decoded;
    Answer answer = service.decode(caller(authorization), request.text(), decoded);
    if (!answer.ok()) return answer;
    const nlohmann::json fields = decoded_json(decoded);
    response.set_kind(fields.contains("kind") ? fields["kind"].get<std::string>() : "snowflake");
    response.set_json(fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return answer;
  });
}

grpc::Status answer_next_business_ids(IdService& service, GrpcAuthorization authorization,
                                      const v1::NextBusinessIdsRequest& request,
                                      v1::NextBusinessIdsResponse& response) {
  return counted(service, Call::kBusiness, [&] {
    thread_local std::vector<std::string> ids;
    ids.clear();
    const std::uint64_t count = request.count() == 0 ? 1 : request.count();
    Answer answer = service.next_business_ids(
        {caller(authorization), request.agent(), request.tag(), count}, ids);
    if (!answer.ok()) return answer;
    response.mutable_ids()->Reserve(static_cast<int>(ids.size()));
    for (std::string& id : ids) response.add_ids(std::move(id));
    return answer;
  });
}

grpc::Status answer_create_tag(IdService& service, GrpcAuthorization authorization,
                               const v1::CreateTagRequest& request, v1::Tag& response) {
  tags::TagCreation creation;
  creation.tag = request.tag();
  if (request.has_start()) creation.start = request.start();
  if (request.has_step()) creation.step = request.step();
  creation.description = request.description();
  creation.template_text = request.template_();
  if (request.has_zone()) creation.zone = request.zone();
  return answer_with_tag(service, response, [&](tags::TagView& view) {
    return service.create_tag(caller(authorization), creation, view);
  });
}

grpc::Status answer_list_tags(IdService& service, GrpcAuthorization authorization,
                              const v1::ListTagsRequest&, v1::ListTagsResponse& response) {
  return counted(service, Call::kTagAdmin, [&] {
    std::vector<tags::TagView> views;
    Answer answer = service.list_tags(caller(authorization), views);
    if (!answer.ok()) return answer;
    response.mutable_tags()->Reserve(static_cast<int>(views.size()));
    for (const tags::TagView& view : views) set_tag(view, *response.add_tags());
    return answer;
  });
}

grpc::Status answer_get_tag(IdService& service, GrpcAuthorization authorization,
                            const v1::GetTagRequest& request, v1::Tag& response) {
  return answer_with_tag(service, response, [&](tags::TagView& view) {
    return service.show_tag(caller(authorization), request.tag(), view);
  });
}

grpc::Status answer_change_tag(IdService& service, GrpcAuthorization authorization,
                               const v1::ChangeTagRequest& request, v1::Tag& response) {
  tags::TagChange change;
  if (request.has_step()) change.step = request.step();
  if (request.has_template_()) change.template_text = request.template_();
  if (request.has_zone()) change.zone = request.zone();
  return answer_with_tag(service, response, [&](tags::TagView& view) {
    return service.change_tag(caller(authorization), request.tag(), change, view);
  });
}

grpc::Status answer_retire_tag(IdService& service, GrpcAuthorization authorization,
                               const v1::RetireTagRequest& request, v1::Tag& response) {
  return answer_with_tag(service, response, [&](tags::TagView& view) {
    return service.retire_tag(caller(authorization), request.tag(), view);
  });
}

grpc::Status unparsable_request(IdService& service, GrpcAuthorization authorization,
                                std::string_view message) {
  if (Answer allowed = service.authorize(caller(authorization)); !allowed.ok()) {
    return grpc::Status(grpc_code(allowed.outcome), allowed.message);
  }
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                      fmt::format("the request is not a valid snowid.v1.{} message", message));
}

}  // namespace snowid::server
