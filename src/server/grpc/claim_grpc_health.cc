#include "claim_grpc_health.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "grpc_hand_over.h"

namespace snowid::server {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr std::chrono::milliseconds kAcceptRetry{100};

class ClaimGrpcHealthImpl final : public ClaimGrpcHealth {
 public:
  ClaimGrpcHealthImpl(const NetOptions& net, Endpoint endpoint, std::size_t max_connections)
      : net_(net), endpoint_(std::move(endpoint)), handed_(max_connections) {}

  ~ClaimGrpcHealthImpl() override {
    if (thread_.joinable()) {
      asio::post(io_, [this] {
        boost::system::error_code ignored;
        if (acceptor_) acceptor_->close(ignored);
        io_.stop();
      });
      thread_.join();
    }
    if (server_) {
      server_->GetHealthCheckService()->Shutdown();  // Watch streams told NOT_SERVING
      server_->Shutdown(std::chrono::system_clock::now());
      server_->Wait();
    }
  }

  Status start() {
    const bool tls = !net_.tls_cert.empty();
    std::optional<tcp::acceptor> acceptor;
    if (!tls) {
      boost::system::error_code ec;
      const auto address = asio::ip::make_address(endpoint_.host, ec);
      const tcp::endpoint endpoint(address, endpoint_.port);
      acceptor.emplace(io_);
      if (!ec) acceptor->open(endpoint.protocol(), ec);
      if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
      if (!ec) acceptor->bind(endpoint, ec);
      if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
      if (ec) return refuse(ec.message());
    }
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.SetMaxReceiveMessageSize(4096);  // a health request is a service name
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, 16);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                               static_cast<int>(net_.idle_timeout.count()));
    builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                               static_cast<int>(net_.read_timeout.count()));
    int port = 0;
    if (tls) {
      auto credentials = grpc_tls_credentials(net_);
      if (!credentials.ok()) return refuse(credentials.error().message);
      builder.AddListeningPort(endpoint_.text(), *credentials, &port);
    }
    server_ = builder.BuildAndStart();
    if (!server_ || (tls && port == 0)) {
      server_.reset();
      return refuse("gRPC could not listen there");
    }
    server_->GetHealthCheckService()->SetServingStatus("", true);
    server_->GetHealthCheckService()->SetServingStatus(kIdServiceName, false);
    if (!tls) {
      acceptor_.emplace(std::move(*acceptor));
      accept();
      thread_ = std::thread([this] { io_.run(); });
    }
    return {};
  }

 private:
  Status refuse(const std::string& why) const {
    return invalid_argument(fmt::format("grpc: cannot listen on {}: {}", endpoint_.text(), why));
  }

  void accept() {
    acceptor_->async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (!acceptor_->is_open()) return;
      if (ec) {  // out of descriptors, most likely: wait, never spin
        retry_.expires_after(kAcceptRetry);
        retry_.async_wait([this](boost::system::error_code wait) {
          if (!wait && acceptor_->is_open()) accept();
        });
        return;
      }
      handed_.hand_over(*server_, socket.release());  // beyond the limit: closed
      accept();
    });
  }

  const NetOptions& net_;
  const Endpoint endpoint_;
  std::unique_ptr<grpc::Server> server_;
  asio::io_context io_{1};
  std::optional<tcp::acceptor> acceptor_;  // plain text only
  asio::steady_timer retry_{io_};
  GrpcHandOver handed_;  // only on thread_
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<ClaimGrpcHealth>> ClaimGrpcHealth::start(
    const ServiceConfig& config, const GrpcOptions& grpc, const DescriptorBudget& descriptors) {
  if (config.coordinator.kind == "static" || !grpc.endpoint || grpc.endpoint->port == 0) {
    return std::unique_ptr<ClaimGrpcHealth>();  // nothing claims, gRPC is off, or its port is chosen later
  }
  const auto max_connections = static_cast<std::size_t>(std::clamp<std::int64_t>(
      descriptors.connections_for("grpc"), 1, static_cast<std::int64_t>(kMaxConnections)));
  auto health = std::make_unique<ClaimGrpcHealthImpl>(config.net, *grpc.endpoint, max_connections);
  if (Status started = health->start(); !started.ok()) return started.error();
  spdlog::info("grpc {}: health service answering while the node id is claimed",
               grpc.endpoint->text());
  return std::unique_ptr<ClaimGrpcHealth>(std::move(health));
}

}  // namespace snowid::server
