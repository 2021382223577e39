#include "grpc_calls.h"

#include <fmt/format.h>

#include <limits>
#include <string>
#include <vector>

#include "snowid/decode.h"

namespace snowid::server {
namespace {

grpc::Status refusal(const Error& error) {
  return grpc::Status(
      is_transient(error) ? grpc::StatusCode::UNAVAILABLE : grpc::StatusCode::INTERNAL,
      error.message);
}

// INVALID_ARGUMENT for 0 and beyond 32 bits, RESOURCE_EXHAUSTED above max_batch.
grpc::Status check_count(const IdService& service, std::uint64_t count) {
  const std::uint32_t max = service.config().max_batch;
  if (count == 0 || count > std::numeric_limits<std::uint32_t>::max()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("count {} is not between 1 and {}", count, max));
  }
  if (count > max) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        fmt::format("count {} exceeds max_batch {}", count, max));
  }
  return grpc::Status::OK;
}

grpc::Status check_agent(const std::string& agent) {
  if (!agent.empty() && !valid_agent(agent)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "agent must match [a-zA-Z][a-zA-Z0-9-]* and be at most 64 characters");
  }
  return grpc::Status::OK;
}

grpc::Status authorize(const IdService& service, GrpcAuthorization authorization) {
  if (!service.authorized(authorization)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "a valid bearer token is required");
  }
  return grpc::Status::OK;
}

// Requires: authorize() passed and the count was checked.
template <typename Sink>
grpc::Status issue(IdService& service, std::uint32_t count, const std::string& agent, Sink&& sink) {
  grpc::Status status = check_agent(agent);
  if (!status.ok()) return status;
  thread_local std::vector<Id> ids;
  ids.clear();
  Status issued = service.issue(count, agent, ids);
  if (!issued.ok()) return refusal(issued.error());
  for (Id id : ids) sink(id);
  return grpc::Status::OK;
}

}  // namespace

grpc::Status answer_next_id(IdService& service, GrpcAuthorization authorization,
                            const v1::NextIdRequest& request, v1::NextIdResponse& response) {
  if (grpc::Status status = authorize(service, authorization); !status.ok()) return status;
  return issue(service, 1, request.agent(),
               [&response](Id id) { response.set_id(static_cast<std::uint64_t>(id)); });
}

grpc::Status answer_next_ids(IdService& service, GrpcAuthorization authorization,
                             const v1::NextIdsRequest& request, v1::NextIdsResponse& response) {
  if (grpc::Status status = authorize(service, authorization); !status.ok()) return status;
  if (grpc::Status counted = check_count(service, request.count()); !counted.ok()) return counted;
  const auto count = static_cast<std::uint32_t>(request.count());
  response.mutable_ids()->Reserve(static_cast<int>(count));
  return issue(service, count, request.agent(),
               [&response](Id id) { response.add_ids(static_cast<std::uint64_t>(id)); });
}

grpc::Status answer_decode(IdService& service, GrpcAuthorization authorization,
                           const v1::DecodeRequest& request, v1::DecodeResponse& response) {
  grpc::Status status = authorize(service, authorization);
  if (!status.ok()) return status;
  if (request.id() > static_cast<std::uint64_t>(std::numeric_limits<Id>::max())) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("ID {} exceeds 2^63-1", request.id()));
  }
  const auto id = static_cast<Id>(request.id());
  auto fields = decode(service.layout(), id);
  if (!fields.ok()) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, fields.error().message);
  response.set_id(request.id());
  response.set_timestamp_ms(fields->timestamp.count());
  response.set_time(format_time(fields->timestamp));
  response.set_datacenter(fields->datacenter);
  response.set_worker(fields->worker);
  response.set_sequence(fields->sequence);
  return grpc::Status::OK;
}

grpc::Status answer_info(IdService& service, GrpcAuthorization authorization,
                         const v1::InfoRequest&, v1::InfoResponse& response) {
  grpc::Status status = authorize(service, authorization);
  if (!status.ok()) return status;
  const auto info = service.info();
  response.set_version(kVersion);
  response.set_layout(describe(service.layout()));
  response.set_datacenter_id(info["datacenter_id"].get<std::uint64_t>());
  response.set_worker_id(info["worker_id"].get<std::uint64_t>());
  response.set_clock_policy(info["clock_policy"].get<std::string>());
  response.set_high_water_ms(info["high_water_ms"].get<std::int64_t>());
  response.set_ids_issued(info["ids_issued"].get<std::uint64_t>());
  response.set_uptime_seconds(info["uptime_seconds"].get<double>());
  response.set_info_json(info.dump());
  return grpc::Status::OK;
}

grpc::Status answer_next_segment_ids(IdService& service, GrpcAuthorization authorization,
                                     const v1::NextSegmentIdsRequest& request,
                                     v1::NextSegmentIdsResponse& response) {
  grpc::Status status = authorize(service, authorization);
  if (!status.ok()) return status;
  status = check_agent(request.agent());
  if (!status.ok()) return status;
  SegmentAllocator* segments = service.segments();
  if (segments == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "segment mode is off");
  }
  status = check_count(service, request.count());
  if (!status.ok()) return status;
  thread_local std::vector<std::int64_t> numbers;
  numbers.clear();
  Status issued =
      segments->next(request.tag(), static_cast<std::uint32_t>(request.count()), numbers);
  if (!issued.ok()) {
    const Error error = service.segment_error_for_client(request.tag(), issued.error());
    grpc::StatusCode code = grpc::StatusCode::INTERNAL;
    if (error.code == ErrorCode::kInvalidArgument) code = grpc::StatusCode::INVALID_ARGUMENT;
    if (error.code == ErrorCode::kNotFound) code = grpc::StatusCode::NOT_FOUND;
    if (error.code == ErrorCode::kUnavailable) code = grpc::StatusCode::UNAVAILABLE;
    return grpc::Status(code, error.message);
  }
  response.mutable_ids()->Add(numbers.begin(), numbers.end());
  return grpc::Status::OK;
}

}  // namespace snowid::server
