// Finding the Redis primary through Redis Sentinel: the route a RedisClient
// takes when it is given Sentinels instead of endpoints.
//
// Each time the client needs a connection (at the start, and after any try
// that failed: no connection, an I/O error, READONLY, LOADING, MASTERDOWN,
// NOREPLICAS), it asks the Sentinels in turn
// `SENTINEL get-master-addr-by-name MASTER` and connects to the first
// answer; the connection serves only once the server's ROLE says "master",
// since a Sentinel that has not seen a failover yet names the old primary,
// demoted or dead. A server that fails sends the next question to the
// Sentinel after the one that named it. The tries of one command go on, a
// short pause between them, until the request timeout has passed since the
// command began.
//
// What keeps a reservation safe across a failover is not here but in
// RedisClaim::replicated() (WAIT for every replica in sync), as with a list
// of endpoints, and, for an old primary cut off from the Sentinels but not
// from its clients, the primary's min-replicas-to-write (docs/cluster.md).
//
// Thread-safety: as RedisClient, one caller at a time.
#pragma once

#include <chrono>
#include <memory>
#include <string_view>
#include <vector>

#include "redis_client.h"
#include "redis_coordinator.h"

namespace snowid {

// "host:port,host:port" of Sentinels; kInvalidArgument naming the bad entry.
Result<std::vector<std::string>> parse_redis_sentinels(std::string_view list);

}  // namespace snowid

namespace snowid::coord {

// The route through options.sentinels to the primary they name
// options.sentinel_master; kInvalidArgument if a Sentinel's address does not
// parse or the master name is empty.
Result<std::unique_ptr<RedisRoute>> make_sentinel_route(const RedisOptions& options);

// The primary's "host:port" as the Sentinel at `sentinel` names it, asking
// with `options`' master name and Sentinel password, within `timeout`;
// kUnavailable saying why not (no answer, master unknown).
Result<std::string> ask_sentinel(const std::string& sentinel, const RedisOptions& options,
                                 std::chrono::milliseconds timeout);

}  // namespace snowid::coord
