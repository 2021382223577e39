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

  Result<Claim> claim(std::optional<std::uint64_t> preferred) override;
  StepResult keep_alive() override;
  StepResult extend_reservation(bool force = false,
                                std::chrono::milliseconds wanted = std::chrono::milliseconds{
                                    0}) override;
  Status release(std::optional<std::chrono::milliseconds> last_issued) override;
  void abandon() override;
  void set_addresses(std::vector<std::string> addresses) override {
    record_.addresses = std::move(addresses);
    republish_ = true;
  }

  bool held() const override { return !token_.empty(); }
  std::uint64_t node_id() const override { return node_id_; }
  std::chrono::milliseconds reservation() const override { return reservation_; }
  std::chrono::nanoseconds deadline() const override { return deadline_; }
  const StoreCounters& counters() const override { return client_->counters(); }

 private:
  // One script: take `node_id` if free. True if it is ours now.
  Result<bool> try_claim(std::uint64_t node_id, std::string* holder);
  std::string ttl_ms() const;
  // Ok once every replica the server has now confirmed (WAIT) the writes
  // sent on connection number `connection`; at once without replicas.
  Status replicated(std::uint64_t connection);

  std::unique_ptr<RedisClient> client_;
  RedisOptions options_;
  Clock* clock_;
  WallClockWitness witness_;  // used by extend_reservation() alone
  ClaimRecord record_;
  std::uint64_t claims_made_ = 0;
  std::string token_;  // "": not held
  std::uint64_t node_id_ = 0;
  std::chrono::milliseconds floor_{0};
  std::chrono::milliseconds reservation_{0};
  std::chrono::nanoseconds deadline_{0};
  bool republish_ = false;
  std::chrono::milliseconds created_{0};  // the created key read with the claim
  bool created_now_ = false;              // this claim() wrote it
};

}  // namespace snowid::coord
