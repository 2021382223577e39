// Fuzz target: the request messages of snowid's gRPC API (snowid.v1,
// proto/snowid/v1/snowid.proto): the bytes as each request message
// (ParseFromArray), and one of them through the checks and the answer of
// its call (src/server/grpc_calls.h: bearer token, agent, count, ID range,
// segment tag) on a real service of fuzz_support.h, without a channel.
//
// Input: one selector byte, then the serialized message. The selector picks
// the call (% 5: NextId, NextIds, Decode, Info, NextSegmentIds), the service
// (/ 5 % 2: open, guarded) and the authorization metadata (/ 10 % 3: none,
// "Bearer fuzz-token", a wrong token). The seeds were made with
// `protoc --encode=snowid.v1.<Message> proto/snowid/v1/snowid.proto`.
//
// Checks beyond "no crash, no sanitizer report": UNAUTHENTICATED exactly
// when the guarded service gets no valid token (a bad count is refused
// first); NextIds returns `count` IDs; Decode succeeds exactly for the IDs
// the layout can hold; every ID and segment number issued is greater than
// those before.
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/support/status.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "fuzz_support.h"
#include "grpc_calls.h"
#include "snowid/v1/snowid.pb.h"

namespace {

namespace v1 = snowid::v1;
using snowid::fuzz::ServiceKind;

struct Checks {
  snowid::fuzz::IncreasingCheck ids;
  snowid::fuzz::IncreasingCheck segment_numbers;
};

template <typename Message>
bool parse(Message& message, const std::uint8_t* data, std::size_t size) {
  return message.ParseFromArray(data, static_cast<int>(size));
}

}  // namespace

// Protobuf logs every string field of invalid UTF-8 it refuses to parse;
// the fuzzer makes many.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static std::array<Checks, 2> checks;
  const unsigned selector = data[0];
  const unsigned call = selector % 5;
  const bool guarded = selector / 5 % 2 == 1;
  constexpr std::array<std::optional<std::string_view>, 3> kAuthorizations{
      std::nullopt, "Bearer fuzz-token", "Bearer wrong"};
  const std::optional<std::string_view> authorization = kAuthorizations[selector / 10 % 3];
  const bool authorized = !guarded || authorization == "Bearer fuzz-token";
  const std::uint8_t* message = data + 1;
  const std::size_t message_size = size - 1;

  auto& service = snowid::fuzz::service(guarded ? ServiceKind::kGuarded : ServiceKind::kOpen);
  Checks& issued = checks[guarded ? 1 : 0];
  grpc::Status status;
  switch (call) {
    case 0: {
      v1::NextIdRequest request;
      if (!parse(request, message, message_size)) return 0;
      v1::NextIdResponse response;
      status = snowid::server::answer_next_id(service, authorization, request, response);
      if (status.ok()) issued.ids.next(static_cast<std::int64_t>(response.id()));
      break;
    }
    case 1: {
      v1::NextIdsRequest request;
      if (!parse(request, message, message_size)) return 0;
      v1::NextIdsResponse response;
      status = snowid::server::answer_next_ids(service, authorization, request, response);
      // The token first, then the count: 0 is invalid, anything above
      // max_batch (however far) too many.
      const std::uint32_t max = service.config().max_batch;
      if (authorized && (request.count() == 0 || request.count() > max)) {
        SNOWID_FUZZ_CHECK(status.error_code() == (request.count() == 0
                                                      ? grpc::StatusCode::INVALID_ARGUMENT
                                                      : grpc::StatusCode::RESOURCE_EXHAUSTED));
        return 0;
      }
      if (status.ok()) {
        SNOWID_FUZZ_CHECK(static_cast<std::uint32_t>(response.ids_size()) == request.count());
        for (std::uint64_t id : response.ids()) issued.ids.next(static_cast<std::int64_t>(id));
      }
      break;
    }
    case 2: {
      v1::DecodeRequest request;
      if (!parse(request, message, message_size)) return 0;
      v1::DecodeResponse response;
      status = snowid::server::answer_decode(service, authorization, request, response);
      if (authorized) {
        const auto facts = snowid::layout_facts(service.layout(), std::chrono::milliseconds{0});
        SNOWID_FUZZ_CHECK(status.ok() ==
                          (request.id() <= static_cast<std::uint64_t>(facts.max_id)));
      }
      break;
    }
    case 3: {
      v1::InfoRequest request;
      if (!parse(request, message, message_size)) return 0;
      v1::InfoResponse response;
      status = snowid::server::answer_info(service, authorization, request, response);
      if (authorized) SNOWID_FUZZ_CHECK(status.ok());
      break;
    }
    default: {
      v1::NextSegmentIdsRequest request;
      if (!parse(request, message, message_size)) return 0;
      v1::NextSegmentIdsResponse response;
      status = snowid::server::answer_next_segment_ids(service, authorization, request, response);
      if (status.ok()) {
        SNOWID_FUZZ_CHECK(request.tag() == snowid::fuzz::kSegmentTag);
        SNOWID_FUZZ_CHECK(static_cast<std::uint32_t>(response.ids_size()) == request.count());
        for (std::uint64_t number : response.ids()) {
          issued.segment_numbers.next(static_cast<std::int64_t>(number));
        }
      }
      break;
    }
  }
  SNOWID_FUZZ_CHECK((status.error_code() == grpc::StatusCode::UNAUTHENTICATED) == !authorized);
  SNOWID_FUZZ_CHECK(status.error_code() != grpc::StatusCode::INTERNAL);
  return 0;
}
