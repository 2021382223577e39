// snowidd's gRPC API (proto/snowid/v1/snowid.proto) on the grpc++ callback
// API: every call is answered inline on a gRPC thread, without blocking.
#pragma once

#include <chrono>
#include <memory>

#include "grpc_options.h"
#include "listener.h"
#include "service.h"

namespace snowid::server {

class GrpcServer final : public Listener {
 public:
  GrpcServer(IdService& service, GrpcOptions options);
  ~GrpcServer() override;
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  std::string_view protocol() const override { return "grpc"; }
  // Starts serving on the configured endpoint with at most
  // descriptors.connections_for("grpc") open connections (plain text; see
  // grpc_service.cc); returns the bound one.
  Result<Endpoint> start(const DescriptorBudget& descriptors) override;
  // Stops accepting calls and waits up to half a second for running ones.
  void stop_accepting() override { shutdown(std::chrono::milliseconds{500}); }
  // 0: stop_accepting() has waited for the calls under way (or cancelled them).
  std::int64_t open_connections() const override { return 0; }
  // Plain text only: with TLS gRPC accepts its connections itself.
  void set_connection_limit(std::int64_t max_connections) override;
  void stop() override { shutdown(std::chrono::milliseconds{0}); }

 private:
  // Stops accepting calls and waits up to `grace` for running ones.
  void shutdown(std::chrono::milliseconds grace);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace snowid::server
