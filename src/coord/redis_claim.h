// One node's claim on a node id in Redis (a LeasedClaim): the claim is a hash
// whose TTL is the lease, and every write under it is a Lua script that
// compares the holder's token first. Keys and invariant in redis_claim.cc.
//
// Thread-safety: none; one owner calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leased_claim.h"
#include "redis_client.h"
#include "redis_coordinator.h"
#include "snowid/clock.h"

namespace snowid::coord {

// Keys under snowid:{<cluster>}:
std::string redis_prefix(std::string_view cluster);
std::string redis_claim_key(std::string_view cluster, std::uint64_t node_id);
std::string redis_reservation_key(std::string_view cluster, std::uint64_t node_id);
std::string redis_created_key(std::string_view cluster);

// The node id at the end of a claim: or reservation: key, if it is one.
std::optional<std::uint64_t> redis_node_id_of_key(std::string_view key);
// Every key of `client` matching `pattern` (SCAN).
Result<std::vector<std::string>> redis_scan(RedisClient& client, const std::string& pattern);

class RedisClaim final : public LeasedClaim {
 public:
  // Requires: options passed validation (make_redis_coordinator does it).
  RedisClaim(std::unique_ptr<RedisClient> client, const RedisOptions& options);

  Status release(std::optional<std::chrono::milliseconds> last_issued) override;
  void abandon() override;

  bool held() const override { return !token_.empty(); }
  const StoreCounters& counters() const override { return client_->counters(); }

 private:
  // SCAN of the claim keys, then one script reading their records.
  Result<ClaimsSeen> read_claims(std::optional<std::uint64_t> preferred) override;
  // One script: take `node_id` if free. True if it is ours now.
  Result<bool> try_claim(std::uint64_t node_id, std::string* holder) override;
  StepResult renew_lease() override;
  // Redis's TIME.
  Result<StoreTime> read_store_time() override;
  std::string store_title() const override { return "Redis"; }
  // The hash snowid:~id-spaces: cluster -> layout.
  Result<std::vector<ClusterIdSpace>> read_id_spaces() override;
  Status publish_id_space(const std::string& layout) override;
  // One script checking the token, then WAIT for the replicas.
  StepResult write_reservation(std::chrono::milliseconds target) override;
  std::string ttl_ms() const;
  // Ok once every replica the server has now confirmed (WAIT) the writes
  // sent on connection number `connection`; at once without replicas.
  Status replicated(std::uint64_t connection);

  std::unique_ptr<RedisClient> client_;
  RedisOptions options_;
  std::uint64_t claims_made_ = 0;
  std::string token_;  // "": not held
};

}  // namespace snowid::coord
