// The claim and the fence: how a node leases a node id from etcd and why two
// nodes never issue the same ID under it.
//
// KEYS. /snowid/<cluster>/claims/<id> holds JSON naming the holder and is
// attached to the holder's lease. /snowid/<cluster>/reservations/<id> holds a
// decimal Unix-ms timestamp H and has no lease: it outlives every holder.
// (Unix ms rather than layout units, so that the value is readable with
// etcdctl and does not depend on the layout's time unit; the generator turns
// it into units with the same floor division it uses for its state file.)
//
// THE RESERVATION INVARIANT. A node issues IDs under node id N only in time
// units that start at or before the reservation H it last wrote for N, and it
// writes H only in a Txn that compares N's claim key's create_revision with
// the one its own claim created. Therefore:
//   - once the claim is gone (lease expired or revoked, key deleted), no
//     write of H by its former holder can succeed any more: H is final;
//   - a new holder creates the claim key in one Txn (create_revision == 0)
//     that also reads H, and starts strictly above it (Claim::floor).
// Every ID the old holder issued lies at or below H, every ID the new holder
// issues lies above it: no ID repeats, even if the old holder never learns
// that it lost the claim. Two claimers racing for one id cannot both succeed:
// etcd serialises the Txns and only the first sees create_revision == 0.
//
// A STORE THAT LOST ITS DATA (a wiped data directory, a snapshot restored,
// `etcdctl del --prefix /snowid/`) has no H for any id.
// /snowid/<cluster>/created tells the cases apart: it is written (if absent)
// before the first claim after the keys went, and every claim Txn applies only
// while it exists and reads it together with H. A missing H is read as
// "unknown, lost at about `created`", and the floor becomes created + lease_ttl
// + reserve_ahead: a holder from before the loss stops at its next renewal
// (keep_alive() also checks that its claim key is still the one it created: a
// deleted key leaves the lease alive) and never issues past the H it last
// wrote, at most reserve_ahead ahead of its clock. Every answer's header is
// checked as well: another cluster id, or a revision below one seen before, is
// a store that lost its data, and the claim counts as lost. `created` is the
// later of the claimer's clock and etcd's own: etcd puts no time in its gRPC
// headers or keys, but its client URL answers HTTP GET /version with a Date
// header (whole seconds, so Date + 1 s is taken; etcd_server_time.h), read
// before the lease is granted when the claim finds no marker (or just before
// writing it, if the marker vanished in between). A claimer whose clock is
// behind thus cannot lower the floor. If no member tells its time (a proxy in
// front of etcd that speaks gRPC only, or etcd 3.5's --listen-client-http-urls,
// which moves HTTP off the client URLs), the claim goes on with the claimer's
// clock alone and says so (EtcdClaim::marker_time_unread()); then its own
// local mark (server/node.h) covers its own earlier IDs and the peer clock
// check covers it while peers are alive (docs/design.md lists what is not
// covered). For a cluster new to etcd this floor costs the first claim
// lease_ttl + reserve_ahead; an operator who knows the store is new may put
// "0" in `created`.
//
// THE FENCE. Uniqueness does not depend on it, but a node that may have lost
// its claim should stop issuing before someone else takes the id over, so
// that clients see UNAVAILABLE instead of IDs from a node the cluster no
// longer lists. The lease cannot expire earlier than TTL after the server
// received our last keep-alive, which is after we sent it; so the deadline is
// (time the last acknowledged keep-alive was SENT) + TTL - safety margin, on
// CLOCK_BOOTTIME (it counts through suspend and never steps).
//
// REPEATED REQUESTS. A Txn that timed out may have been applied, and the
// client retries on another member. The claim Txn recognises a claim key that
// carries our own lease as ours; extensions and releases are idempotent.
#include "etcd_claim.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>

#include "etcd_server_time.h"
#include "time_text.h"

namespace snowid::coord {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

namespace {

etcdserverpb::RangeRequest prefix_range(const std::string& prefix) {
  etcdserverpb::RangeRequest request;
  request.set_key(prefix);
  request.set_range_end(prefix_end(prefix));
  return request;
}

etcdserverpb::RangeRequest key_range(const std::string& key) {
  etcdserverpb::RangeRequest request;
  request.set_key(key);
  return request;
}

// Adds to `txn` the compare "`key`'s create_revision <result> `revision`"
// (create_revision 0: the key is absent).
void compare_create_revision(etcdserverpb::TxnRequest& txn, const std::string& key,
                             etcdserverpb::Compare::CompareResult result, std::int64_t revision) {
  auto* compare = txn.add_compare();
  compare->set_key(key);
  compare->set_target(etcdserverpb::Compare::CREATE);
  compare->set_result(result);
  compare->set_create_revision(revision);
}

}  // namespace

std::string claims_prefix(std::string_view cluster) {
  return fmt::format("/snowid/{}/claims/", cluster);
}
std::string reservations_prefix(std::string_view cluster) {
  return fmt::format("/snowid/{}/reservations/", cluster);
}
std::string created_key(std::string_view cluster) {
  return fmt::format("/snowid/{}/created", cluster);
}
std::string claim_key(std::string_view cluster, std::uint64_t node_id) {
  return claims_prefix(cluster) + std::to_string(node_id);
}
std::string reservation_key(std::string_view cluster, std::uint64_t node_id) {
  return reservations_prefix(cluster) + std::to_string(node_id);
}

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (end.empty()) return std::string(1, '\0');  // every key
  end.back() = static_cast<char>(end.back() + 1);
  return end;
}

std::optional<std::uint64_t> node_id_of_key(std::string_view key) {
  const std::size_t slash = key.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  return parse_node_id(key.substr(slash + 1));
}

EtcdClaim::EtcdClaim(EtcdClient& client, const EtcdOptions& options)
    : LeasedClaim(options), client_(client), options_(options) {}

EtcdClaim::EtcdClaim(std::unique_ptr<EtcdClient> client, const EtcdOptions& options)
    : LeasedClaim(options),
      owned_client_(std::move(client)),
      client_(*owned_client_),
      options_(options) {}

void EtcdClaim::set_deadline(nanoseconds sent, std::int64_t ttl_seconds) {
  deadline_ = sent + std::chrono::seconds{ttl_seconds} - options_.safety_margin;
}

Result<ClaimsSeen> EtcdClaim::read_claims(std::optional<std::uint64_t> preferred) {
  // A new claim follows the etcd that answers now (it may have been replaced).
  created_now_ = false;
  marker_time_unread_.clear();
  etcd_time_.reset();
  cluster_id_ = 0;
  revision_seen_ = 0;
  auto listed = list_claims();
  if (!listed.ok()) return listed.error();
  ClaimsSeen seen;
  for (const auto& kv : listed->kvs()) {
    if (const auto id = node_id_of_key(kv.key())) note_claim(seen, *id, kv.value(), preferred);
  }
  return seen;
}

// One Txn: create the claim key if absent, attached to our lease, and read the
// reservation and the created marker in the same step. It applies only while
// the marker exists, so that the floor rests on a marker read together with
// the absence of the reservation. True if the id is ours. The lease is
// granted before the first id is tried.
Result<bool> EtcdClaim::try_claim(std::uint64_t node_id, std::string* holder) {
  if (lease_id_ == 0) {
    const nanoseconds sent = boot_time_now();
    auto lease =
        client_.lease_grant(std::chrono::duration_cast<std::chrono::seconds>(options_.lease_ttl));
    if (!lease.ok()) return lease.error();
    lease_id_ = lease->id();
    set_deadline(sent, lease->ttl());
  }
  const std::string key = claim_key(options_.cluster, node_id);
  record_.set_node_id(node_id, options_.layout);
  constexpr int kMarkerAttempts = 3;  // the marker deleted again between our Txns
  for (int attempt = 0; attempt < kMarkerAttempts; ++attempt) {
    record_.wall_time = clock().now_fresh();
    etcdserverpb::TxnRequest txn;
    compare_create_revision(txn, key, etcdserverpb::Compare::EQUAL, 0);
    compare_create_revision(txn, created_key(options_.cluster), etcdserverpb::Compare::GREATER, 0);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(record_.to_json());
    put->set_lease(lease_id_);
    txn.add_success()->mutable_request_range()->set_key(reservation_key(options_.cluster, node_id));
    txn.add_success()->mutable_request_range()->set_key(created_key(options_.cluster));
    txn.add_failure()->mutable_request_range()->set_key(key);

    auto answer = client_.txn(txn);
    if (!answer.ok()) return answer.error();
    if (check_header(answer->header()).outcome != StepOutcome::kDone) {
      return Error{ErrorCode::kUnavailable, "etcd lost its data while claiming; retrying"};
    }
    if (answer->succeeded()) {
      create_revision_ = answer->header().revision();
      node_id_ = node_id;
      Status floor =
          set_floor(answer->responses(1).response_range(), answer->responses(2).response_range());
      if (!floor.ok()) return floor.error();
      return true;
    }
    const auto& found = answer->responses(0).response_range();
    if (found.kvs_size() > 0) {
      if (found.kvs(0).lease() != lease_id_) {
        *holder = found.kvs(0).value();
        return false;
      }
      // Our own earlier attempt was applied but its answer was lost.
      create_revision_ = found.kvs(0).create_revision();
      node_id_ = node_id;
      auto read = read_reservation_and_marker(node_id);
      if (!read.ok()) return read.error();
      Status floor =
          set_floor(read->responses(0).response_range(), read->responses(1).response_range());
      if (!floor.ok()) return floor.error();
      return true;
    }
    Status marked_now = mark_created();  // the id is free, but no marker: write it
    if (!marked_now.ok()) return marked_now.error();
  }
  return Error{ErrorCode::kUnavailable,
               fmt::format("{} kept vanishing while claiming", created_key(options_.cluster))};
}

Result<etcdserverpb::RangeResponse> EtcdClaim::list_claims() {
  etcdserverpb::TxnRequest txn;  // no compare: the success branch, one snapshot
  *txn.add_success()->mutable_request_range() = prefix_range(claims_prefix(options_.cluster));
  *txn.add_success()->mutable_request_range() = key_range(created_key(options_.cluster));
  auto answer = client_.txn(txn);
  if (!answer.ok()) return answer.error();
  etcd_time_.reset();
  // The marker is to be written: etcd's time is read now, before the lease
  // is granted, so that this round trip does not eat the lease.
  if (answer->responses(1).response_range().kvs_size() == 0) read_etcd_time();
  return answer->responses(0).response_range();
}

void EtcdClaim::read_etcd_time() {
  auto etcd_time = etcd_server_time(options_);
  if (!etcd_time.ok()) {
    etcd_time_.reset();
    marker_time_unread_ = etcd_time.error().message;
    return;
  }
  marker_time_unread_.clear();
  // Date is etcd's clock cut to the second: its moment lies below Date + 1 s.
  etcd_time_ = std::chrono::duration_cast<milliseconds>(etcd_time->time_since_epoch()) +
               std::chrono::seconds{1};
}

milliseconds EtcdClaim::marker_time() {
  if (!etcd_time_) read_etcd_time();  // the marker vanished after list_claims()
  const milliseconds ours = clock().now_fresh();
  return etcd_time_ ? std::max(ours, *etcd_time_) : ours;
}

Status EtcdClaim::mark_created() {
  etcdserverpb::TxnRequest txn;
  compare_create_revision(txn, created_key(options_.cluster), etcdserverpb::Compare::EQUAL, 0);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(created_key(options_.cluster));
  put->set_value(std::to_string(marker_time().count()));
  auto answer = client_.txn(txn);
  if (!answer.ok()) return answer.error();
  if (answer->succeeded()) {
    created_now_ = true;
  } else {
    marker_time_unread_.clear();  // another claimer's marker
  }
  return {};
}

Result<etcdserverpb::TxnResponse> EtcdClaim::read_reservation_and_marker(std::uint64_t node_id) {
  etcdserverpb::TxnRequest txn;  // no compare: the success branch, one snapshot
  txn.add_success()->mutable_request_range()->set_key(reservation_key(options_.cluster, node_id));
  txn.add_success()->mutable_request_range()->set_key(created_key(options_.cluster));
  return client_.txn(txn);
}

Status EtcdClaim::set_floor(const etcdserverpb::RangeResponse& reservation,
                            const etcdserverpb::RangeResponse& created) {
  const std::string marker = created_key(options_.cluster);
  if (created.kvs_size() == 0) {
    return Error{ErrorCode::kUnavailable, marker + " vanished while claiming; retrying"};
  }
  auto created_at = parse_reservation(marker, created.kvs(0).value());
  if (!created_at.ok()) return created_at.error();
  created_ = *created_at;
  if (reservation.kvs_size() > 0) {
    auto parsed =
        parse_reservation(reservation_key(options_.cluster, node_id_), reservation.kvs(0).value());
    if (!parsed.ok()) return parsed.error();
    floor_ = *parsed;
  } else {
    // Never used, or lost with etcd's data or keys (A STORE THAT LOST ITS DATA).
    floor_ = created_ + std::chrono::duration_cast<milliseconds>(options_.lease_ttl) +
             options_.reserve_ahead;
  }
  reservation_ = floor_;
  return {};
}

StepResult EtcdClaim::check_header(const etcdserverpb::ResponseHeader& header) {
  if (cluster_id_ != 0 && header.cluster_id() != 0 && header.cluster_id() != cluster_id_) {
    return {StepOutcome::kClaimLost,
            fmt::format("etcd answered as cluster {:x}, not {:x} that granted the claim on node id "
                        "{}: it was replaced or lost its data",
                        header.cluster_id(), cluster_id_, node_id_)};
  }
  if (header.revision() < revision_seen_) {
    return {StepOutcome::kClaimLost,
            fmt::format("etcd's revision went back from {} to {}: it lost its data (the claim on "
                        "node id {} is gone with it)",
                        revision_seen_, header.revision(), node_id_)};
  }
  if (header.cluster_id() != 0) cluster_id_ = header.cluster_id();
  revision_seen_ = header.revision();
  return {};
}

Result<StoreTime> EtcdClaim::read_store_time() {
  auto etcd_time = etcd_server_time(options_);
  if (!etcd_time.ok()) return etcd_time.error();
  return StoreTime{std::chrono::duration_cast<milliseconds>(etcd_time->time_since_epoch()),
                   std::chrono::seconds{1}};
}

namespace {
// "~" is no cluster name's, so no cluster's keys lie below; under /snowid/, so that
// a role granted /snowid/ may read and write it.
constexpr const char* kIdSpacesPrefix = "/snowid/~id-spaces/";
}  // namespace

Result<std::vector<ClusterIdSpace>> EtcdClaim::read_id_spaces() {
  etcdserverpb::RangeRequest range;
  range.set_key(kIdSpacesPrefix);
  range.set_range_end(prefix_end(kIdSpacesPrefix));
  auto read = client_.range(range);
  if (!read.ok()) return read.error();
  std::vector<ClusterIdSpace> spaces;
  const std::string_view prefix = kIdSpacesPrefix;
  for (const auto& kv : read->kvs()) {
    spaces.push_back({kv.key().substr(prefix.size()), kv.value()});
  }
  return spaces;
}

Status EtcdClaim::publish_id_space(const std::string& layout) {
  etcdserverpb::PutRequest put;
  put.set_key(std::string(kIdSpacesPrefix) + options_.cluster);
  put.set_value(layout);
  auto written = client_.put(put);
  if (!written.ok()) return written.error();
  return {};
}

StepResult EtcdClaim::renew_lease() {
  if (!held()) return {StepOutcome::kClaimLost, "no claim is held"};
  const nanoseconds sent = boot_time_now();
  auto answer = client_.lease_keep_alive(lease_id_);
  if (!answer.ok()) return {StepOutcome::kStoreFailed, answer.error().message};
  if (answer->ttl() <= 0) {
    return {StepOutcome::kClaimLost,
            fmt::format("lease {:x} of node id {} expired or was revoked", lease_id_, node_id_)};
  }
  // The lease outlives its key when the key alone is deleted (`etcdctl del
  // --prefix /snowid/`): the renewal counts only while the key is ours.
  etcdserverpb::TxnRequest txn;
  require_claim_is_ours(txn);
  auto ours = client_.txn(txn);
  if (!ours.ok()) return {StepOutcome::kStoreFailed, ours.error().message};
  if (StepResult same = check_header(ours->header()); same.outcome != StepOutcome::kDone) {
    return same;
  }
  if (!ours->succeeded()) {
    return {
        StepOutcome::kClaimLost,
        fmt::format("the claim key of node id {} is gone or not ours any more (deleted, or etcd "
                    "lost its data) while its lease {:x} lives; the reservation stays at {}",
                    node_id_, lease_id_, format_time(reservation_))};
  }
  set_deadline(sent, answer->ttl());
  return {};
}

StepResult EtcdClaim::write_reservation(milliseconds target) {
  // Applies only while the claim key is the one our claim created.
  etcdserverpb::TxnRequest txn;
  require_claim_is_ours(txn);
  auto* reserve = txn.add_success()->mutable_request_put();
  reserve->set_key(reservation_key(options_.cluster, node_id_));
  reserve->set_value(std::to_string(target.count()));
  auto* refresh = txn.add_success()->mutable_request_put();
  refresh->set_key(claim_key(options_.cluster, node_id_));
  refresh->set_value(record_.to_json());
  refresh->set_lease(lease_id_);

  auto answer = client_.txn(txn);
  if (!answer.ok()) return {StepOutcome::kStoreFailed, answer.error().message};
  if (StepResult same = check_header(answer->header()); same.outcome != StepOutcome::kDone) {
    return same;
  }
  if (!answer->succeeded()) {
    return {StepOutcome::kClaimLost,
            fmt::format("the claim on node id {} is gone (lease expired or revoked, or the key "
                        "was deleted); the reservation stays at {}",
                        node_id_, format_time(reservation_))};
  }
  reservation_written(target);
  return {};
}

void EtcdClaim::require_claim_is_ours(etcdserverpb::TxnRequest& txn) const {
  compare_create_revision(txn, claim_key(options_.cluster, node_id_), etcdserverpb::Compare::EQUAL,
                          create_revision_);
}

Status EtcdClaim::release(std::optional<milliseconds> last_issued) {
  if (!held()) return {};
  etcdserverpb::TxnRequest txn;
  require_claim_is_ours(txn);
  if (last_issued && *last_issued < reservation_) {
    // Nothing above last_issued was issued (the caller's promise), so the
    // next holder may start right above it instead of above our reservation.
    auto* lower = txn.add_success()->mutable_request_put();
    lower->set_key(reservation_key(options_.cluster, node_id_));
    lower->set_value(std::to_string(std::max(*last_issued, floor_).count()));
  }
  txn.add_success()->mutable_request_delete_range()->set_key(claim_key(options_.cluster, node_id_));
  auto answer = client_.txn(txn);
  if (!answer.ok()) return answer.error();
  Status revoked = client_.lease_revoke(lease_id_);
  lease_id_ = 0;
  return revoked;
}

void EtcdClaim::abandon() {
  if (lease_id_ != 0) (void)client_.lease_revoke(lease_id_);  // best effort: it expires anyway
  lease_id_ = 0;
}

}  // namespace snowid::coord
