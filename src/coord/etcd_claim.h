// One node's claim on a node id in etcd (a LeasedClaim): claim, keep alive,
// extend the reservation, release. The leased coordinator drives it from its
// background thread; tests drive it directly. The protocol and its invariant
// are stated in etcd_claim.cc.
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

#include "etcd_client.h"
#include "etcd_coordinator.h"
#include "leased_claim.h"
#include "snowid/clock.h"
#include "snowid/coordinator.h"
#include "snowid/error.h"

namespace etcdserverpb {
class TxnRequest;
}  // namespace etcdserverpb

namespace snowid::coord {

// Keys under /snowid/<cluster>/.
std::string claims_prefix(std::string_view cluster);
std::string claim_key(std::string_view cluster, std::uint64_t node_id);
std::string reservation_key(std::string_view cluster, std::uint64_t node_id);
std::string reservations_prefix(std::string_view cluster);
std::string created_key(std::string_view cluster);
// The range_end that makes a Range cover every key starting with `prefix`.
std::string prefix_end(std::string_view prefix);
// The node id at the end of a claims/ or reservations/ key, if it is one.
std::optional<std::uint64_t> node_id_of_key(std::string_view key);

class EtcdClaim final : public LeasedClaim {
 public:
  // Requires: options passed validation (make_etcd_coordinator does it).
  EtcdClaim(EtcdClient& client, const EtcdOptions& options);
  // The same, owning its client.
  EtcdClaim(std::unique_ptr<EtcdClient> client, const EtcdOptions& options);

  // Also revokes the lease.
  Status release(std::optional<std::chrono::milliseconds> last_issued) override;
  // Revokes the lease, best effort.
  void abandon() override;

  bool held() const override { return lease_id_ != 0; }
  std::int64_t lease_id() const { return lease_id_; }
  // Why the created marker this claim wrote holds our clock alone, etcd's
  // time being unreadable (a lower floor if our clock is behind); "" if it
  // holds etcd's time too, or this claim found the marker there.
  const std::string& marker_time_unread() const { return marker_time_unread_; }
  const StoreCounters& counters() const override { return client_.counters(); }

 private:
  // One keep-alive of the lease, and a Txn checking that the claim key is ours.
  StepResult renew_lease() override;
  // etcd's HTTP Date (etcd_server_time.h): whole seconds, resolution 1 s.
  Result<StoreTime> read_store_time() override;
  std::string store_title() const override { return "etcd"; }
  // The keys /snowid/~id-spaces/<cluster>: the layout.
  Result<std::vector<ClusterIdSpace>> read_id_spaces() override;
  Status publish_id_space(const std::string& layout) override;
  // One Txn that applies only while the claim key is ours.
  StepResult write_reservation(std::chrono::milliseconds target) override;
  // Adds to `txn` the compare that makes it apply only while the claim key is
  // the one our claim created (the fence of every write under our claim).
  void require_claim_is_ours(etcdserverpb::TxnRequest& txn) const;
  // The ids held by others (and the holder of `preferred`), once the peers'
  // clocks passed check_peer_clocks().
  Result<ClaimsSeen> read_claims(std::optional<std::uint64_t> preferred) override;
  // One Txn creating the claim key (after granting the lease, if none yet).
  Result<bool> try_claim(std::uint64_t node_id, std::string* holder) override;
  // Writes the created marker if it is absent. Sets created_now_ if it did.
  Status mark_created();
  // The claim keys, read with the created marker; if the marker is absent,
  // also reads etcd's time (read_etcd_time()).
  Result<etcdserverpb::RangeResponse> list_claims();
  // Sets etcd_time_, or marker_time_unread_ saying why it cannot.
  void read_etcd_time();
  // The time a new created marker holds: the later of our clock and etcd's
  // (etcd_server_time.h); ours alone if etcd's is unreadable, with
  // marker_time_unread_ saying why.
  std::chrono::milliseconds marker_time();
  // Reads the reservation and the created marker of `node_id` in one step.
  Result<etcdserverpb::TxnResponse> read_reservation_and_marker(std::uint64_t node_id);
  // Sets floor_ from the reservation and the created marker read with the
  // claim (see A STORE THAT LOST ITS DATA in etcd_claim.cc).
  Status set_floor(const etcdserverpb::RangeResponse& reservation,
                   const etcdserverpb::RangeResponse& created);
  // kClaimLost if `header` shows another etcd cluster, or a revision below
  // one seen before (etcd lost its data); records it otherwise.
  StepResult check_header(const etcdserverpb::ResponseHeader& header);
  void set_deadline(std::chrono::nanoseconds sent, std::int64_t ttl_seconds);

  std::unique_ptr<EtcdClient> owned_client_;  // null when the caller owns the client
  EtcdClient& client_;
  EtcdOptions options_;
  std::int64_t lease_id_ = 0;         // 0: not held
  std::int64_t create_revision_ = 0;  // of our claim key: identifies our claim
  std::uint64_t cluster_id_ = 0;      // of the etcd cluster that granted the claim
  std::int64_t revision_seen_ = 0;    // the highest store revision an answer carried
  std::string marker_time_unread_;    // why the marker we wrote holds our time alone
  std::optional<std::chrono::milliseconds> etcd_time_;  // etcd's Date + 1 s, read by this claim
};

}  // namespace snowid::coord
