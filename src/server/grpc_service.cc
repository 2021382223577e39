#include "grpc_service.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "grpc_calls.h"
#include "snowid/v1/snowid.grpc.pb.h"
#include "text_file.h"

namespace snowid::server {
namespace {

namespace v1 = ::snowid::v1;

constexpr int kMaxGrpcRequestBytes = 64 * 1024;
constexpr int kMaxGrpcStreamsPerConnection = 1000;

// The call's "authorization" metadata, nullopt if absent.
GrpcAuthorization authorization(const grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  const auto it = metadata.find("authorization");
  if (it == metadata.end()) return std::nullopt;
  return std::string_view(it->second.data(), it->second.size());
}

// Every call is answered inline by grpc_calls.h.
class Handlers final : public v1::IdService::CallbackService {
 public:
  explicit Handlers(IdService& service) : service_(service) {}

  grpc::ServerUnaryReactor* NextId(grpc::CallbackServerContext* context,
                                   const v1::NextIdRequest* request,
                                   v1::NextIdResponse* response) override {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(answer_next_id(service_, authorization(context), *request, *response));
    return reactor;
  }

  grpc::ServerUnaryReactor* NextIds(grpc::CallbackServerContext* context,
                                    const v1::NextIdsRequest* request,
                                    v1::NextIdsResponse* response) override {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(answer_next_ids(service_, authorization(context), *request, *response));
    return reactor;
  }

  grpc::ServerUnaryReactor* Decode(grpc::CallbackServerContext* context,
                                   const v1::DecodeRequest* request,
                                   v1::DecodeResponse* response) override {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(answer_decode(service_, authorization(context), *request, *response));
    return reactor;
  }

  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* context,
                                 const v1::InfoRequest* request,
                                 v1::InfoResponse* response) override {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(answer_info(service_, authorization(context), *request, *response));
    return reactor;
  }

  grpc::ServerUnaryReactor* NextSegmentIds(grpc::CallbackServerContext* context,
                                           const v1::NextSegmentIdsRequest* request,
                                           v1::NextSegmentIdsResponse* response) override {
    auto* reactor = context->DefaultReactor();
    reactor->Finish(answer_next_segment_ids(service_, authorization(context), *request, *response));
    return reactor;
  }

 private:
  IdService& service_;
};

}  // namespace

struct GrpcServer::Impl {
  explicit Impl(IdService& id_service) : service(id_service), handlers(id_service) {}
  IdService& service;
  Handlers handlers;
  std::unique_ptr<grpc::Server> server;
};

GrpcServer::GrpcServer(IdService& service) : impl_(std::make_unique<Impl>(service)) {}

GrpcServer::~GrpcServer() { shutdown(std::chrono::milliseconds{0}); }

namespace {

// Binds the configured address once, as gRPC will, so that an address in use
// or not ours is one line with the system's reason rather than gRPC's
// multi-line report. (Another process may still take the port between this
// check and gRPC's bind; gRPC's failure is then reported as below.)
Status check_can_listen(const Endpoint& wanted) {
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(wanted.host, ec);
  if (ec) return invalid_argument(fmt::format("grpc: '{}' is not an IP address", wanted.host));
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor probe(io);
  const boost::asio::ip::tcp::endpoint endpoint(address, wanted.port);
  probe.open(endpoint.protocol(), ec);
  if (!ec) probe.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) probe.bind(endpoint, ec);
  if (!ec) probe.listen(1, ec);
  if (ec) {
    return invalid_argument(
        fmt::format("grpc: cannot listen on {}: {}", wanted.text(), ec.message()));
  }
  return {};
}

}  // namespace

Result<Endpoint> GrpcServer::start() {
  const ServerConfig& config = impl_->service.config();
  if (Status usable = check_can_listen(config.grpc); !usable.ok()) return usable.error();
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!config.tls_cert.empty()) {
    grpc::SslServerCredentialsOptions tls;
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    auto cert = read_text_file(config.tls_cert, "tls_cert");
    if (!cert.ok()) return cert.error();
    auto key = read_text_file(config.tls_key, "tls_key");
    if (!key.ok()) return key.error();
    pair.cert_chain = std::move(*cert);
    pair.private_key = std::move(*key);
    tls.pem_key_cert_pairs.push_back(std::move(pair));
    credentials = grpc::SslServerCredentials(tls);
  }
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.grpc.text(), credentials, &port);
  // Requests are a few bytes; anything large is a mistake or an attack.
  builder.SetMaxReceiveMessageSize(kMaxGrpcRequestBytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxGrpcStreamsPerConnection);
  builder.RegisterService(&impl_->handlers);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || port == 0) {
    impl_->server.reset();
    return Error{ErrorCode::kUnavailable,
                 fmt::format("grpc: cannot listen on {}", config.grpc.text())};
  }
  return Endpoint{config.grpc.host, static_cast<std::uint16_t>(port)};
}

void GrpcServer::shutdown(std::chrono::milliseconds grace) {
  if (!impl_->server) return;
  impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  impl_->server->Wait();
  impl_->server.reset();
}

}  // namespace snowid::server
