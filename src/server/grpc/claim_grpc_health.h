// What snowidd's gRPC address answers while a cluster node claims its node
// id, as ClaimResponder does for the HTTP address: the standard health
// service (grpc.health.v1.Health) says "" SERVING (the process is alive) and
// snowid.v1.IdService NOT_SERVING (no ID can be issued yet), so Kubernetes'
// native gRPC probes and grpc-health-probe see the same as /healthz and
// /readyz. Every other method is UNIMPLEMENTED; no ID is ever issued here.
//
// Plain text: snowidd accepts the connections itself (the address is
// closed, deterministically, when this object is destroyed) and hands each
// to gRPC, at most kMaxConnections at once. TLS (tls_cert): gRPC's own
// listener, with the certificate the real gRPC listener uses.
//
// Thread-safety: start() and the destructor from one thread.
#pragma once

#include <memory>

#include "grpc_options.h"
#include "snowid/error.h"
#include "service_config.h"
#include "descriptor_budget.h"

namespace snowid::server {

class ClaimGrpcHealth {
 public:
  static constexpr std::size_t kMaxConnections = 256;

  // Starts answering on grpc.endpoint. Null when there is nothing to do (a
  // static node id, gRPC off, port 0); an error naming the address when it
  // cannot be bound or its certificate not loaded: the start then ends
  // before a node id is claimed.
  // At most kMaxConnections, and no more than the gRPC listener's share of
  // the open-file limit (`descriptors`).
  static Result<std::unique_ptr<ClaimGrpcHealth>> start(const ServiceConfig& config,
                                                        const GrpcOptions& grpc,
                                                        const DescriptorBudget& descriptors);

  // Closes the address and ends every call and connection.
  virtual ~ClaimGrpcHealth() = default;
};

}  // namespace snowid::server
