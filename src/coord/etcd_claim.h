// One node's claim on a node id in etcd, step by step: claim, keep alive,
// extend the reservation, release. The etcd coordinator drives it from its
// background thread; tests drive it directly. The protocol and its invariant
// are stated in etcd_claim.cc.
//
// Thread-safety: none; one owner calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "etcd_client.h"
#include "snowid/clock.h"
#include "snowid/coordinator.h"
#include "snowid/error.h"
#include "snowid/etcd_coordinator.h"

namespace etcdserverpb {
class TxnRequest;
}  // namespace etcdserverpb

namespace snowid::coord {

// Keys under /snowid/<cluster>/.
std::string claims_prefix(std::string_view cluster);
std::string claim_key(std::string_view cluster, std::uint64_t node_id);
std::string reservation_key(std::string_view cluster, std::uint64_t node_id);
std::string reservations_prefix(std::string_view cluster);
// The range_end that makes a Range cover every key starting with `prefix`.
std::string prefix_end(std::string_view prefix);
// The node id at the end of a claims/ or reservations/ key, if it is one.
std::optional<std::uint64_t> node_id_of_key(std::string_view key);

// The value of a claim key: who holds the node id.
struct ClaimRecord {
  std::string host;
  std::int64_t pid = 0;
  std::string instance;  // random per process, tells two holders on one host apart
  std::vector<std::string> addresses;
  std::chrono::milliseconds started{0};    // Unix ms the holder started
  std::chrono::milliseconds wall_time{0};  // holder's clock when it last wrote this
  // The longest the holder goes between two writes of this record: how old
  // wall_time may be when read (0: not published, by an older snowid).
  std::chrono::milliseconds refresh_every{0};
  std::uint64_t datacenter_id = 0;
  std::uint64_t worker_id = 0;

  std::string to_json() const;
  static Result<ClaimRecord> parse(std::string_view json);
  // "host pid=N instance=I", how operators are told who holds an id.
  std::string holder() const;
};

// A claim value as operators see it: the holder, or "an unknown holder" if
// the value does not parse.
std::string describe_claim_value(std::string_view json);

// A peer's clock as its claim record published it: the reading, and how old
// the reading may be when read (up to its refresh interval).
struct PeerClock {
  std::chrono::milliseconds wall_time{0};
  std::chrono::milliseconds max_age{0};
};

// Ok unless `now` is surely more than `max_offset` from the mean of the
// peers' clocks (or there are no peers): a reading up to max_age old
// vouches for a peer clock between wall_time and wall_time + max_age now,
// so only an offset beyond the bound across that whole range refuses.
// kUnavailable then, saying the range and how old the samples were.
Status check_peer_clocks(const std::vector<PeerClock>& peers, std::chrono::milliseconds now,
                         std::chrono::milliseconds max_offset);

// CLOCK_BOOTTIME: keeps counting through suspend, never steps.
std::chrono::nanoseconds boot_time_now();

// How a step that talks to etcd ended.
enum class StepOutcome {
  kDone,         // did what it should (or had nothing to do)
  kClaimLost,    // the claim is gone: lease expired or revoked, key deleted or taken
  kStoreFailed,  // etcd could not be reached or refused; the claim may still be held
};

struct StepResult {
  StepOutcome outcome = StepOutcome::kDone;
  std::string message;
};

class NodeClaim {
 public:
  // Requires: options passed validation (make_etcd_coordinator does it).
  NodeClaim(EtcdClient& client, const EtcdOptions& options);

  // Checks the peers' clocks, grants a lease, claims the preferred id if free
  // else the lowest free one, and writes the first reservation.
  // `preferred` overrides options.preferred_node_id (a re-claim prefers the old id).
  Result<Claim> claim(std::optional<std::uint64_t> preferred);
  // One keep-alive round; on success moves the deadline.
  StepResult keep_alive();
  // Raises the reservation to base + reserve_ahead if less than
  // reserve_min_left is left above base (always if `force`), refreshing the
  // published wall time. base is the later of the time the monotonic clock
  // vouches for (WallClockWitness: a forward glitch of the wall clock alone
  // does not move the reservation) and `wanted`, the unit the generator was
  // refused for (Unix ms; IDs are really wanted there). Succeeds only while
  // this claim is held.
  StepResult extend_reservation(bool force = false,
                                std::chrono::milliseconds wanted = std::chrono::milliseconds{0});
  // Deletes the claim (keeping the reservation, lowered to `last_issued` if
  // given) and revokes the lease. Ok if the claim was gone already.
  Status release(std::optional<std::chrono::milliseconds> last_issued);
  // Forgets the claim after it was lost; revokes its lease, best effort.
  void abandon();

  // Publishes `addresses` in the claim record with the next reservation write.
  void set_addresses(std::vector<std::string> addresses) {
    record_.addresses = std::move(addresses);
    republish_ = true;
  }

  bool held() const { return lease_id_ != 0; }
  std::uint64_t node_id() const { return node_id_; }
  std::int64_t lease_id() const { return lease_id_; }
  std::chrono::milliseconds floor() const { return floor_; }
  std::chrono::milliseconds reservation() const { return reservation_; }
  // CLOCK_BOOTTIME after which this node must not issue (see etcd_claim.cc).
  std::chrono::nanoseconds deadline() const { return deadline_; }
  const std::string& instance() const { return record_.instance; }

 private:
  // Adds to `txn` the compare that makes it apply only while the claim key is
  // the one our claim created (the fence of every write under our claim).
  void require_claim_is_ours(etcdserverpb::TxnRequest& txn) const;
  Result<bool> try_claim(std::uint64_t node_id);
  void set_deadline(std::chrono::nanoseconds sent, std::int64_t ttl_seconds);

  EtcdClient& client_;
  EtcdOptions options_;
  Clock* clock_;
  WallClockWitness witness_;  // used by extend_reservation() alone
  ClaimRecord record_;
  std::uint64_t node_id_ = 0;
  std::int64_t lease_id_ = 0;          // 0: not held
  std::int64_t create_revision_ = 0;   // of our claim key: identifies our claim
  std::chrono::milliseconds floor_{0};
  std::chrono::milliseconds reservation_{0};
  std::chrono::nanoseconds deadline_{0};
  bool republish_ = false;  // the record changed: write it at the next step
};

}  // namespace snowid::coord
