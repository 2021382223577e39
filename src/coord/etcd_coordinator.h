// Node ids leased from etcd (v3 gRPC API), with a fenced reservation.
//
// Keys, under /snowid/<cluster>/:
//   claims/<node-id>        JSON naming the holder; attached to the holder's
//                           lease, so it vanishes when the lease ends
//   reservations/<node-id>  decimal Unix ms H; persistent. No ID under this
//                           node id has a time unit starting after H, and H
//                           is only written while the writer holds the claim.
//   created                 decimal Unix ms of the first claim after the
//                           cluster's keys began (or were lost); persistent.
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

#include "lease_options.h"
#include "snowid/clock.h"
#include "snowid/coordinator.h"
#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid {

struct EtcdOptions : LeaseOptions {
  // "host:port" of one or more members; requests fail over between them.
  std::vector<std::string> endpoints;
  // The endpoints as the operator wrote them, for stats(); empty: `endpoints`
  // joined by commas.
  std::string endpoints_text;

  // Optional etcd authentication (Auth.Authenticate, then a "token" header).
  std::string user;
  std::string password;
  // Optional TLS: a CA file turns it on; cert and key files add a client certificate.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
};

// "host:port,host:port" into endpoints (an "http://" prefix is accepted);
// kInvalidArgument naming the bad entry.
Result<std::vector<std::string>> parse_etcd_endpoints(std::string_view list);

// Checks the options and connects lazily; claim() does the first request.
Result<std::unique_ptr<Coordinator>> make_etcd_coordinator(const EtcdOptions& options);

Result<std::vector<ClusterNode>> list_cluster(const EtcdOptions& options);

// Deletes the claim of `node_id` (the reservation stays). Refuses with
// kUnavailable while the claim exists (its lease is alive) unless `force`,
// which also revokes the holder's lease. Ok if there is no claim.
Status release_node_id(const EtcdOptions& options, std::uint64_t node_id, bool force);

}  // namespace snowid
