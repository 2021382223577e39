// The state snowidd's front ends share: configuration, the node (its node id
// and generator), the audit log, the metrics, and the facts /v1/info
// reports. Thread-safe: front ends call it from all their threads.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit_log.h"
#include "config.h"
#include "metrics.h"
#include "node.h"
#include "snowid/generator.h"
#include "snowid/segment.h"

namespace snowid::server {

inline constexpr const char* kVersion = "0.1.0";

// True if the generator's refusal is expected to pass by itself (clock
// behind, state file failing): HTTP 503 / gRPC UNAVAILABLE rather than 500 / INTERNAL.
bool is_transient(const Error& error);

// Tags /metrics and /v1/info list at most; the rest are summed up in
// snowid_segment_tags. Tags a node knows are those requested from it that
// exist in the store, so the store's tag count bounds them.
inline constexpr std::size_t kMaxSegmentTagsExported = 1000;

// True if `agent` matches [a-zA-Z][a-zA-Z0-9-]* and is at most 64 characters.
bool valid_agent(std::string_view agent);

class IdService {
 public:
  IdService(ServerConfig config, std::unique_ptr<Node> node);

  Node& node() { return *node_; }
  Generator& generator() { return node_->generator(); }
  const ServerConfig& config() const { return config_; }
  const Layout& layout() const { return node_->generator().options().layout; }
  Metrics& metrics() { return metrics_; }

  // Segment mode's allocator, owned by main(); null while segment mode is off.
  // Set before the servers start, cleared after they stopped.
  void set_segments(SegmentAllocator* segments) { segments_ = segments; }
  SegmentAllocator* segments() const { return segments_; }
  // Ok if no bearer_token is set, or `authorization` (the Authorization
  // header or gRPC metadata) is "Bearer <token>": the scheme name in any
  // case (RFC 9110 11.1), the token compared in constant time. Every
  // protocol asks this first, before it reads anything else of a request.
  bool authorized(std::optional<std::string_view> authorization) const;

  // What a client is told when a segment request fails: `error` as it is,
  // except that a store failure (kUnavailable) becomes a short reason naming
  // the tag only; the store's own text (host, port, the driver's message)
  // goes to the log (at most every 10 s) and to /v1/info, behind the token.
  Error segment_error_for_client(std::string_view tag, const Error& error) const;

  // {"enabled", "ready", "store_reachable", "reason"} for /readyz.
  nlohmann::json segment_readiness() const;
  // Ok if an ID can be issued now: the node's claim and generator (clock,
  // state file) and the audit log; otherwise the first reason.
  Status readiness() const;
  // From a timer every 100 ms: the node's upkeep, and a failing audit log's
  // check for room again.
  void maintain();

  // The audit log (option audit_log), or null; set before the servers start.
  void set_audit_log(std::unique_ptr<AuditLog> audit_log) { audit_log_ = std::move(audit_log); }
  const AuditLog* audit_log() const { return audit_log_.get(); }

  // Ports actually bound (port 0 in the config picks a free one).
  void set_bound_endpoints(Endpoint http, Endpoint grpc);

  // Appends `count` strictly increasing IDs to `out` and counts them for
  // `agent`. On a refusal, IDs already appended stay consumed and counted.
  // With an audit log, Ok means their records were written (audit_log.h);
  // if that fails the IDs must not be sent: kUnavailable.
  Status issue(std::uint32_t count, std::string_view agent, std::vector<Id>& out);
  // One ID, counted for `agent`, audited as above: the hot path of
  // single-ID requests.
  Result<Id> issue_one(std::string_view agent);

  nlohmann::json info() const;
  std::string metrics_text() const;

 private:
  ServerConfig config_;
  std::unique_ptr<Node> node_;
  SegmentAllocator* segments_ = nullptr;
  std::unique_ptr<AuditLog> audit_log_;
  Metrics metrics_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  Endpoint http_, grpc_;
};

}  // namespace snowid::server
