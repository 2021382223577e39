// A cluster-mode node's own record of what it issued, in its state
// directory, so that no single store and no single clock can make it repeat
// an ID (docs/design.md, "A store that loses its data").
//
// LOCAL MARKS. Per node id this node has held in (store, cluster), the file
// "cluster-<store>-<cluster>-node<id>.mark" holds a Unix-ms mark M with the
// promise that this node issued no ID under that node id in a time unit
// starting after M. The Node keeps the promise by persisting every
// reservation the coordinator grants (cover()) BEFORE it raises the
// generator's external ceiling to it, and lowers M to the last issued unit
// at a clean stop (as the store's reservation is lowered). A generator for a
// claim starts strictly above max(claim.floor, M), whatever the store says:
// a store that lost its data, a floor computed from a clock that is behind,
// cannot take this node below its own earlier IDs. Each file is opened once
// and kept open (and locked) for the Node's lifetime, so a re-claim of the
// same id reuses it.
//
// AUDIT LOG. With an audit log (option audit_log, best kept outside
// state_dir), prepare() also reads its tail (kAuditTailBytes) for the
// latest ID this node recorded under the claimed node id (the node id the
// ID decodes to under the layout): an ID in a time unit after the mark means
// that the marks were restored from an older copy or removed; the node says
// so at error level and starts above that ID too (audit_start.h does the
// same for a fixed node id).
//
// ONE PROCESS. hold_state_directory() locks the state directory for this
// node (the file "leased-node.lock"), before a node id is claimed: a second
// snowidd on the same state directory is refused, in cluster mode or not,
// so the files kept there for the whole node (segment-ranges) have one
// writer.
//
// STORE INCARNATION. "cluster-<store>-<cluster>.created" holds the value of
// the store's `created` marker (Claim::store_created) that this node served
// the cluster under. A claim that reports another value, or a marker it had
// to create for a cluster this node has served before, means that the store
// lost its data: the node logs a warning, counts it, and reports not ready
// (loss()) until an operator confirms by creating the file
// "confirm-store-loss" in the state directory (`snowid cluster confirm-loss
// --state-dir DIR`); poll_confirmation() then records the new value.
//
// Thread-safety: prepare(), cover(), lower() and poll_confirmation() from
// one thread (the Node's start/maintain/stop); loss() and losses() from any.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "lease_options.h"
#include "mark_file.h"
#include "snowid/coordinator.h"
#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid::server {

class ClusterMarks {
 public:
  // `layout`: the layout the node ids belong to (described in each mark,
  // and the audit log's IDs decoded under it). `audit_log`: the audit log
  // this node writes; empty if none.
  ClusterMarks(std::filesystem::path state_dir, std::string store, std::string cluster,
               Layout layout, std::filesystem::path audit_log = {});

  // Locks the state directory for this process until the object is
  // destroyed. kStateLocked while another snowidd holds it.
  Status hold_state_directory();

  // Where a generator for `claim` starts: strictly above the highest of the
  // store's floor, this node's own mark for the id and the latest ID of the
  // id in the audit log (`source` names which).
  struct Start {
    std::chrono::milliseconds above{0};
    std::string source;
  };
  // Before a generator is built for `claim`: opens the id's mark (once),
  // checks the store's incarnation and the audit log, and persists
  // claim.ceiling. Errors: the mark cannot be read or written, or the audit
  // log cannot be read (no generator may be built then).
  Result<Start> prepare(const Claim& claim);
  // Persists `reservation` as the mark of `node_id` if it is higher. Must
  // succeed before the generator's ceiling is raised to it.
  Status cover(std::uint64_t node_id, std::chrono::milliseconds reservation);
  // At a clean stop, nothing issued after `last_issued`: lowers the mark.
  Status lower(std::uint64_t node_id, std::chrono::milliseconds last_issued);

  // Why the node is not ready: the store loss it detected and no operator
  // confirmed yet (nullopt: none).
  std::optional<std::string> loss() const;
  std::uint64_t losses() const { return losses_.load(); }
  // Accepts an operator's confirmation file, if there, for a pending loss.
  void poll_confirmation();

 private:
  Result<MarkFile*> mark_of(std::uint64_t node_id);
  Status check_incarnation(const Claim& claim);
  // The start the audit log asks for if it recorded an ID of the claimed id
  // after `own` (the id's mark); nullopt if it does not.
  Result<std::optional<Start>> audited_start(const Claim& claim, const MarkFile& own) const;
  bool served_before() const;
  void report_loss(std::string message, std::chrono::milliseconds incarnation);

  const std::filesystem::path state_dir_;
  const std::string store_;
  const std::string cluster_;
  const Layout layout_;
  const std::string layout_description_;
  const std::filesystem::path audit_log_;
  std::unique_ptr<MarkFile> directory_lock_;  // hold_state_directory()
  std::map<std::uint64_t, std::unique_ptr<MarkFile>> marks_;
  std::map<std::uint64_t, std::chrono::milliseconds> started_above_;  // per id, the last prepare()
  std::uint64_t went_back_checked_ = 0;  // the claim generation last checked for a record gone back
  std::unique_ptr<MarkFile> incarnation_;
  // The new incarnation of a loss an operator has not confirmed yet.
  std::optional<std::chrono::milliseconds> pending_;
  mutable std::mutex loss_mutex_;
  std::optional<std::string> loss_;  // under loss_mutex_
  std::atomic<std::uint64_t> losses_{0};
};

}  // namespace snowid::server
