#include "thrift_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <thrift/TApplicationException.h>
#include <thrift/TOutput.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <optional>
#include <stdexcept>

#include "Snowflake.h"
#include "snowid/clock.h"
#include "stream_server.h"

namespace snowid::server {

namespace {

using apache::thrift::TException;
using apache::thrift::protocol::TBinaryProtocol;
using apache::thrift::transport::TMemoryBuffer;

// A frame starts with its length: 4 bytes, big-endian.
constexpr std::size_t kFrameHeaderBytes = 4;

// The calls of Twitter's service, answered through IdService, and snowid's
// authenticate. One per connection: it holds the connection's
// authentication; used from one thread at a time.
class SnowflakeCalls final : public snowid::thrift::SnowflakeIf {
 public:
  // `trusted`: the peer is in thrift_trusted_networks (thrift_service.h).
  SnowflakeCalls(IdService& service, bool trusted)
      : service_(service), token_required_(service.tokens_required()) {
    if (trusted) caller_ = Caller::trusted();
  }

  bool authenticated() const { return !token_required_ || caller_.has_value(); }

  void authenticate(const std::string& token) override {
    if (!token_required_) return;
    std::optional<TokenProof> proof = service_.prove_token(token);
    if (!proof) {
      throw std::runtime_error("Unauthenticated: the token is not the server's bearer token");
    }
    proof_ = std::move(*proof);
    caller_ = Caller::proven(proof_);
  }

  std::int64_t get_worker_id() override {
    require_authentication();
    return static_cast<std::int64_t>(service_.generator().options().worker_id);
  }
  std::int64_t get_datacenter_id() override {
    require_authentication();
    return static_cast<std::int64_t>(service_.generator().options().datacenter_id);
  }
  std::int64_t get_timestamp() override {
    require_authentication();
    return SystemClock::instance().now_fresh().count();
  }

  std::int64_t get_id(const std::string& useragent) override {
    require_authentication();
    IdRequest request;
    if (caller_) request.caller = *caller_;
    request.agent = useragent;
    Id id = 0;
    const Answer answer = service_.timed(Protocol::kThrift, Call::kNextId, [&] {
      // Twitter's service required an agent; HTTP's "no agent" is not offered here.
      if (useragent.empty()) return Answer{Outcome::kInvalidArgument, "useragent is empty"};
      return service_.next_id(request, id);
    });
    if (answer.ok()) return static_cast<std::int64_t>(id);
    // A token that does not open Snowflake IDs is answered as none.
    if (answer.outcome == Outcome::kUnauthenticated) refuse_unauthenticated();
    // The generated processor answers a thrown exception with a Thrift
    // application exception carrying what() as its message.
    const char* name = answer.outcome == Outcome::kInvalidArgument ? "InvalidUserAgentError"
                                                                   : "InvalidSystemClock";
    throw std::runtime_error(fmt::format("{}: {}", name, answer.message));
  }

 private:
  // The generated processor answers a thrown exception with a Thrift
  // application exception carrying what() as its message.
  // A connection's token is checked at each call against the tokens in
  // force then: one removed from tokens_file is refused from its next call.
  void require_authentication() const {
    if (!authenticated() || (caller_ && !service_.authorize(*caller_).ok())) {
      refuse_unauthenticated();
    }
  }
  [[noreturn]] static void refuse_unauthenticated() {
    throw std::runtime_error(
        "Unauthenticated: call authenticate with the bearer token first (or connect from "
        "thrift_trusted_networks)");
  }

  IdService& service_;
  const bool token_required_;
  // How Thrift's callers are authenticated: a connection is trusted once it
  // called authenticate with the bearer token, or from the start if it comes
  // from thrift_trusted_networks; nullopt before.
  std::optional<Caller> caller_;
  // The token authenticate presented, which caller_ views.
  TokenProof proof_;
};

// One connection's framing: each complete frame at the front of the input is
// one call, run by the generated processor on memory buffers.
class ThriftConnection final : public StreamHandler {
 public:
  ThriftConnection(IdService& service, bool trusted, std::uint32_t max_frame_bytes)
      : calls_(std::make_shared<SnowflakeCalls>(service, trusted)),
        processor_(std::make_shared<snowid::thrift::SnowflakeProcessor>(calls_)),
        max_frame_bytes_(max_frame_bytes),
        request_(std::make_shared<TMemoryBuffer>()),
        answer_(std::make_shared<TMemoryBuffer>()),
        // No string or list in a call may claim more than a frame holds.
        request_protocol_(std::make_shared<TBinaryProtocol>(
            request_, static_cast<std::int32_t>(max_frame_bytes),
            static_cast<std::int32_t>(max_frame_bytes), false, true)),
        answer_protocol_(std::make_shared<TBinaryProtocol>(answer_)) {}

  bool authenticated() const override { return calls_->authenticated(); }

  Step consume(std::string_view input, std::string& output) override {
    Step step;
    while (output.size() <= kMaxGatheredAnswerBytes) {
      const std::string_view rest = input.substr(step.consumed);
      if (rest.size() < kFrameHeaderBytes) break;
      const auto* bytes = reinterpret_cast<const unsigned char*>(rest.data());
      const std::uint32_t length = (std::uint32_t{bytes[0]} << 24) |
                                   (std::uint32_t{bytes[1]} << 16) |
                                   (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
      // Not framed (an unframed call starts with 0x8001…), or too large:
      // nothing can be answered in a frame this client reads.
      if (length == 0 || length > max_frame_bytes_ - kFrameHeaderBytes) {
        step.close = true;
        return step;
      }
      if (rest.size() < kFrameHeaderBytes + length) break;
      if (!call(rest.substr(kFrameHeaderBytes, length), output)) {
        step.close = true;
        return step;
      }
      step.consumed += kFrameHeaderBytes + length;
    }
    return step;
  }

 private:
  // Runs one call, appending its framed answer (none for a oneway call);
  // false if the frame is not a call the processor can read.
  bool call(std::string_view frame, std::string& output) {
    // OBSERVE: the request is only read, never written through this pointer.
    request_->resetBuffer(reinterpret_cast<std::uint8_t*>(const_cast<char*>(frame.data())),
                          static_cast<std::uint32_t>(frame.size()), TMemoryBuffer::OBSERVE);
    answer_->resetBuffer();
    try {
      if (!processor_->process(request_protocol_, answer_protocol_, nullptr)) return false;
    } catch (const TException&) {
      return false;  // a frame the binary protocol cannot read
    }
    std::uint8_t* answer = nullptr;
    std::uint32_t length = 0;
    answer_->getBuffer(&answer, &length);
    if (length == 0) return true;
    const char header[kFrameHeaderBytes] = {
        static_cast<char>(length >> 24), static_cast<char>(length >> 16),
        static_cast<char>(length >> 8), static_cast<char>(length)};
    output.append(header, kFrameHeaderBytes);
    output.append(reinterpret_cast<const char*>(answer), length);
    return true;
  }

  std::shared_ptr<SnowflakeCalls> calls_;
  std::shared_ptr<snowid::thrift::SnowflakeProcessor> processor_;
  std::uint32_t max_frame_bytes_;
  std::shared_ptr<TMemoryBuffer> request_;
  std::shared_ptr<TMemoryBuffer> answer_;
  std::shared_ptr<TBinaryProtocol> request_protocol_;
  std::shared_ptr<TBinaryProtocol> answer_protocol_;
};

// Thrift's own diagnostics (a message of the wrong type, …) go to the log
// at debug level: a hostile client must not be able to fill stderr.
void log_thrift_output(const char* message) { spdlog::debug("thrift: {}", message); }

// A big-endian 32-bit number at `at` of `bytes` (which holds 4 bytes there).
std::uint32_t big_endian(std::string_view bytes, std::size_t at) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data() + at);
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
         std::uint32_t{b[3]};
}

}  // namespace

std::optional<bool> thrift_first_call_authenticates(std::string_view bytes) {
  constexpr std::string_view kAuthenticate = "authenticate";
  // The frame's length, then a strict header (0x8001, 0, the message type;
  // the name's length; the name) or an old one (the name's length; the name).
  if (bytes.size() < kFrameHeaderBytes + 4) return std::nullopt;
  std::size_t name_at = kFrameHeaderBytes + 4;
  std::uint32_t name_length = big_endian(bytes, kFrameHeaderBytes);
  if ((name_length & 0x80000000u) != 0) {
    if (bytes.size() < name_at + 4) return std::nullopt;
    name_length = big_endian(bytes, name_at);
    name_at += 4;
  }
  if (name_length != kAuthenticate.size()) return false;
  if (bytes.size() < name_at + name_length) return std::nullopt;
  return bytes.substr(name_at, name_length) == kAuthenticate;
}

std::unique_ptr<Listener> make_thrift_listener(boost::asio::io_context& acceptor_io,
                                               IdService& service, const ThriftOptions& thrift) {
  const StreamListenerOptions& options = thrift.listener;
  apache::thrift::GlobalOutput.setOutputFunction(log_thrift_output);
  auto metrics = std::make_shared<StreamMetrics>("thrift", std::vector<std::string>{});
  const std::uint32_t max_frame_bytes = options.max_pending_bytes;
  return std::make_unique<StreamServer>(
      acceptor_io, service, "thrift", options, std::move(metrics),
      [&service, max_frame_bytes](bool trusted) {
        return std::make_unique<ThriftConnection>(service, trusted, max_frame_bytes);
      },
      "", thrift_first_call_authenticates);
}

}  // namespace snowid::server
