// Node ids leased from etcd (v3 gRPC API), with a fenced reservation.
//
// Keys, under /snowid/<cluster>/:
//   claims/<node-id>        JSON naming the holder; attached to the holder's
//                           lease, so it vanishes when the lease ends
//   reservations/<node-id>  decimal Unix ms H; persistent. No ID under this
//                           node id has a time unit starting after H, and H
//                           is only written while the writer holds the claim.
// The invariant and the protocol are described in docs/design.md ("Cluster
// mode") and next to the code in src/coord/etcd_claim.cc.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowid/clock.h"
#include "snowid/coordinator.h"
#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid {

struct EtcdOptions {
  // "host:port" of one or more members; requests fail over between them.
  std::vector<std::string> endpoints;
  // The endpoints as the operator wrote them, for stats(); empty: `endpoints`
  // joined by commas.
  std::string endpoints_text;
  std::string cluster;  // the snowid cluster name: [A-Za-z0-9_.-]+
  Layout layout;        // its node bits give the range of node ids

  // Taken if free; else the lowest free id. See node_id_from_pod_name().
  std::optional<std::uint64_t> preferred_node_id;
  // Claim only the preferred id: while another node holds it, claim() fails
  // with kAlreadyExists naming the holder (the caller retries or gives up).
  // For fleets whose node ids must match their configuration.
  bool require_preferred_node_id = false;

  // Lease time to live. The node stops issuing `safety_margin` before the
  // lease could expire, counting from when it sent the last acknowledged
  // keep-alive; keep-alives go out every lease_ttl / 3.
  std::chrono::seconds lease_ttl{10};
  std::chrono::milliseconds safety_margin{1000};
  // The reservation is raised to now + reserve_ahead when less than
  // reserve_min_left is left, from the background thread.
  std::chrono::milliseconds reserve_ahead{3000};
  std::chrono::milliseconds reserve_min_left{1000};
  // Deadline of each request to etcd (each member tried gets its own).
  std::chrono::milliseconds request_timeout{2000};
  // Refuse to claim if this node's clock is further than this from the mean
  // wall-clock time the live peers published. 0 disables the check.
  std::chrono::milliseconds max_peer_clock_offset{10000};

  // Optional etcd authentication (Auth.Authenticate, then a "token" header).
  std::string user;
  std::string password;
  // Optional TLS: a CA file turns it on; cert and key files add a client certificate.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;

  // Addresses this node serves on, published in its claim for operators.
  std::vector<std::string> advertised_addresses;
  // Wall clock for reservations and the peer check; nullptr: SystemClock.
  Clock* clock = nullptr;
};

// "host:port,host:port" into endpoints (an "http://" prefix is accepted);
// kInvalidArgument naming the bad entry.
Result<std::vector<std::string>> parse_etcd_endpoints(std::string_view list);

// Checks the options and connects lazily; claim() does the first request.
Result<std::unique_ptr<Coordinator>> make_etcd_coordinator(const EtcdOptions& options);

// What `snowid cluster list` shows: one row per node id that has a claim or
// a reservation.
struct ClusterNode {
  std::uint64_t node_id = 0;
  bool claimed = false;
  std::string holder;                      // "host pid=N instance=…", "" if unclaimed
  std::string addresses;                   // comma-separated, as published
  std::chrono::milliseconds started{0};    // the holder's start time (Unix ms)
  std::chrono::milliseconds published_wall_time{0};
  std::optional<std::chrono::seconds> lease_time_left;
  std::chrono::milliseconds reservation{0};  // 0: none
};

Result<std::vector<ClusterNode>> list_cluster(const EtcdOptions& options);

// Deletes the claim of `node_id` (the reservation stays). Refuses with
// kUnavailable while the claim exists (its lease is alive) unless `force`,
// which also revokes the holder's lease. Ok if there is no claim.
Status release_node_id(const EtcdOptions& options, std::uint64_t node_id, bool force);

}  // namespace snowid
