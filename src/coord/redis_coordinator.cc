// The Redis coordinator: a RedisClaim (redis_claim.cc) driven by the leased
// coordinator (leased_coordinator.cc), and `snowid cluster`'s view of Redis.
#include "redis_coordinator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <map>

#include "leased_coordinator.h"
#include "redis_claim.h"
#include "redis_client.h"

namespace snowid {

using std::chrono::milliseconds;

namespace {

Result<std::unique_ptr<coord::RedisClient>> connect_checked(const RedisOptions& options) {
  Status valid = check_lease_options(options);
  if (!valid.ok()) return valid.error();
  return coord::RedisClient::connect(options);
}

}  // namespace

Result<std::unique_ptr<Coordinator>> make_redis_coordinator(const RedisOptions& options) {
  auto client = connect_checked(options);
  if (!client.ok()) return client.error();
  return coord::make_leased_coordinator(
      std::make_unique<coord::RedisClaim>(std::move(*client), options),
      coord::leased_store("redis", options, options.endpoints, options.endpoints_text));
}

Result<std::vector<ClusterNode>> list_cluster(const RedisOptions& options) {
  auto client = connect_checked(options);
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
    node.claimed = true;
    auto parsed = coord::ClaimRecord::parse(record->text);
    if (parsed.ok()) {
      node.holder = parsed->holder();
      node.addresses = fmt::format("{}", fmt::join(parsed->addresses, ","));
      node.started = parsed->started;
      node.published_wall_time = parsed->wall_time;
    } else {
      node.holder = "(unreadable claim value)";
    }
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
  std::vector<ClusterNode> rows;
  for (auto& [id, node] : nodes) rows.push_back(std::move(node));
  return rows;
}

Status release_node_id(const RedisOptions& options, std::uint64_t node_id, bool force) {
  auto client = connect_checked(options);
  if (!client.ok()) return client.error();
  const std::string key = coord::redis_claim_key(options.cluster, node_id);
  auto holder = (*client)->command({"HGET", key, "record"});
  if (!holder.ok()) return holder.error();
  if (holder->is_nil()) return {};
  if (!force) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("node id {} is claimed by {} and its lease is alive; stop that "
                             "node, or pass --force to take the id away from it",
                             node_id, coord::describe_claim_value(holder->text))};
  }
  auto deleted = (*client)->command({"DEL", key});
  if (!deleted.ok()) return deleted.error();
  return {};
}

}  // namespace snowid
