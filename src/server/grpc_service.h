// snowidd's gRPC API (proto/snowid/v1/snowid.proto) on the grpc++ callback
// API: every call is answered inline on a gRPC thread, without blocking.
#pragma once

#include <memory>

#include "config.h"
#include "service.h"

namespace snowid::server {

class GrpcServer {
 public:
  explicit GrpcServer(IdService& service);
  ~GrpcServer();
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // Starts serving on the configured endpoint with at most `max_connections`
  // open connections (plain text; see grpc_service.cc); returns the bound one.
  Result<Endpoint> start(std::int64_t max_connections);
  // Stops accepting calls and waits up to `grace` for running ones.
  void shutdown(std::chrono::milliseconds grace);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace snowid::server
