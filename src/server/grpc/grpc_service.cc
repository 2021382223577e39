#include "grpc_service.h"

#include <fmt/format.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "grpc_calls.h"
#include "grpc_hand_over.h"
#include "issuer.h"
#include "snowid/v1/snowid.grpc.pb.h"

namespace snowid::server {
namespace {

namespace v1 = ::snowid::v1;

constexpr int kMaxGrpcRequestBytes = 64 * 1024;
// Calls one connection may hold at once: HTTP/2's recommended minimum (RFC
// 9113, 6.5.2). A call held open without a message costs about 12 KB, so a
// connection's idle calls cost at most about 1.2 MB (beyond it, the client
// queues). gRPC keeps this limit once the client acknowledged the server's
// SETTINGS (docs/design.md, "Descriptors").
constexpr int kMaxGrpcStreamsPerConnection = 100;
// The name under which the health service reports the node's readiness.
constexpr std::chrono::milliseconds kHealthPeriod{200};

// The call's "authorization" metadata, nullopt if absent.
GrpcAuthorization authorization(const grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  const auto it = metadata.find("authorization");
  if (it == metadata.end()) return std::nullopt;
  return std::string_view(it->second.data(), it->second.size());
}

// Reads `buffer` as a `Message`: gRPC's callback API would answer a request
// that does not parse (a cut varint, a string that is not UTF-8) with
// UNIMPLEMENTED before any handler runs, so every method takes raw bytes
// and parses them here. False if the bytes are not such a message.
template <typename Message>
bool parse(const grpc::ByteBuffer& buffer, Message& message) {
  grpc::ByteBuffer copy(buffer);  // shares the slices; the reader consumes its own
  grpc::ProtoBufferReader reader(&copy);
  return reader.status().ok() && message.ParseFromZeroCopyStream(&reader);
}

template <typename Message>
grpc::Status serialize(const Message& message, grpc::ByteBuffer& buffer) {
  bool own = false;
  return grpc::SerializationTraits<Message>::Serialize(message, &buffer, &own);
}

// StreamIds: reads one request, answers it, reads the next. One read or
// write is outstanding at a time, so the members need no lock. Deletes
// itself when gRPC is done with the stream.
class IdStream final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  IdStream(IdService& service, GrpcAuthorization authorization)
      : service_(service), authorization_(authorization) {
    StartRead(&raw_request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::OK);  // the client finished its side
    request_.Clear();
    response_.Clear();
    if (!parse(raw_request_, request_)) {
      return Finish(unparsable_request(service_, authorization_, "NextIdsRequest"));
    }
    grpc::Status status = answer_next_ids(service_, authorization_, request_, response_);
    raw_response_.Clear();
    if (status.ok()) status = serialize(response_, raw_response_);
    if (!status.ok()) return Finish(status);
    StartWrite(&raw_response_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
    StartRead(&raw_request_);
  }

  void OnDone() override { delete this; }

 private:
  IdService& service_;
  // Points into the call's metadata, which outlives the stream.
  GrpcAuthorization authorization_;
  grpc::ByteBuffer raw_request_;
  grpc::ByteBuffer raw_response_;
  v1::NextIdsRequest request_;
  v1::NextIdsResponse response_;
};

// Ends a unary call answered inline with `status`.
grpc::ServerUnaryReactor* finish(grpc::CallbackServerContext* context, const grpc::Status& status) {
  auto* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

// A unary call on raw bytes: parses the request, answers it with
// `answer(service, authorization, request, response)` (grpc_calls.h) and
// serializes the response.
template <typename Request, typename Response, typename Answerer>
grpc::ServerUnaryReactor* unary(IdService& service, grpc::CallbackServerContext* context,
                                const grpc::ByteBuffer* raw_request, grpc::ByteBuffer* raw_response,
                                Answerer answer) {
  Request request;
  Response response;
  const GrpcAuthorization auth = authorization(context);
  if (!parse(*raw_request, request)) {
    return finish(context, unparsable_request(service, auth, Request::descriptor()->name()));
  }
  grpc::Status status = answer(service, auth, request, response);
  if (status.ok()) status = serialize(response, *raw_response);
  return finish(context, status);
}

// Every method on raw bytes (see parse()).
using S = v1::IdService;
using RawIdService = S::WithRawCallbackMethod_NextId<S::WithRawCallbackMethod_NextIds<
    S::WithRawCallbackMethod_Decode<S::WithRawCallbackMethod_Info<
        S::WithRawCallbackMethod_NextSegmentIds<S::WithRawCallbackMethod_NextFormattedIds<
            S::WithRawCallbackMethod_DecodeText<S::WithRawCallbackMethod_StreamIds<
                S::WithRawCallbackMethod_NextBusinessIds<S::WithRawCallbackMethod_CreateTag<
                    S::WithRawCallbackMethod_ListTags<S::WithRawCallbackMethod_GetTag<
                        S::WithRawCallbackMethod_ChangeTag<S::WithRawCallbackMethod_RetireTag<
                            S::Service>>>>>>>>>>>>>>;

// Every call is answered inline by grpc_calls.h.
class Handlers final : public RawIdService {
 public:
  explicit Handlers(IdService& service) : service_(service) {}

  grpc::ServerUnaryReactor* NextId(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override {
    return unary<v1::NextIdRequest, v1::NextIdResponse>(service_, context, request, response,
                                                        answer_next_id);
  }

  grpc::ServerUnaryReactor* NextIds(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override {
    context->AddInitialMetadata("snowid-issuer", std::string(issuer_token()));
    return unary<v1::NextIdsRequest, v1::NextIdsResponse>(service_, context, request, response,
                                                          answer_next_ids);
  }

  grpc::ServerUnaryReactor* Decode(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override {
    return unary<v1::DecodeRequest, v1::DecodeResponse>(service_, context, request, response,
                                                        answer_decode);
  }

  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override {
    return unary<v1::InfoRequest, v1::InfoResponse>(service_, context, request, response,
                                                    answer_info);
  }

  grpc::ServerUnaryReactor* NextSegmentIds(grpc::CallbackServerContext* context,
                                           const grpc::ByteBuffer* request,
                                           grpc::ByteBuffer* response) override {
    context->AddInitialMetadata("snowid-issuer", answer_issuer(service_.segment_numbers_rise()));
    return unary<v1::NextSegmentIdsRequest, v1::NextSegmentIdsResponse>(
        service_, context, request, response, answer_next_segment_ids);
  }

  grpc::ServerUnaryReactor* NextFormattedIds(grpc::CallbackServerContext* context,
                                             const grpc::ByteBuffer* request,
                                             grpc::ByteBuffer* response) override {
    return unary<v1::NextFormattedIdsRequest, v1::NextFormattedIdsResponse>(
        service_, context, request, response, answer_next_formatted_ids);
  }

  grpc::ServerUnaryReactor* DecodeText(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override {
    return unary<v1::DecodeTextRequest, v1::DecodeTextResponse>(service_, context, request,
                                                                response, answer_decode_text);
  }

  grpc::ServerUnaryReactor* NextBusinessIds(grpc::CallbackServerContext* context,
                                            const grpc::ByteBuffer* request,
                                            grpc::ByteBuffer* response) override {
    return unary<v1::NextBusinessIdsRequest, v1::NextBusinessIdsResponse>(
        service_, context, request, response, answer_next_business_ids);
  }

  grpc::ServerUnaryReactor* CreateTag(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override {
    return unary<v1::CreateTagRequest, v1::Tag>(service_, context, request, response,
                                                answer_create_tag);
  }

  grpc::ServerUnaryReactor* ListTags(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override {
    return unary<v1::ListTagsRequest, v1::ListTagsResponse>(service_, context, request, response,
                                                            answer_list_tags);
  }

  grpc::ServerUnaryReactor* GetTag(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override {
    return unary<v1::GetTagRequest, v1::Tag>(service_, context, request, response,
                                             answer_get_tag);
  }

  grpc::ServerUnaryReactor* ChangeTag(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override {
    return unary<v1::ChangeTagRequest, v1::Tag>(service_, context, request, response,
                                                answer_change_tag);
  }

  grpc::ServerUnaryReactor* RetireTag(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override {
    return unary<v1::RetireTagRequest, v1::Tag>(service_, context, request, response,
                                                answer_retire_tag);
  }

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StreamIds(
      grpc::CallbackServerContext* context) override {
    return new IdStream(service_, authorization(context));
  }

 private:
  IdService& service_;
};

// Accepts one pending connection on `listener`, non-blocking and
// close-on-exec; -1 with errno when there is none or it failed. Its own
// function, never inlined, so that tests/sanitizers/tsan.supp can name it:
// gRPC closes a handed-over descriptor inside its uninstrumented library,
// where ThreadSanitizer does not see the close, and would report the
// number's next use (say, by the state file) as a race with this accept.
__attribute__((noinline)) int accept_connection_for_grpc(int listener) {
  return ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

// Whether a failed accept is worth another wait at once: nothing was pending
// (another wake-up took it) or the peer left before it was taken.
bool accept_may_be_retried_now(int error) {
  return error == EAGAIN || error == EWOULDBLOCK || error == EINTR || error == ECONNABORTED ||
         error == EPROTO;
}

}  // namespace

struct GrpcServer::Impl {
  Impl(IdService& id_service, GrpcOptions grpc_options)
      : service(id_service), options(std::move(grpc_options)), handlers(std::make_unique<Handlers>(id_service)) {}

  // Plain text: snowidd accepts gRPC's connections itself, counts them
  // against max_connections and hands each to gRPC; one beyond it is closed
  // at once. A connection handed over is gRPC's to close: `handed` keeps
  // each one's descriptor and socket inode, and the sweep every 200 ms drops
  // those whose descriptor no longer holds that socket. (gRPC 1.51 has no
  // connection limit of its own.) Runs on `thread`.
  void accept() {
    acceptor->async_wait(
        boost::asio::ip::tcp::acceptor::wait_read, [this](boost::system::error_code ec) {
          if (ec == boost::asio::error::operation_aborted || !acceptor->is_open()) return;
          const int fd = ec ? -1 : accept_connection_for_grpc(acceptor->native_handle());
          if (fd >= 0) {
            hand_over(fd);
          } else if (ec || !accept_may_be_retried_now(errno)) {
            // Out of descriptors: try again shortly, never spin.
            retry.expires_after(std::chrono::milliseconds{100});
            retry.async_wait([this](boost::system::error_code wait) {
              if (!wait) accept();
            });
            return;
          }
          accept();
        });
  }

  // Gives the accepted connection `fd` (non-blocking, from accept4) to
  // gRPC, or closes it when max_connections are already open.
  void hand_over(int fd) {
    if (!handed->hand_over(*server, fd)) service.metrics().grpc_connection_refused();
    service.metrics().set_grpc_connections(handed->open());
  }

  void sweep() { service.metrics().set_grpc_connections(handed->sweep()); }

  // The standard health service (grpc.health.v1.Health): "" is SERVING
  // while the server runs (a liveness probe), snowid.v1.IdService follows
  // the node's readiness, as /readyz does (SERVING only while it can issue
  // IDs: claimed, clock past the mark, audit log writable). Runs on `thread`
  // every kHealthPeriod; a probe sees a change within that.
  void publish_health() {
    const bool ready = service.readiness().ok();
    if (health_published && ready == health_ready) return;
    server->GetHealthCheckService()->SetServingStatus(kIdServiceName, ready);
    health_ready = ready;
    health_published = true;
  }

  void publish_health_every_period() {
    publish_health();
    health_timer.expires_after(kHealthPeriod);
    health_timer.async_wait([this](boost::system::error_code ec) {
      if (!ec) publish_health_every_period();
    });
  }

  void sweep_every_period() {
    sweeper.expires_after(std::chrono::milliseconds{200});
    sweeper.async_wait([this](boost::system::error_code ec) {
      if (ec) return;
      sweep();
      sweep_every_period();
    });
  }

  IdService& service;
  const GrpcOptions options;
  // The service's handlers (a type of this file alone: held by its base).
  std::unique_ptr<grpc::Service> handlers;
  std::unique_ptr<grpc::Server> server;
  boost::asio::io_context io{1};
  std::optional<boost::asio::ip::tcp::acceptor> acceptor;
  boost::asio::steady_timer retry{io};
  boost::asio::steady_timer sweeper{io};
  boost::asio::steady_timer health_timer{io};
  bool health_published = false;  // only on `thread`, as health_ready
  bool health_ready = false;
  std::optional<GrpcHandOver> handed;  // plain text only; only on `thread`
  std::thread thread;
};

GrpcServer::GrpcServer(IdService& service, GrpcOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {}

GrpcServer::~GrpcServer() { shutdown(std::chrono::milliseconds{0}); }

namespace {

// Binds the configured address, so that an address in use or not ours is one
// line with the system's reason rather than gRPC's multi-line report.
Result<boost::asio::ip::tcp::acceptor> open_listener(boost::asio::io_context& io,
                                                     const Endpoint& wanted) {
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(wanted.host, ec);
  if (ec) return invalid_argument(fmt::format("grpc: '{}' is not an IP address", wanted.host));
  boost::asio::ip::tcp::acceptor acceptor(io);
  const boost::asio::ip::tcp::endpoint endpoint(address, wanted.port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
  // accept_connection_for_grpc must never block the acceptor's thread.
  if (!ec) acceptor.native_non_blocking(true, ec);
  if (ec) {
    return invalid_argument(
        fmt::format("grpc: cannot listen on {}: {}", wanted.text(), ec.message()));
  }
  return acceptor;
}

}  // namespace

Result<Endpoint> GrpcServer::start(const DescriptorBudget& descriptors) {
  const ServiceConfig& config = impl_->service.config();
  // make_listeners() makes a GrpcServer only while grpc is not "off".
  const Endpoint& wanted = impl_->options.endpoint.value();
  auto listener = open_listener(impl_->io, wanted);
  if (!listener.ok()) return listener.error();
  const bool tls = !config.net.tls_cert.empty();
  // The standard health service and server reflection (so grpcurl and
  // grpc_cli need no copy of the .proto): neither needs the token, as
  // /healthz, /readyz and the published .proto do not.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // Requests are a few bytes; anything large is a mistake or an attack.
  builder.SetMaxReceiveMessageSize(kMaxGrpcRequestBytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxGrpcStreamsPerConnection);
  // A connection with no call for idle_timeout is closed, as on HTTP, and
  // one that never completes its handshake within read_timeout.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(config.net.idle_timeout.count()));
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(config.net.read_timeout.count()));
  builder.RegisterService(impl_->handlers.get());
  int port = 0;
  if (tls) {
    // gRPC's own listener: the TLS handshake is gRPC's (its fd hand-over
    // takes plain text only), so grpc_max_connections is not enforced here.
    auto credentials = grpc_tls_credentials(config.net);
    if (!credentials.ok()) return credentials.error();
    listener->close();
    builder.AddListeningPort(wanted.text(), *credentials, &port);
  }
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || (tls && port == 0)) {
    impl_->server.reset();
    return Error{ErrorCode::kUnavailable, fmt::format("grpc: cannot listen on {}", wanted.text())};
  }
  if (!tls) {
    port = listener->local_endpoint().port();
    impl_->acceptor.emplace(std::move(*listener));
    impl_->handed.emplace(
        static_cast<std::size_t>(std::max<std::int64_t>(1, descriptors.connections_for("grpc"))));
    impl_->accept();
    impl_->sweep_every_period();
  }
  impl_->publish_health_every_period();
  impl_->thread = std::thread([this] { impl_->io.run(); });
  return Endpoint{wanted.host, static_cast<std::uint16_t>(port)};
}

void GrpcServer::set_connection_limit(std::int64_t max_connections) {
  if (!impl_->thread.joinable()) return;
  // `handed` lives on `thread`.
  boost::asio::post(impl_->io, [impl = impl_.get(), max_connections] {
    if (impl->handed)
      impl->handed->set_max(static_cast<std::size_t>(std::max<std::int64_t>(1, max_connections)));
  });
}

void GrpcServer::shutdown(std::chrono::milliseconds grace) {
  if (impl_->thread.joinable()) {
    boost::asio::post(impl_->io, [impl = impl_.get()] {
      boost::system::error_code ignored;
      if (impl->acceptor) impl->acceptor->close(ignored);
      impl->retry.cancel();
      impl->sweeper.cancel();
      impl->health_timer.cancel();
      // A periodic handler already queued with success (its timer expired
      // before the cancel) would arm its timer again and keep run() going:
      // stop the loop itself rather than wait for it to run out of work.
      impl->io.stop();
    });
    impl_->thread.join();
  }
  if (!impl_->server) return;
  // Every status NOT_SERVING from here on, Watch streams told so.
  impl_->server->GetHealthCheckService()->Shutdown();
  impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  impl_->server->Wait();
  impl_->server.reset();
}

}  // namespace snowid::server
