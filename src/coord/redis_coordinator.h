// Node ids leased from Redis, with the same fenced reservation as etcd.
//
// Keys, all under one hash tag, so that they would share one slot of a Redis
// Cluster (which is not supported: the client follows no MOVED redirect):
//   snowid:{<cluster>}:claim:<node-id>        a hash {token, record}; its TTL
//                                             is the holder's lease
//   snowid:{<cluster>}:reservation:<node-id>  decimal Unix ms H; no TTL
//   snowid:{<cluster>}:created                Unix ms the cluster first
//                                             claimed in this store
// Every write under a claim is a Lua script that first compares the claim's
// token with the writer's, so a node that lost its id can never raise the
// reservation of the next holder. The invariant and the rule for a store that
// lost its data are stated in src/coord/redis_claim.cc and docs/design.md.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lease_options.h"
#include "snowid/coordinator.h"
#include "snowid/error.h"

namespace snowid {

struct RedisOptions : LeaseOptions {
  // "host:port" of one or more servers; requests go to the first that
  // answers and accepts writes (a replica's READONLY moves on to the next).
  // Empty when `sentinels` are given.
  std::vector<std::string> endpoints;
  // Or the primary that Redis Sentinel names (redis_sentinel.h): "host:port"
  // of one or more Sentinels and the name they monitor the primary under.
  // Give either endpoints or sentinels, not both.
  std::vector<std::string> sentinels;
  std::string sentinel_master;
  // Optional AUTH to the Sentinels (their requirepass); the servers take
  // `user` and `password` below.
  std::string sentinel_password;
  // The endpoints (or the Sentinels) as the operator wrote them, for
  // stats(); empty: joined.
  std::string endpoints_text;
  // Optional AUTH: a password alone (requirepass), or an ACL user and password.
  std::string user;
  std::string password;
  // The logical database (SELECT), 0 by default.
  unsigned database = 0;
};

// "host:port,host:port" (a "redis://" prefix is accepted); kInvalidArgument
// naming the bad entry.
Result<std::vector<std::string>> parse_redis_endpoints(std::string_view list);

// How stats() shows where the coordinator reaches Redis: `endpoints_text`,
// else the endpoints joined, or "sentinel:MASTER@HOST:PORT,...".
std::string redis_endpoints_text(const RedisOptions& options);

// Checks the options and connects lazily; claim() does the first request.
Result<std::unique_ptr<Coordinator>> make_redis_coordinator(const RedisOptions& options);

// `snowid cluster list` for Redis: every node id with a claim or a reservation.
Result<std::vector<ClusterNode>> list_cluster(const RedisOptions& options);

// Deletes the claim of `node_id` (the reservation stays). Refuses with
// kUnavailable while the claim exists unless `force`; its holder then finds
// the claim gone at its next renewal and stops issuing. Ok if there is no claim.
Status release_node_id(const RedisOptions& options, std::uint64_t node_id, bool force);

}  // namespace snowid
