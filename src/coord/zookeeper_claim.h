// One node's claim on a node id in ZooKeeper (a LeasedClaim): an ephemeral
// znode that lives as long as the session, and a reservation znode whose
// version fences every write. Znodes and invariant in zookeeper_claim.cc.
//
// Thread-safety: none; one owner calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "leased_claim.h"
#include "snowid/clock.h"
#include "zookeeper_coordinator.h"
#include "zookeeper_session.h"

namespace snowid::coord {

// Znodes of a cluster (see zookeeper_coordinator.h).
std::string zookeeper_cluster_path(std::string_view cluster);
std::string zookeeper_claims_path(std::string_view cluster);
std::string zookeeper_claim_path(std::string_view cluster, std::uint64_t node_id);
std::string zookeeper_reservations_path(std::string_view cluster);
std::string zookeeper_reservation_path(std::string_view cluster, std::uint64_t node_id);
std::string zookeeper_created_path(std::string_view cluster);
// The cluster's ID space (its layout, described), readable by every user.
std::string zookeeper_id_space_path(std::string_view cluster);
// A znode each holder writes to read the leader's clock (its mtime).
std::string zookeeper_clock_path(std::string_view cluster);
// Where the tokens of `node_id`'s holders live, and the token of `session`.
std::string zookeeper_holders_path(std::string_view cluster, std::uint64_t node_id);
std::string zookeeper_token_path(std::string_view cluster, std::uint64_t node_id,
                                 std::int64_t session);

// A child name of claims/ or reservations/ as a node id, if it is one.
std::optional<std::uint64_t> zookeeper_node_id_of(std::string_view name);

class ZooKeeperClaim final : public LeasedClaim {
 public:
  // Requires: check_zookeeper_options(options) passed.
  explicit ZooKeeperClaim(const ZooKeeperOptions& options);

  Status release(std::optional<std::chrono::milliseconds> last_issued) override;
  void abandon() override;

  bool held() const override { return held_; }
  const StoreCounters& counters() const override { return counters_; }

 private:
  // Opens a new session and creates the cluster's znodes if missing; sets created_.
  Status open_session();
  // Opens a new session (open_session()), then reads who holds which id now
  // (ours from an older session are deleted), and the peers' clocks.
  Result<ClaimsSeen> read_claims(std::optional<std::uint64_t> preferred) override;
  // Creates the ephemeral claim of `node_id` and this session's token.
  // True if it is ours now.
  Result<bool> try_claim(std::uint64_t node_id, std::string* holder) override;
  // Reads the reservation and writes the first one above it, revoking the
  // former holders' tokens, until no former holder's write comes in between.
  Status take_reservation() override;
  // A check of this holder's token and claim (a write: the leader answers).
  StepResult renew_lease() override;
  // The leader's clock: the mtime a write of the cluster's clock znode gets.
  Result<StoreTime> read_store_time() override;
  std::string store_title() const override { return "ZooKeeper"; }
  // The znodes /snowid/<cluster>/id_space: the layout.
  Result<std::vector<ClusterIdSpace>> read_id_spaces() override;
  Status publish_id_space(const std::string& layout) override;
  // Learns the reservation's version first if a write left it uncertain.
  StepResult prepare_extension() override;
  // write_reservation(target, revoke_, &raced_ while claiming).
  StepResult write_reservation(std::chrono::milliseconds target) override;
  // Writes `target` and the claim record in one multi conditional on this
  // holder's token and the reservation's version, with the `revoke` ops.
  // `raced` (while claiming): set if the version had moved or a token to
  // revoke was gone, so that the caller reads again.
  StepResult write_reservation(std::chrono::milliseconds target, const std::vector<ZnodeOp>& revoke,
                               bool* raced);
  // After a write whose outcome is unknown or that found another version:
  // the reservation's version as it is, or kClaimLost if the token is gone.
  StepResult reconcile();
  // kClaimLost if `answer` says a znode of the claim is gone; else failure().
  StepResult lost_if_gone(const ZnodeAnswer& answer);
  StepResult failure(const ZnodeAnswer& answer, const std::string& path);
  // The deadline after a write or check that the leader acknowledged, sent
  // at `sent`; records it for later deadlines.
  std::chrono::nanoseconds deadline_after(std::chrono::nanoseconds sent);

  ZooKeeperOptions options_;
  StoreCounters counters_;
  std::unique_ptr<ZooKeeperSession> session_;
  bool held_ = false;
  std::string token_;             // this session's token znode while held
  int reservation_version_ = -1;  // -1: no reservation znode yet
  bool versions_uncertain_ = false;
  bool used_before_ = false;  // holders/<id> was there when claimed
  // A value found by reconcile(): the next write writes at least this.
  std::chrono::milliseconds at_least_{0};
  // Acknowledged writes (send, answer time) not yet known to the leader, and
  // the send time of the latest one that is (or the session's start).
  std::deque<std::pair<std::chrono::nanoseconds, std::chrono::nanoseconds>> acknowledged_;
  std::chrono::nanoseconds anchor_{0};
  // While take_reservation() writes the first reservation: the former
  // holders' tokens that write deletes, and whether it raced one of them.
  bool claiming_ = false;
  std::vector<ZnodeOp> revoke_;
  bool raced_ = false;
};

}  // namespace snowid::coord
