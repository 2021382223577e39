// Hostile bytes and messages on snowidd's gRPC port: raw bytes that are not
// HTTP/2 (or are broken HTTP/2), well-framed gRPC calls whose payload is not
// the protobuf message the method takes, and messages over the 64 KiB limit.
// Each gets an error (a closed connection, or a status code), never a crash,
// and the server keeps serving both APIs.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <future>
#include <string>

#include "abuse_server.h"
#include "snowid/v1/snowid.grpc.pb.h"

namespace snowid {
namespace {

namespace v1 = ::snowid::v1;
using test::AbuseTest;
using test::RawConnection;

const std::string kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
const std::string kSettings("\0\0\0\4\0\0\0\0\0", 9);

class GrpcAbuseTest : public AbuseTest {
 protected:
  void start_grpc() {
    start();
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server().grpc_port()),
                                   grpc::InsecureChannelCredentials());
  }

  static std::unique_ptr<grpc::ClientContext> context() {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds{10});
    return c;
  }

  // Calls `method` with `payload` as the request message's bytes, whatever they are.
  grpc::Status call_with_bytes(const std::string& method, const std::string& payload) {
    grpc::GenericStub stub(channel_);
    grpc::Slice slice(payload);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    auto ctx = context();
    stub.UnaryCall(ctx.get(), method, grpc::StubOptions(), &request, &response,
                   [&done](grpc::Status status) { done.set_value(std::move(status)); });
    return done.get_future().get();
  }

  // Both APIs still answer.
  void expect_serving() {
    v1::NextIdResponse id;
    const grpc::Status status =
        v1::IdService::NewStub(channel_)->NextId(context().get(), v1::NextIdRequest{}, &id);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_GT(id.id(), 0u);
    EXPECT_EQ(test::http_get(port(), "/v1/id").status, 200);
  }

  std::shared_ptr<grpc::Channel> channel_;
};

// Each connection is closed by the server (gRPC sends GOAWAY first where it
// can) within a few seconds, except where HTTP/2 lets it ignore a frame, and
// the server carries on.
TEST_F(GrpcAbuseTest, BytesThatAreNotValidHttp2CloseTheConnection) {
  start_grpc();
  const struct {
    const char* name;
    std::string bytes;
    bool closes = true;
  } attacks[] = {
      {"an HTTP/1.1 request", "GET /snowid.v1.IdService/NextId HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"random bytes", std::string(4096, '\x9c')},
      {"a wrong preface", "PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n" + kSettings},
      // A frame header announcing 16 MiB - 1 of an unknown type, over the
      // 16 KiB maximum frame size: FRAME_SIZE_ERROR.
      {"an oversized frame", kPreface + kSettings + std::string("\xff\xff\xff\xfe\0\0\0\0\1", 9)},
      // HEADERS on stream 1 whose header block is not HPACK:
      // COMPRESSION_ERROR, which ends the connection.
      {"a header block that is not HPACK",
       kPreface + kSettings + std::string("\0\0\x10\1\4\0\0\0\1", 9) + std::string(16, '\xff')},
      // DATA on a stream that was never opened: gRPC ignores the frame and
      // keeps the connection.
      {"data on an idle stream",
       kPreface + kSettings + std::string("\0\0\5\0\1\0\0\0\3", 9) + std::string(5, '\0'), false},
      // SETTINGS on a stream other than 0: PROTOCOL_ERROR.
      {"SETTINGS on stream 1", kPreface + std::string("\0\0\0\4\0\0\0\0\1", 9)},
  };
  for (const auto& attack : attacks) {
    SCOPED_TRACE(attack.name);
    RawConnection connection(server().grpc_port());
    ASSERT_TRUE(connection.send(attack.bytes));
    const auto outcome = connection.read_until_closed(
        attack.closes ? std::chrono::milliseconds{5000} : std::chrono::milliseconds{500});
    if (attack.closes) {
      EXPECT_TRUE(outcome.closed);
    }
  }
  expect_serving();
}

// gRPC frames the message correctly, but the bytes are not the request
// message: a status code comes back, never a crash. A request that does not
// parse (a cut varint, a string that is not UTF-8) gets INVALID_ARGUMENT
// naming the message: snowidd parses the bytes itself (gRPC's callback API
// would fail the call with UNIMPLEMENTED before any handler ran). Bytes that
// do parse, as an empty or odd message, get the method's own
// INVALID_ARGUMENT or RESOURCE_EXHAUSTED; only an unknown method or service
// is UNIMPLEMENTED.
TEST_F(GrpcAbuseTest, PayloadsThatAreNotTheRequestMessageGetAnErrorStatus) {
  start_grpc();
  const std::string next_ids = "/snowid.v1.IdService/NextIds";
  const struct {
    const char* name;
    std::string method;
    std::string payload;
    grpc::StatusCode code;
  } calls[] = {
      {"bytes that are not protobuf", next_ids, std::string(64, '\xff'),
       grpc::StatusCode::INVALID_ARGUMENT},
      {"a length-delimited field cut short", next_ids,
       std::string("\x12\x10"
                   "abc",
                   5),
       grpc::StatusCode::INVALID_ARGUMENT},
      {"a varint that never ends", next_ids, std::string("\x08") + std::string(11, '\x80'),
       grpc::StatusCode::INVALID_ARGUMENT},
      {"field number 0", next_ids, std::string("\x00\x01", 2), grpc::StatusCode::INVALID_ARGUMENT},
      // count given as a string: protobuf keeps it as an unknown field, so
      // the request parses, with count 0.
      {"count with the wrong wire type", next_ids,
       std::string("\x0a\x03"
                   "abc",
                   5),
       grpc::StatusCode::INVALID_ARGUMENT},
      {"an empty message", next_ids, "", grpc::StatusCode::INVALID_ARGUMENT},
      // A 64-bit varint count: refused as it is, never cut to its low bits,
      // and by the rule of every count above max_batch.
      {"a count over 32 bits", next_ids,
       std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11),
       grpc::StatusCode::RESOURCE_EXHAUSTED},
      {"an agent that is not UTF-8", next_ids, std::string("\x08\x01\x12\x02\xc3\x28", 6),
       grpc::StatusCode::INVALID_ARGUMENT},
      {"an unknown method", "/snowid.v1.IdService/Steal", "", grpc::StatusCode::UNIMPLEMENTED},
      {"an unknown service", "/evil.Service/NextId", "", grpc::StatusCode::UNIMPLEMENTED},
  };
  for (int round = 0; round < 20; ++round) {
    for (const auto& call : calls) {
      SCOPED_TRACE(call.name);
      const grpc::Status status = call_with_bytes(call.method, call.payload);
      EXPECT_EQ(status.error_code(), call.code) << status.error_message();
    }
  }
  // The refusal says what was wrong, on every method.
  for (const char* method : {"NextId", "NextIds", "Decode", "Info", "NextSegmentIds",
                             "NextFormattedIds", "DecodeText"}) {
    SCOPED_TRACE(method);
    const grpc::Status status = call_with_bytes(std::string("/snowid.v1.IdService/") + method,
                                                std::string("\x08") + std::string(11, '\x80'));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(status.error_message().find("is not a valid snowid.v1."), std::string::npos)
        << status.error_message();
  }
  expect_serving();
}

// snowidd takes requests of at most 64 KiB (they are a few bytes); gRPC
// refuses larger ones with RESOURCE_EXHAUSTED before any handler runs.
TEST_F(GrpcAbuseTest, MessagesOver64KiBAreRefused) {
  start_grpc();
  auto stub = v1::IdService::NewStub(channel_);
  v1::NextIdsRequest request;
  v1::NextIdsResponse response;
  request.set_count(1);
  request.set_agent(std::string(100 * 1024, 'a'));
  EXPECT_EQ(stub->NextIds(context().get(), request, &response).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  // Just under the limit, the message reaches the handler, which refuses
  // the agent: so it was the size that was refused above.
  request.set_agent(std::string(60 * 1024, 'a'));
  EXPECT_EQ(stub->NextIds(context().get(), request, &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  for (const std::size_t size : {std::size_t{65} << 10, std::size_t{1} << 20}) {
    SCOPED_TRACE(size);
    EXPECT_EQ(
        call_with_bytes("/snowid.v1.IdService/NextIds", std::string(size, '\xff')).error_code(),
        grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  expect_serving();
}

}  // namespace
}  // namespace snowid
