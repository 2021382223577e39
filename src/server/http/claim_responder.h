// What snowidd's HTTP address answers while a cluster node claims its node
// id. A claim may take up to claim_timeout_ms (the store may be down at
// start), and until then no listener can serve IDs; an orchestrator whose
// liveness probe finds nothing listening would kill the node in the middle
// of the claim. So a cluster node binds its HTTP address first and answers
// there, until the real listeners start:
//
//   GET/HEAD /healthz   200 {"status":"ok","claim":"in progress"}
//   GET/HEAD /readyz    503 {"status":"not ready","error":"claiming a node id"}
//   anything else       503 {"error":"claiming a node id: ..."}, Retry-After: 1
//
// Every answer closes its connection; a request is read through the same
// RequestReader as the HTTP listener's, with its limits, within kReadTimeout,
// and at most kMaxConnections (or HTTP's share of the open-file limit) are
// open at once (more are closed unanswered);
// out of descriptors, accepting pauses 100 ms between attempts, never spins. No
// ID is ever issued here. With tls_cert the answers go over TLS with the
// listener's own certificate; the handshake counts against kReadTimeout.
//
// Thread-safety: start() and the destructor from one thread; the answers run
// on the responder's own thread.
#pragma once

#include <chrono>
#include <memory>

#include "http_options.h"
#include "snowid/error.h"
#include "service_config.h"
#include "descriptor_budget.h"

namespace snowid::server {

class ClaimResponder {
 public:
  // Probes must get through idle or slow clients: many connections, each
  // given at most kReadTimeout (or read_timeout_ms if shorter) for its request.
  static constexpr int kMaxConnections = 1024;
  static constexpr std::chrono::milliseconds kReadTimeout{2000};

  // Binds http.endpoint and starts answering. Null when there is nothing
  // to do (a static node id, port 0, which the real listener would bind
  // elsewhere); an error naming the address when it cannot be bound or its
  // certificate not loaded: the start then ends before a node id is
  // claimed, rather than after the claim, when the HTTP listener would meet
  // the same error.
  // At most kMaxConnections, and no more than the HTTP listener's share of
  // the open-file limit (`descriptors`), so a flood during the claim leaves
  // the coordinator's client its descriptors.
  static Result<std::unique_ptr<ClaimResponder>> start(const ServiceConfig& config,
                                                       const HttpOptions& http,
                                                       const DescriptorBudget& descriptors);

  // Stops answering and closes the address, so the HTTP listener can bind it.
  virtual ~ClaimResponder() = default;
};

}  // namespace snowid::server
