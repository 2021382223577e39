// What snowidd's gRPC calls (snowid.v1.IdService) check and answer, apart
// from the server (grpc_service.cc) so that tests and fuzz targets can run any
// request message through them without a channel. Each function fills
// `response` and returns OK, or returns the error status the call ends with.
//
// `authorization` is the call's "authorization" metadata, nullopt if absent;
// with a bearer token configured it must be "Bearer <token>".
//
// Thread-safety: as IdService; call from any thread.
#pragma once

#include <grpcpp/support/status.h>

#include <optional>
#include <string_view>

#include "service.h"
#include "snowid/v1/snowid.pb.h"

namespace snowid::server {

using GrpcAuthorization = std::optional<std::string_view>;

grpc::Status answer_next_id(IdService& service, GrpcAuthorization authorization,
                            const v1::NextIdRequest& request, v1::NextIdResponse& response);

// INVALID_ARGUMENT for count 0, RESOURCE_EXHAUSTED above max_batch (any
// count above it, as on every call that takes a count).
grpc::Status answer_next_ids(IdService& service, GrpcAuthorization authorization,
                             const v1::NextIdsRequest& request, v1::NextIdsResponse& response);

// INVALID_ARGUMENT for an ID above 2^63-1 or with bits beyond the layout.
grpc::Status answer_decode(IdService& service, GrpcAuthorization authorization,
                           const v1::DecodeRequest& request, v1::DecodeResponse& response);

grpc::Status answer_info(IdService& service, GrpcAuthorization authorization,
                         const v1::InfoRequest& request, v1::InfoResponse& response);

// May wait for the segment store (up to segment_request_timeout_ms) when the
// tag's buffers are empty; in steady state the prefetch avoids that.
grpc::Status answer_next_segment_ids(IdService& service, GrpcAuthorization authorization,
                                     const v1::NextSegmentIdsRequest& request,
                                     v1::NextSegmentIdsResponse& response);

// INVALID_ARGUMENT for an unspecified kind and as answer_next_ids.
grpc::Status answer_next_formatted_ids(IdService& service, GrpcAuthorization authorization,
                                       const v1::NextFormattedIdsRequest& request,
                                       v1::NextFormattedIdsResponse& response);

// INVALID_ARGUMENT for text of no known shape.
grpc::Status answer_decode_text(IdService& service, GrpcAuthorization authorization,
                                const v1::DecodeTextRequest& request,
                                v1::DecodeTextResponse& response);

// Business IDs (count 0 means 1); as answer_next_segment_ids otherwise, and
// FAILED_PRECONDITION for a retired tag or a period whose numbers outgrew
// the template's width.
grpc::Status answer_next_business_ids(IdService& service, GrpcAuthorization authorization,
                                      const v1::NextBusinessIdsRequest& request,
                                      v1::NextBusinessIdsResponse& response);

// Tag administration (admin token): the Tag as GET /v1/tags/{tag} shows it.
grpc::Status answer_create_tag(IdService& service, GrpcAuthorization authorization,
                               const v1::CreateTagRequest& request, v1::Tag& response);
grpc::Status answer_list_tags(IdService& service, GrpcAuthorization authorization,
                              const v1::ListTagsRequest& request,
                              v1::ListTagsResponse& response);
grpc::Status answer_get_tag(IdService& service, GrpcAuthorization authorization,
                            const v1::GetTagRequest& request, v1::Tag& response);
grpc::Status answer_change_tag(IdService& service, GrpcAuthorization authorization,
                               const v1::ChangeTagRequest& request, v1::Tag& response);
grpc::Status answer_retire_tag(IdService& service, GrpcAuthorization authorization,
                               const v1::RetireTagRequest& request, v1::Tag& response);

// A request whose bytes are not a `message` (a cut varint, a string that
// is not UTF-8): UNAUTHENTICATED if the token check fails (a caller without
// it is told nothing about its arguments), else INVALID_ARGUMENT.
grpc::Status unparsable_request(IdService& service, GrpcAuthorization authorization,
                                std::string_view message);

}  // namespace snowid::server
