// What a snowidd node issues IDs as: its node id, fixed or leased from a
// store through the Coordinator the configuration names
// (coordinator_factory.h), and the Generator built for that node id.
//
// Fixed (coordinator = "static"): one generator with the configured ids and
// the state file in state_dir; nothing changes while the node runs.
//
// Leased (a store such as etcd): start() claims a node id (retrying until
// claim_timeout) and builds a generator that starts strictly above the
// claim's floor and never passes its reservation (external ceiling). The
// reservation in the store is the cluster's high-water mark; the node keeps
// its own too, per node id it held (cluster_marks.h): every reservation is
// persisted in state_dir before the generator's ceiling is raised to it,
// and a generator starts above the higher of the two (and above the latest
// ID of the node id in the audit log), so a store that lost its data, or a
// state directory restored from an older copy, cannot take a node below its
// own earlier IDs. The node holds its state directory locked, as a fixed
// one does. A store that lost
// its data for a cluster this node served makes it not ready until an
// operator confirms (cluster_marks.h).
// maintain(), every 100 ms, raises the ceiling as the coordinator extends
// the reservation, and builds a new generator when the coordinator has
// re-claimed (perhaps another node id) after losing the claim.
//
// Invariant (generator swap): requests reach a generator only through
// generator(), an atomic pointer. A replaced generator is kept alive until
// the Node is destroyed, so a request that loaded it finishes safely; its
// IDs stay unique because they lie at or below the reservation its own claim
// held, and whoever claims that node id next starts strictly above that.
//
// Thread-safety: generator(), may_issue(), readiness() and the stats from
// any thread; start(), maintain() and stop() from one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cluster_marks.h"
#include "service_config.h"
#include "snowid/coordinator.h"
#include "snowid/generator.h"

namespace snowid::server {

// The starts left to a node id taken anew at every start
// (node_id_policy = "disposable": the store names its endpoints but holds
// no lease): the layout's node ids above it. nullopt for any other node id.
std::optional<std::uint64_t> disposable_starts_left(const CoordinatorStats& stats,
                                                    const Layout& layout);

class Node {
 public:
  // Errors: kInvalidArgument for bad settings; others when the node id or
  // the state cannot be had (state directory in use, store unreachable until
  // claim_timeout, every node id taken, clock far from the peers').
  static Result<std::unique_ptr<Node>> start(const ResolvedConfig& config);
  ~Node();

  Generator& generator() const { return *current_.load(std::memory_order_acquire); }
  // True if the node id is leased from a store (CoordinatorStats::leased).
  bool leased() const { return leased_; }
  // The store's name, as the coordinator gives it ("static", "etcd", ...).
  const std::string& coordinator_name() const { return store_; }
  // The coordinator's facts and counters right now.
  CoordinatorStats coordinator_stats() const { return coordinator_->stats(); }

  // Ok unless the claim on the node id is not held right now (cluster mode:
  // lease deadline passed, claim lost, re-claiming): kUnavailable then.
  // Cheap: an atomic load and a clock read.
  Status may_issue() const;
  // may_issue(), then the generator's readiness.
  Status readiness() const;

  // From a timer every 100 ms: keeps the state file's mark or the external
  // ceiling ahead of use, and follows re-claims.
  void maintain();

  // After serving has ended: gives the node id back (cluster mode; the
  // reservation is lowered to the last issued unit) and writes the exact
  // high-water mark (static mode).
  Status stop();

  // The bound addresses ("http HOST:PORT", "grpc HOST:PORT"), for the
  // coordinator to publish (`snowid cluster list`).
  void advertise(std::vector<std::string> addresses) {
    coordinator_->advertise(std::move(addresses));
  }

  std::string cluster_metrics() const;
  // Cluster mode: the store loss detected and not confirmed yet (nullopt: none).
  std::optional<std::string> store_loss() const;
  std::uint64_t store_losses() const { return marks_ ? marks_->losses() : 0; }

 private:
  Node(const GeneratorOptions& generator_options, std::unique_ptr<Coordinator> coordinator,
       const std::filesystem::path& state_dir, const std::filesystem::path& audit_log);
  // Logs the node id a disposable policy took, and warns when few are left.
  void report_disposable_id(std::uint64_t node_id) const;
  std::string disposable_metrics() const;
  // During the start's wait: `claim` and `start` become the claim held now
  // (prepared against the marks) if the coordinator lost and re-took it.
  Status follow_new_claim(Claim& claim, ClusterMarks::Start& start) const;
  Result<std::unique_ptr<Generator>> build_generator(const Claim& claim,
                                                     std::chrono::milliseconds start_above) const;
  void install(std::unique_ptr<Generator> generator, std::uint64_t generation,
               std::uint64_t node_id);
  // Leased: raises the generator's ceiling to the coordinator's reservation
  // once it is in this node's own mark.
  void follow_reservation();
  // Leased: builds and installs the generator of a new claim.
  void follow_reclaim(std::uint64_t generation);
  // Leased: logs a lost claim once, at warning level.
  void report_lost_claims();
  void report_readiness();
  void report_pending_swap(std::uint64_t node_id, const Error& why);

  const GeneratorOptions generator_options_;
  std::unique_ptr<Coordinator> coordinator_;
  const std::string store_;
  const bool leased_;
  std::atomic<Generator*> current_{nullptr};
  // The claim generation current_ was built for; stored after current_.
  std::atomic<std::uint64_t> generation_{0};
  std::uint64_t node_id_ = 0;            // of current_ (leased)
  std::unique_ptr<ClusterMarks> marks_;  // leased: this node's own marks
  std::uint64_t losses_logged_ = 0;      // lost claims and fencing events logged
  std::string reclaim_failure_logged_;   // the last failed re-claim's reason logged
  int readiness_logged_ = -1;            // the ErrorCode of the readiness logged; -1: ready
  std::string last_cover_error_;         // the last failure to persist a mark, logged
  bool reported_pending_swap_ = false;   // a failed rebuild was logged
  // follow_reclaim(): the start prepared for a claim generation whose
  // generator is not in place yet.
  std::optional<std::pair<std::uint64_t, ClusterMarks::Start>> prepared_;
  std::string last_maintenance_error_;   // static mode: the last error maintain() logged
  bool waiting_for_clock_ = false;       // started with the clock behind the mark (wait policy)
  mutable std::mutex generators_mutex_;
  std::vector<std::unique_ptr<Generator>> generators_;  // every one built, kept alive
};

}  // namespace snowid::server
