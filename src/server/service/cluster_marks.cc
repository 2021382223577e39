#include "cluster_marks.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <system_error>

#include "audit_start.h"
#include "audit_tail.h"
#include "time_text.h"

namespace snowid::server {

using std::chrono::milliseconds;

namespace {

// In state_dir: "leased-node.lock", the lock of the one leased snowidd.
constexpr const char* kLeasedNodeLockName = "leased-node";

std::string describe_incarnation(milliseconds created) {
  return created.count() == 0 ? "0 (marked new by an operator)"
                              : fmt::format("{} ({})", created.count(), format_time(created));
}

}  // namespace

ClusterMarks::ClusterMarks(std::filesystem::path state_dir, std::string store, std::string cluster,
                           Layout layout, std::filesystem::path audit_log)
    : state_dir_(std::move(state_dir)),
      store_(std::move(store)),
      cluster_(std::move(cluster)),
      layout_(layout),
      layout_description_(describe(layout)),
      audit_log_(std::move(audit_log)) {}

Status ClusterMarks::hold_state_directory() {
  // A MarkFile that is never stored: its lock file is the lock.
  auto held =
      MarkFile::open(state_dir_ / kLeasedNodeLockName, "the state directory of one leased snowidd");
  if (!held.ok() && held.error().code == ErrorCode::kStateLocked) {
    return Error{ErrorCode::kStateLocked,
                 fmt::format("another snowidd holds state directory {}, which one node keeps "
                             "for itself: {}",
                             state_dir_.string(), held.error().message)};
  }
  if (!held.ok()) return held.error();
  directory_lock_ = std::move(*held);
  return {};
}

Result<MarkFile*> ClusterMarks::mark_of(std::uint64_t node_id) {
  if (auto open = marks_.find(node_id); open != marks_.end()) return open->second.get();
  const auto path =
      state_dir_ / fmt::format("cluster-{}-{}-node{}.mark", store_, cluster_, node_id);
  auto file = MarkFile::open(path, fmt::format("node id {} of cluster {} in {}, {}", node_id,
                                               cluster_, store_, layout_description_));
  if (!file.ok()) return file.error();
  MarkFile* mark = file->get();
  marks_.emplace(node_id, std::move(*file));
  return mark;
}

Result<ClusterMarks::Start> ClusterMarks::prepare(const Claim& claim) {
  Status incarnation = check_incarnation(claim);
  if (!incarnation.ok()) return incarnation.error();
  auto mark = mark_of(claim.node_id);
  if (!mark.ok()) return mark.error();
  Start start{claim.floor,
              claim.floor_source.empty() ? "the floor the store gave the claim" : claim.floor_source};
  const milliseconds own = (*mark)->mark().value_or(milliseconds{0});
  // Every reservation this node marked, the store acknowledged first, and a
  // release lowers both alike: a store below the mark went back.
  // Once per claim: a claim prepared again (its generator still waiting)
  // finds the mark raised by its own first reservation.
  const bool reported = pending_ && *pending_ == claim.store_created;
  const bool first_look = claim.generation != went_back_checked_;
  went_back_checked_ = claim.generation;
  if (first_look && own > claim.store_reservation && !claim.store_created_now && !reported) {
    report_loss(fmt::format("the {} store's reservation for node id {} of cluster '{}' is {}, "
                            "below {} that this node reserved under it earlier ({}): the store's "
                            "record went back (restored from an older copy, or rewritten)",
                            store_, claim.node_id, cluster_,
                            claim.store_reservation.count() > 0
                                ? format_time(claim.store_reservation)
                                : std::string("missing"),
                            format_time(own), (*mark)->path().string()),
                claim.store_created);
  }
  if (own > start.above) {
    start = {own, fmt::format("this node's own mark in {} (the store's floor was {})",
                              (*mark)->path().string(), format_time(claim.floor))};
  }
  auto audited = audited_start(claim, **mark);
  if (!audited.ok()) return audited.error();
  if (*audited && (*audited)->above > start.above) start = std::move(**audited);
  started_above_[claim.node_id] = start.above;
  if (claim.ceiling) {
    Status covered = cover(claim.node_id, *claim.ceiling);
    if (!covered.ok()) return covered.error();
  }
  return start;
}

Result<std::optional<ClusterMarks::Start>> ClusterMarks::audited_start(const Claim& claim,
                                                                       const MarkFile& own) const {
  if (audit_log_.empty()) return std::optional<Start>{};
  auto latest = audit::latest_audited(
      audit_log_, layout_, audit::AuditNode{claim.datacenter_id, claim.worker_id}, kAuditTailBytes);
  if (!latest.ok()) return latest.error();
  if (!*latest || (own.mark() && *own.mark() >= (*latest)->time)) return std::optional<Start>{};
  const std::string mark =
      own.mark() ? fmt::format("holds {}", format_time(*own.mark())) : std::string("is missing");
  Start start{(*latest)->time,
              fmt::format("the audit log {}: this node's own mark {} {}, but the log recorded ID "
                          "{} of node id {}, issued at {}: the state directory was restored from "
                          "an older copy (or its marks removed)",
                          audit_log_.string(), own.path().string(), mark, (*latest)->id,
                          claim.node_id, format_time((*latest)->time))};
  spdlog::error("{}; starting above that ID, never below it", start.source);
  return std::optional<Start>{std::move(start)};
}

Status ClusterMarks::cover(std::uint64_t node_id, milliseconds reservation) {
  auto mark = mark_of(node_id);
  if (!mark.ok()) return mark.error();
  if ((*mark)->mark().value_or(milliseconds{0}) >= reservation) return {};
  return (*mark)->store(reservation);
}

Status ClusterMarks::lower(std::uint64_t node_id, milliseconds last_issued) {
  auto mark = mark_of(node_id);
  if (!mark.ok()) return mark.error();
  const milliseconds lowered = std::max(last_issued, started_above_[node_id]);
  if ((*mark)->mark().value_or(milliseconds{0}) <= lowered) return {};
  return (*mark)->store(lowered);
}

bool ClusterMarks::served_before() const {
  const std::string prefix = fmt::format("cluster-{}-{}-node", store_, cluster_);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(state_dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.size() > 5 &&
        name.compare(name.size() - 5, 5, ".mark") == 0) {
      return true;
    }
  }
  return false;
}

Status ClusterMarks::check_incarnation(const Claim& claim) {
  if (!incarnation_) {
    const auto path = state_dir_ / fmt::format("cluster-{}-{}.created", store_, cluster_);
    auto file = MarkFile::open(
        path,
        fmt::format("the created marker of cluster {} in {} this node served", cluster_, store_));
    if (!file.ok()) return file.error();
    incarnation_ = std::move(*file);
  }
  const std::optional<milliseconds> served = incarnation_->mark();
  const milliseconds now_seen = claim.store_created;
  if (pending_ && *pending_ == now_seen) return {};  // reported already
  if (served && *served != now_seen) {
    report_loss(fmt::format("the {} store's created marker for cluster '{}' reads {}, but this "
                            "node served the cluster when it read {}",
                            store_, cluster_, describe_incarnation(now_seen),
                            describe_incarnation(*served)),
                now_seen);
  } else if (!served && claim.store_created_now && served_before()) {
    report_loss(
        fmt::format(
            "the {} store had no trace of cluster '{}' (this claim wrote its created marker, {}), "
            "but this node has served the cluster before (its marks are in {})",
            store_, cluster_, describe_incarnation(now_seen), state_dir_.string()),
        now_seen);
  } else if (!served) {
    return incarnation_->store(now_seen);
  }
  return {};
}

void ClusterMarks::report_loss(std::string message, milliseconds incarnation) {
  const std::string text = fmt::format(
      "{}: the store lost its data (restarted without persistence, flushed, wiped, restored from "
      "an old copy, or another store at the same address). This node starts above its own marks, "
      "but other nodes without such marks may repeat IDs: check the store's persistence and "
      "whether other nodes issued under the same node ids, then confirm with `snowid cluster "
      "confirm-loss --state-dir {}`",
      message, state_dir_.string());
  spdlog::warn("store loss detected: {}", text);
  pending_ = incarnation;
  losses_.fetch_add(1);
  std::lock_guard lock(loss_mutex_);
  loss_ = text;
}

std::optional<std::string> ClusterMarks::loss() const {
  std::lock_guard lock(loss_mutex_);
  return loss_;
}

void ClusterMarks::poll_confirmation() {
  if (!pending_) return;
  const auto confirmation = state_dir_ / kConfirmStoreLossFile;
  std::error_code ec;
  if (!std::filesystem::exists(confirmation, ec)) return;
  Status stored = incarnation_->store(*pending_);
  if (!stored.ok()) {
    spdlog::error("cannot record the confirmed store incarnation: {}", stored.error().message);
    return;
  }
  std::filesystem::remove(confirmation, ec);
  spdlog::warn(
      "an operator confirmed the loss of the {} store's data for cluster '{}': ready again", store_,
      cluster_);
  pending_.reset();
  std::lock_guard lock(loss_mutex_);
  loss_.reset();
}

}  // namespace snowid::server
