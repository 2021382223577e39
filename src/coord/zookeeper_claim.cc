// The claim and the fence in ZooKeeper: how a node leases a node id from a
// ZooKeeper ensemble and why two nodes never issue the same ID under it.
//
// ZNODES (cluster C):
//   /snowid/C/claims/<id>             EPHEMERAL, the holder's ClaimRecord
//                                     (JSON); one per id at a time.
//   /snowid/C/holders/<id>/<session>  EPHEMERAL, empty: the holder's token,
//                                     named by its session id (never reused).
//   /snowid/C/reservations/<id>       PERSISTENT, decimal Unix ms H.
//   /snowid/C/created                 PERSISTENT, Unix ms of the first claim.
//
// THE RESERVATION INVARIANT is etcd's (etcd_claim.cc): a node issues under
// node id N only in time units starting at or before the H it last wrote.
//   - A claim creates claims/N and the token in one multi: ZooKeeper keeps
//     one claims/N, so two claimers cannot both win.
//   - Every later write of the holder is a multi that first checks its
//     token. The new holder's first write of H deletes every other token of
//     N, so from then on no write of a former holder can succeed (its token
//     is gone for good: no one creates a path named by another session), and
//     a holder whose session expired has lost its token with it. Versions
//     alone could not do this: a znode deleted and created again (by an
//     operator, say) starts at version 0 again.
//   - The new holder reads H at version v and writes H' > H naming v; if a
//     former holder wrote in between (its token was still there), the
//     version moved, the write fails and the new holder reads again. Once it
//     succeeds, it starts strictly above the last H any former holder wrote.
//
// THE FENCE. A session expires at the leader when the leader has heard
// nothing of it for the session timeout (at least lease_ttl: a shorter
// granted one is refused). The leader hears of a session through the
// follower we talk to only when it pings that follower (every tickTime / 2),
// and a write processed by the leader does not count as news. So a request
// R counts once the leader surely heard of it: R's answer reached us, and a
// later write W that we sent at least tickTime / 2 after that was
// acknowledged (W went through the leader, so the follower still talked to
// the leader a ping after R). The deadline is
//   (send time of the latest such R, or of the session's creation, which
//    the leader does itself) + lease_ttl - safety margin
// on CLOCK_BOOTTIME. With a renewal every lease_ttl / 3, R is the renewal
// before the last one. Reads (served by any member) never move it.
//
// A LOST ENSEMBLE (data directory wiped; its sessions are gone with it) has
// no H for any id: as for Redis (redis_claim.cc), a missing H is read as
// "lost at about `created`" and the floor becomes
// created + lease_ttl + reserve_ahead, where `created` is the later of the
// value the first claimer wrote (its clock) and the znode's ctime (the
// leader's clock), so that no single clock behind lowers it; a value of 0
// (an operator vouching that the cluster is new to the ensemble) is taken
// as it is. `created` is the ensemble's incarnation (Claim::store_created).
#include "zookeeper_claim.h"

#include <fmt/format.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <tuple>

#include "time_text.h"

namespace snowid::coord {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

namespace {

// Reads of H before the former holder's last write stops racing ours: it
// can write at most once more (its next write names a stale version).
constexpr int kMaxReservationRaces = 8;

bool session_gone(int code) { return code == ZSESSIONEXPIRED || code == ZINVALIDSTATE; }

}  // namespace

std::string zookeeper_cluster_path(std::string_view cluster) {
  return fmt::format("/snowid/{}", cluster);
}
std::string zookeeper_claims_path(std::string_view cluster) {
  return zookeeper_cluster_path(cluster) + "/claims";
}
std::string zookeeper_claim_path(std::string_view cluster, std::uint64_t node_id) {
  return fmt::format("{}/{}", zookeeper_claims_path(cluster), node_id);
}
std::string zookeeper_reservations_path(std::string_view cluster) {
  return zookeeper_cluster_path(cluster) + "/reservations";
}
std::string zookeeper_reservation_path(std::string_view cluster, std::uint64_t node_id) {
  return fmt::format("{}/{}", zookeeper_reservations_path(cluster), node_id);
}
std::string zookeeper_holders_path(std::string_view cluster, std::uint64_t node_id) {
  return fmt::format("{}/holders/{}", zookeeper_cluster_path(cluster), node_id);
}
std::string zookeeper_token_path(std::string_view cluster, std::uint64_t node_id,
                                 std::int64_t session) {
  return fmt::format("{}/{:016x}", zookeeper_holders_path(cluster, node_id),
                     static_cast<std::uint64_t>(session));
}
std::string zookeeper_id_space_path(std::string_view cluster) {
  return zookeeper_cluster_path(cluster) + "/id_space";
}

std::string zookeeper_clock_path(std::string_view cluster) {
  return zookeeper_cluster_path(cluster) + "/clock";
}

std::string zookeeper_created_path(std::string_view cluster) {
  return zookeeper_cluster_path(cluster) + "/created";
}

std::optional<std::uint64_t> zookeeper_node_id_of(std::string_view name) {
  return parse_node_id(name);
}

ZooKeeperClaim::ZooKeeperClaim(const ZooKeeperOptions& options)
    : LeasedClaim(options), options_(options) {}

nanoseconds ZooKeeperClaim::deadline_after(nanoseconds sent) {
  const nanoseconds answered = boot_time_now();
  // The leader surely heard of a request whose answer reached us at least
  // tickTime / 2 before this acknowledged write was sent (see THE FENCE).
  while (!acknowledged_.empty() && acknowledged_.front().second + options_.tick_time / 2 <= sent) {
    anchor_ = std::max(anchor_, acknowledged_.front().first);
    acknowledged_.pop_front();
  }
  acknowledged_.emplace_back(sent, answered);
  return anchor_ + options_.lease_ttl - options_.safety_margin;
}

Status ZooKeeperClaim::open_session() {
  session_.reset();  // a session of ours that was left ends here, with its znodes
  acknowledged_.clear();
  // The leader starts a session's timeout when it creates it, after this.
  anchor_ = boot_time_now();
  auto session = ZooKeeperSession::open(options_, counters_);
  if (!session.ok()) return session.error();
  session_ = std::move(*session);
  if (session_->timeout() < options_.lease_ttl) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("ZooKeeper granted a session timeout of {} ms, below lease_ttl ({} "
                             "s): raise the servers' maxSessionTimeout or lower lease_ttl",
                             session_->timeout().count(), options_.lease_ttl.count())};
  }
  for (const auto& [path, open_to_all] :
       {std::pair{std::string("/snowid"), true},
        {zookeeper_cluster_path(options_.cluster), false},
        {zookeeper_claims_path(options_.cluster), false},
        {zookeeper_reservations_path(options_.cluster), false},
        {zookeeper_cluster_path(options_.cluster) + "/holders", false},
        {zookeeper_clock_path(options_.cluster), false}}) {
    ZnodeAnswer made = session_->create(path, "", /*ephemeral=*/false, open_to_all);
    if (!made.ok() && made.code != ZNODEEXISTS) {
      return Error{ErrorCode::kUnavailable, "cannot create " + made.describe(path)};
    }
  }
  const std::string created_path = zookeeper_created_path(options_.cluster);
  ZnodeAnswer made = session_->create(created_path, std::to_string(clock().now_fresh().count()),
                                      /*ephemeral=*/false);
  if (!made.ok() && made.code != ZNODEEXISTS) {
    return Error{ErrorCode::kUnavailable, "cannot create " + made.describe(created_path)};
  }
  created_now_ = made.ok();
  Znode created;
  ZnodeAnswer read = session_->get(created_path, &created);
  if (!read.ok())
    return Error{ErrorCode::kUnavailable, "cannot read " + read.describe(created_path)};
  auto parsed = parse_reservation(created_path, created.data);
  if (!parsed.ok()) return parsed.error();
  // The later of the claimer's clock and the leader's (ctime), unless an
  // operator wrote 0 to vouch that the cluster is new to the ensemble.
  created_ = parsed->count() == 0 ? *parsed : std::max(*parsed, created.stat.created);
  return {};
}

Result<ClaimsSeen> ZooKeeperClaim::read_claims(std::optional<std::uint64_t> preferred) {
  Status opened = open_session();
  if (!opened.ok()) return opened.error();
  const std::string claims = zookeeper_claims_path(options_.cluster);
  std::vector<std::string> names;
  ZnodeAnswer listed = session_->children(claims, &names);
  if (!listed.ok()) return Error{ErrorCode::kUnavailable, "cannot list " + listed.describe(claims)};
  ClaimsSeen seen;
  for (const std::string& name : names) {
    const auto id = zookeeper_node_id_of(name);
    if (!id) continue;
    const std::string path = zookeeper_claim_path(options_.cluster, *id);
    Znode node;
    ZnodeAnswer read = session_->get(path, &node);
    if (read.code == ZNONODE) continue;  // its session ended meanwhile
    if (!read.ok()) return Error{ErrorCode::kUnavailable, "cannot read " + read.describe(path)};
    if (left_by_this_process(node.data)) {
      // Left by an earlier session of this process, which issues nothing
      // under it any more: free it now rather than when that session expires.
      ZnodeAnswer removed = session_->remove(path, node.stat.version);
      if (removed.ok() || removed.code == ZNONODE) continue;
    }
    note_claim(seen, *id, node.data, preferred);
  }
  return seen;
}

Result<bool> ZooKeeperClaim::try_claim(std::uint64_t node_id, std::string* holder) {
  record_.set_node_id(node_id, options_.layout);
  record_.wall_time = clock().now_fresh();
  const std::string path = zookeeper_claim_path(options_.cluster, node_id);
  const std::string tokens = zookeeper_holders_path(options_.cluster, node_id);
  ZnodeAnswer parent = session_->create(tokens, "", /*ephemeral=*/false);
  if (!parent.ok() && parent.code != ZNODEEXISTS) {
    return Error{ErrorCode::kUnavailable, "cannot create " + parent.describe(tokens)};
  }
  used_before_ = parent.code == ZNODEEXISTS;
  const std::string token = zookeeper_token_path(options_.cluster, node_id, session_->id());
  const nanoseconds sent = boot_time_now();
  std::size_t failed = 2;
  ZnodeAnswer made = session_->multi({{ZnodeOp::Kind::kCreate, path, record_.to_json(), -1, true},
                                      {ZnodeOp::Kind::kCreate, token, "", -1, true}},
                                     nullptr, &failed);
  if (made.code == ZNODEEXISTS && failed == 0) {
    Znode node;
    if (session_->get(path, &node).ok()) *holder = node.data;
    return false;
  }
  if (!made.ok()) {
    return Error{ErrorCode::kUnavailable,
                 "cannot create " + made.describe(failed == 1 ? token : path)};
  }
  held_ = true;
  node_id_ = node_id;
  token_ = token;
  versions_uncertain_ = false;
  deadline_ = deadline_after(sent);
  return true;
}

Status ZooKeeperClaim::take_reservation() {
  const std::string path = zookeeper_reservation_path(options_.cluster, node_id_);
  const std::string tokens = zookeeper_holders_path(options_.cluster, node_id_);
  for (int race = 0; race < kMaxReservationRaces; ++race) {
    // Former holders' tokens: the first write deletes them.
    std::vector<std::string> names;
    ZnodeAnswer listed = session_->children(tokens, &names);
    if (!listed.ok())
      return Error{ErrorCode::kUnavailable, "cannot list " + listed.describe(tokens)};
    std::vector<ZnodeOp> revoke;
    for (const std::string& name : names) {
      const std::string token = tokens + "/" + name;
      if (token != token_) revoke.push_back({ZnodeOp::Kind::kDelete, token, "", -1, false});
    }
    // H, and its copy in holders/<id>: the later of the two, so that an
    // operator who deletes one does not lower it.
    Znode node, copy;
    ZnodeAnswer read = session_->get(path, &node);
    if (!read.ok() && read.code != ZNONODE) {
      return Error{ErrorCode::kUnavailable, "cannot read " + read.describe(path)};
    }
    ZnodeAnswer read_copy = session_->get(tokens, &copy);
    if (!read_copy.ok()) {
      return Error{ErrorCode::kUnavailable, "cannot read " + read_copy.describe(tokens)};
    }
    std::optional<milliseconds> stored;
    for (const auto& [where, value, present] :
         {std::tuple{path, node.data, read.ok()}, {tokens, copy.data, !copy.data.empty()}}) {
      if (!present) continue;
      auto parsed = parse_reservation(where, value);
      if (!parsed.ok()) return parsed.error();
      stored = std::max(stored.value_or(milliseconds{0}), *parsed);
    }
    reservation_version_ = read.ok() ? node.stat.version : -1;
    const auto lease = std::chrono::duration_cast<milliseconds>(options_.lease_ttl);
    if (stored) {
      floor_ = *stored;
    } else {
      // Never used, or lost with the ensemble's data (see above); if the id
      // was used before (its holders/ znode or a former token is there), H
      // was deleted under a holder that may still issue until its next
      // write fails: start above anything it can have reached.
      floor_ = std::max(milliseconds{0}, created_ + lease + options_.reserve_ahead);
      if (used_before_ || !revoke.empty()) {
        floor_ = std::max(floor_, clock().now_fresh() + lease + options_.reserve_ahead);
      }
    }
    reservation_ = floor_;
    // THE TAKEOVER RULE (leased_claim.h), now that floor_ is the store's.
    if (Status raised = raise_to_takeover_floor(peers_vouched_); !raised.ok()) return raised;
    // The first write, through extend_reservation(), also deletes `revoke`.
    revoke_ = std::move(revoke);
    claiming_ = true;
    raced_ = false;
    StepResult first = extend_reservation(/*force=*/true);
    claiming_ = false;
    revoke_.clear();
    if (first.outcome == StepOutcome::kDone) return {};
    if (raced_)
      continue;  // a former holder wrote, or its token or a parent went,
                 // meanwhile
    return Error{ErrorCode::kUnavailable, "cannot write the first reservation: " + first.message};
  }
  return Error{ErrorCode::kUnavailable,
               fmt::format("{} kept changing while node id {} was being claimed", path, node_id_)};
}

StepResult ZooKeeperClaim::write_reservation(milliseconds target) {
  return write_reservation(target, revoke_, claiming_ ? &raced_ : nullptr);
}

StepResult ZooKeeperClaim::write_reservation(milliseconds target,
                                             const std::vector<ZnodeOp>& revoke, bool* raced) {
  const std::string claim_path = zookeeper_claim_path(options_.cluster, node_id_);
  const std::string path = zookeeper_reservation_path(options_.cluster, node_id_);
  // A value a write of ours left without an answer is never lowered.
  const milliseconds value = std::max(target, at_least_);
  const std::string text = std::to_string(value.count());
  record_.wall_time = clock().now_fresh();
  std::vector<ZnodeOp> ops{{ZnodeOp::Kind::kCheck, token_, "", -1, false}};
  ops.insert(ops.end(), revoke.begin(), revoke.end());
  const std::size_t claim_op = ops.size(), copy_op = claim_op + 1, reservation_op = claim_op + 2;
  ops.push_back({ZnodeOp::Kind::kSet, claim_path, record_.to_json(), -1, false});
  ops.push_back(
      {ZnodeOp::Kind::kSet, zookeeper_holders_path(options_.cluster, node_id_), text, -1, false});
  ops.push_back({reservation_version_ < 0 ? ZnodeOp::Kind::kCreate : ZnodeOp::Kind::kSet, path,
                 text, reservation_version_, false});
  std::vector<ZnodeStat> stats;
  std::size_t failed = ops.size();
  const nanoseconds sent = boot_time_now();
  ZnodeAnswer answer = session_->multi(ops, &stats, &failed);
  if (answer.ok() && stats.size() == 3) {
    reservation_version_ = stats[2].version;
    reservation_written(value);
    at_least_ = milliseconds{0};
    deadline_ = deadline_after(sent);
    return {};
  }
  if (failed == 0 || failed == claim_op || failed == copy_op) return lost_if_gone(answer);
  const bool version_moved =
      failed == reservation_op && (answer.code == ZBADVERSION || answer.code == ZNODEEXISTS);
  const bool token_gone = failed > 0 && failed < claim_op && answer.code == ZNONODE;
  const bool parent_gone = failed == reservation_op && answer.code == ZNONODE;
  if (parent_gone) {
    // reservations/ itself was deleted: create it again for the next write.
    (void)session_->create(zookeeper_reservations_path(options_.cluster), "", false);
  }
  if (version_moved || token_gone || parent_gone) {
    if (raced != nullptr) {
      *raced = true;  // take_reservation() reads again
    } else {
      // Only this holder writes H now, so the version it saw is stale only
      // if a write of ours got no answer, or an operator wrote: learn it.
      versions_uncertain_ = true;
    }
    return {StepOutcome::kStoreFailed, answer.describe(failed == reservation_op ? path : token_)};
  }
  return failure(answer, path);
}

StepResult ZooKeeperClaim::lost_if_gone(const ZnodeAnswer& answer) {
  if (answer.code == ZNONODE) {
    return {StepOutcome::kClaimLost,
            fmt::format("the claim on node id {} is gone (expired, released or taken); the "
                        "reservation stays at {}",
                        node_id_, format_time(reservation_))};
  }
  return failure(answer, zookeeper_claim_path(options_.cluster, node_id_));
}

StepResult ZooKeeperClaim::failure(const ZnodeAnswer& answer, const std::string& path) {
  if (session_gone(answer.code) || !session_->usable()) {
    return {StepOutcome::kClaimLost,
            fmt::format("the ZooKeeper session holding node id {} ended (expired, or its "
                        "credentials were refused); the reservation stays at {}",
                        node_id_, format_time(reservation_))};
  }
  // A write that got no answer may have been applied: learn the reservation's
  // version before the next one.
  versions_uncertain_ = true;
  return {StepOutcome::kStoreFailed, answer.describe(path)};
}

StepResult ZooKeeperClaim::reconcile() {
  // The token is checked again by every write at the leader; a stale read
  // here costs one failed write, never a write by a former holder.
  ZnodeStat token;
  ZnodeAnswer found = session_->exists(token_, &token);
  if (!found.ok()) return lost_if_gone(found);
  const std::string path = zookeeper_reservation_path(options_.cluster, node_id_);
  Znode reservation;
  ZnodeAnswer read = session_->get(path, &reservation);
  if (read.code == ZNONODE) {
    reservation_version_ = -1;  // deleted under us: the next write creates it again
  } else if (!read.ok()) {
    return failure(read, path);
  } else {
    auto stored = parse_reservation(path, reservation.data);
    if (!stored.ok()) return {StepOutcome::kStoreFailed, stored.error().message};
    // Only the version is learned, and the value carried into the next
    // write: this read may come after a new holder's first write (our token
    // was there when we looked), so it never raises what we issue below;
    // the next write, checked against our token, does if it succeeds.
    reservation_version_ = reservation.stat.version;
    at_least_ = std::max(at_least_, *stored);
  }
  versions_uncertain_ = false;
  return {};
}

Result<StoreTime> ZooKeeperClaim::read_store_time() {
  if (!session_) return Error{ErrorCode::kUnavailable, "no ZooKeeper session"};
  const std::string path = zookeeper_clock_path(options_.cluster);
  std::vector<ZnodeStat> stats;
  ZnodeAnswer written =
      session_->multi({{ZnodeOp::Kind::kSet, path, record_.instance, -1, false}}, &stats);
  if (!written.ok() || stats.size() != 1) {
    return Error{ErrorCode::kUnavailable, "cannot write " + written.describe(path)};
  }
  return StoreTime{stats[0].modified, milliseconds{1}};
}

Result<std::vector<ClusterIdSpace>> ZooKeeperClaim::read_id_spaces() {
  if (!session_) return Error{ErrorCode::kUnavailable, "no ZooKeeper session"};
  std::vector<std::string> clusters;
  ZnodeAnswer listed = session_->children("/snowid", &clusters);
  if (!listed.ok()) return Error{ErrorCode::kUnavailable, "cannot list " + listed.describe("/snowid")};
  std::vector<ClusterIdSpace> spaces;
  for (const std::string& cluster : clusters) {
    Znode node;
    // Another cluster's znodes may be closed to this node's user: not seen.
    if (session_->get(zookeeper_id_space_path(cluster), &node).ok() && !node.data.empty()) {
      spaces.push_back({cluster, node.data});
    }
  }
  return spaces;
}

Status ZooKeeperClaim::publish_id_space(const std::string& layout) {
  const std::string path = zookeeper_id_space_path(options_.cluster);
  ZnodeAnswer made = session_->create(path, layout, /*ephemeral=*/false, /*open_to_all=*/true);
  if (made.ok()) return {};
  ZnodeAnswer written =
      session_->multi({{ZnodeOp::Kind::kSet, path, layout, -1, false}}, nullptr);
  if (!written.ok()) return Error{ErrorCode::kUnavailable, "cannot write " + written.describe(path)};
  return {};
}

StepResult ZooKeeperClaim::renew_lease() {
  if (!held()) return {StepOutcome::kClaimLost, "no claim is held"};
  if (versions_uncertain_) {
    StepResult known = reconcile();
    if (known.outcome != StepOutcome::kDone) return known;
  }
  // Checks are writes: only the leader acknowledges them (see the fence above).
  const nanoseconds sent = boot_time_now();
  ZnodeAnswer answer = session_->multi(
      {{ZnodeOp::Kind::kCheck, token_, "", -1, false},
       {ZnodeOp::Kind::kCheck, zookeeper_claim_path(options_.cluster, node_id_), "", -1, false}},
      nullptr);
  if (answer.ok()) {
    deadline_ = deadline_after(sent);
    return {};
  }
  return lost_if_gone(answer);
}

StepResult ZooKeeperClaim::prepare_extension() {
  if (!versions_uncertain_) return {};
  return reconcile();
}

Status ZooKeeperClaim::release(std::optional<milliseconds> last_issued) {
  if (!held()) return {};
  const std::string claim_path = zookeeper_claim_path(options_.cluster, node_id_);
  // The token check makes the deletes touch only this holder's znodes.
  // Nothing above last_issued was issued (the caller's promise), so the next
  // holder may start right above it instead of above our reservation.
  std::vector<ZnodeOp> ops{{ZnodeOp::Kind::kCheck, token_, "", -1, false}};
  if (last_issued && *last_issued < reservation_ && !versions_uncertain_ &&
      reservation_version_ >= 0) {
    ops.push_back({ZnodeOp::Kind::kSet, zookeeper_reservation_path(options_.cluster, node_id_),
                   std::to_string(std::max(*last_issued, floor_).count()), reservation_version_,
                   false});
  }
  ops.push_back({ZnodeOp::Kind::kDelete, claim_path, "", -1, false});
  ops.push_back({ZnodeOp::Kind::kDelete, token_, "", -1, false});
  ZnodeAnswer answer = session_->multi(ops, nullptr);
  held_ = false;
  session_.reset();  // ends the session: its claim goes even if the delete did not
  if (!answer.ok() && answer.code != ZNONODE && answer.code != ZBADVERSION &&
      !session_gone(answer.code)) {
    return Error{ErrorCode::kUnavailable, "cannot release " + answer.describe(claim_path)};
  }
  return {};
}

void ZooKeeperClaim::abandon() {
  if (!held_ && session_ == nullptr) return;
  // Closing the session deletes the claim znode at once if the ensemble
  // hears it; otherwise it goes when the session expires.
  held_ = false;
  session_.reset();
}

}  // namespace snowid::coord
