// The Redis coordinator: a RedisClaim (redis_claim.cc) driven by the leased
// coordinator (leased_coordinator.cc), and `snowid cluster`'s view of Redis.
#include "redis_coordinator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <map>

#include "cluster_admin.h"
#include "leased_coordinator.h"
#include "redis_claim.h"
#include "redis_client.h"

namespace snowid {

using std::chrono::milliseconds;

Result<std::vector<ClusterNode>> list_cluster(const RedisOptions& options) {
  auto client = coord::connect_checked(options, coord::RedisClient::connect);
  if (!client.ok()) return client.error();
  coord::RedisClient& redis = **client;
  std::map<std::uint64_t, ClusterNode> nodes;
  auto claims = coord::redis_scan(redis, coord::redis_prefix(options.cluster) + "claim:*");
  if (!claims.ok()) return claims.error();
  for (const std::string& key : *claims) {
    const auto id = coord::redis_node_id_of_key(key);
    if (!id) continue;
    auto record = redis.command({"HGET", key, "record"});
    if (!record.ok()) return record.error();
    if (record->is_nil()) continue;  // expired meanwhile
    ClusterNode& node = nodes[*id];
    node.node_id = *id;
    coord::set_claimed_by(node, record->text);
    auto ttl = redis.command({"PTTL", key});
    if (ttl.ok() && ttl->integer >= 0) {
      node.lease_time_left = std::chrono::seconds{ttl->integer / 1000};
    }
  }
  auto reservations =
      coord::redis_scan(redis, coord::redis_prefix(options.cluster) + "reservation:*");
  if (!reservations.ok()) return reservations.error();
  for (const std::string& key : *reservations) {
    const auto id = coord::redis_node_id_of_key(key);
    if (!id) continue;
    auto value = redis.command({"GET", key});
    if (!value.ok()) return value.error();
    ClusterNode& node = nodes[*id];
    node.node_id = *id;
    node.reservation = milliseconds{std::strtoll(value->text.c_str(), nullptr, 10)};
  }
  return coord::cluster_rows(std::move(nodes));
}

Status release_node_id(const RedisOptions& options, std::uint64_t node_id, bool force) {
  auto client = coord::connect_checked(options, coord::RedisClient::connect);
  if (!client.ok()) return client.error();
  const std::string key = coord::redis_claim_key(options.cluster, node_id);
  auto holder = (*client)->command({"HGET", key, "record"});
  if (!holder.ok()) return holder.error();
  if (holder->is_nil()) return {};
  if (!force) return coord::claim_is_alive(node_id, holder->text, "lease");
  auto deleted = (*client)->command({"DEL", key});
  if (!deleted.ok()) return deleted.error();
  return {};
}

std::string redis_endpoints_text(const RedisOptions& options) {
  if (!options.endpoints_text.empty()) return options.endpoints_text;
  if (options.sentinels.empty()) return fmt::format("{}", fmt::join(options.endpoints, ","));
  return fmt::format("sentinel:{}@{}", options.sentinel_master, fmt::join(options.sentinels, ","));
}

Result<std::unique_ptr<Coordinator>> make_redis_coordinator(const RedisOptions& options) {
  auto client = coord::connect_checked(options, coord::RedisClient::connect);
  if (!client.ok()) return client.error();
  return coord::make_leased_coordinator(
      std::make_unique<coord::RedisClaim>(std::move(*client), options),
      coord::leased_store("redis", options, options.endpoints, redis_endpoints_text(options)));
}

}  // namespace snowid
