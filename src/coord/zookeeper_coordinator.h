// Node ids leased from ZooKeeper, with the same fenced reservation as etcd.
//
// Znodes of a cluster C:
//   /snowid/C/claims/<node-id>        EPHEMERAL; the holder's claim record
//                                     (JSON). Its session is the lease.
//   /snowid/C/reservations/<node-id>  PERSISTENT; decimal Unix ms H. Every
//                                     write names the znode version its
//                                     writer last saw, so a node that lost
//                                     its id cannot raise the next holder's H.
//   /snowid/C/created                 PERSISTENT; Unix ms the cluster first
//                                     claimed in this ensemble.
// With a user and password set, the client signs in with digest auth and
// creates every znode under /snowid/C readable and writable by that user only.
// The invariant and the timing of the fence are stated in
// src/coord/zookeeper_claim.cc and docs/design.md.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lease_options.h"
#include "snowid/coordinator.h"
#include "snowid/error.h"

namespace snowid {

struct ZooKeeperOptions : LeaseOptions {
  // "host:port" of the ensemble's servers; the client library picks one and
  // moves to another, keeping the session, when it fails.
  std::vector<std::string> endpoints;
  // The endpoints as the operator wrote them, for stats(); empty: joined.
  std::string endpoints_text;
  // Optional digest authentication ("user:password").
  std::string user;
  std::string password;
  // The ensemble's tickTime (at least). A follower tells the leader which
  // sessions it heard from only when the leader pings it (every
  // tickTime / 2), so the fence counts a renewal only once a later write,
  // sent that long after its answer, was acknowledged.
  std::chrono::milliseconds tick_time{2000};
};

// "host:port,host:port" (a "zk://" prefix is accepted); kInvalidArgument
// naming the bad entry.
Result<std::vector<std::string>> parse_zookeeper_endpoints(std::string_view list);

// kInvalidArgument if the lease options do not work, or if tickTime / 2 +
// the safety margin is not below the renewal interval (lease_ttl / 3).
Status check_zookeeper_options(const ZooKeeperOptions& options);

// Checks the options; claim() opens the session.
Result<std::unique_ptr<Coordinator>> make_zookeeper_coordinator(const ZooKeeperOptions& options);

// `snowid cluster list` for ZooKeeper: every node id with a claim or a reservation.
Result<std::vector<ClusterNode>> list_cluster(const ZooKeeperOptions& options);

// Deletes the claim of `node_id` (the reservation stays). Refuses with
// kUnavailable while the claim exists unless `force`; its holder then finds
// the claim gone at its next renewal and stops issuing. Ok if there is no claim.
Status release_node_id(const ZooKeeperOptions& options, std::uint64_t node_id, bool force);

}  // namespace snowid
