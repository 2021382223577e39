// Worker-id coordination: which node id (datacenter, worker) this process may
// issue IDs under, and for how long.
//
// A Coordinator hands out a Claim: a node id, a floor (start strictly above
// it) and a ceiling (never issue past it, raised over time). Implementations:
//   make_static_coordinator()  a fixed node id from the configuration; no
//                              lease, no ceiling (snowid's single-node mode)
//   the leased coordinators    a node id leased from etcd, Redis or ZooKeeper
//                              with a fenced reservation: snowidd's own, picked
//                              by its coordinator factory (src/coord), not part
//                              of the installed library
//
// How a server uses it (startup order):
//   1. claim() (blocks, bounded). Create the Generator with
//      datacenter_id/worker_id from the claim, start_above = claim.floor and,
//      if claim.ceiling is set, external_ceiling = *claim.ceiling. A server
//      that keeps its own mark per node id (snowidd does: a store may lose
//      its data) persists the ceiling in it first and starts above the
//      higher of claim.floor and that mark; a claim.store_created other than
//      the one it served the cluster under is a store that lost its data.
//   2. Per request: if !may_issue(), answer UNAVAILABLE / 503. may_issue()
//      takes no lock (an atomic load and a clock read).
//   3. From a timer (~100 ms): request_reservation(the generator's
//      external_demand), then (after persisting it in its own mark, if it
//      keeps one) generator.raise_external_ceiling(reservation()),
//      but only if claim_generation() read before and after reservation() is
//      the generation the Generator was built for (a newer claim's
//      reservation may belong to another node id); if claim_generation()
//      changed, the claim was lost and re-taken (maybe under another node
//      id): build a new Generator from current_claim().
//   4. At a clean stop: stop issuing, then release(generator's last issued)
//      (and lower its own mark to it).
//   A lost claim (fenced, expired, deleted, or the store lost its data) is
//   never logged here: stats().last_loss says why, for the server to log.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid {

// What a coordinator granted.
struct Claim {
  std::uint64_t node_id = 0;  // datacenter_id << worker_bits | worker_id
  std::uint64_t datacenter_id = 0;
  std::uint64_t worker_id = 0;
  // Unix ms: every ID issued under this claim must lie in a time unit that
  // starts strictly after it (GeneratorOptions::start_above). It is the
  // reservation left by earlier holders of the node id.
  std::chrono::milliseconds floor{0};
  // Unix ms: no ID may lie in a time unit that starts after it
  // (GeneratorOptions::external_ceiling). nullopt: no limit (static).
  std::optional<std::chrono::milliseconds> ceiling;
  // Increases by one each time the coordinator claims anew.
  std::uint64_t generation = 0;
  // Leased: the store's incarnation for this cluster, the Unix ms its
  // `created` marker holds (written by the first claim after the store began
  // or lost its data; 0 if an operator vouched that the cluster is new to
  // the store, or without a store). A node that served the cluster before
  // and now sees another value talks to a store that lost its data.
  std::chrono::milliseconds store_created{0};
  // Leased: this claim wrote that marker: the store had no trace of the
  // cluster.
  bool store_created_now = false;
  // Leased: the reservation the store held for the node id when it was
  // claimed (0: none). Below what this node itself reserved earlier under
  // that id, it is a store whose record went back (restored from a backup).
  std::chrono::milliseconds store_reservation{0};
  // Leased: what set `floor`, for the start-up log ("" for a static id).
  std::string floor_source;
};

enum class ClaimState {
  kUnclaimed,   // claim() not called yet, or released
  kHeld,        // claimed and the lease deadline has not passed
  kReclaiming,  // the claim was lost (fenced, revoked, expired); claiming again
};

const char* claim_state_name(ClaimState state);  // "unclaimed", "held", "reclaiming"

// The buckets of CoordinatorStats::renewal_latency: bucket i counts the
// renewals that took more than renewal_latency_bound(i - 1) and at most
// renewal_latency_bound(i); the last one has no upper bound.
inline constexpr std::size_t kRenewalLatencyBuckets = 64;
// 100 us * 2^(bucket / 4): 100 us to 4.6 s in steps of 19 %;
// microseconds::max() for the last bucket (and beyond).
std::chrono::microseconds renewal_latency_bound(std::size_t bucket);
// The bucket a renewal that took `latency` counts in.
std::size_t renewal_latency_bucket(std::chrono::microseconds latency);

// Counters and gauges for operators (exported by the server's /metrics and
// /v1/info). The server learns which store it talks to only from here: it
// names the store's info keys and metrics after `store`.
struct CoordinatorStats {
  std::string store;      // the store's name in the factory's table: "static", "etcd", ...
  bool leased = false;    // node ids leased from the store, with a ceiling; false: a fixed id
  std::string cluster;    // leased: the snowid cluster's name in the store
  std::string endpoints;  // leased: the store's addresses, as configured
  ClaimState state = ClaimState::kUnclaimed;
  std::optional<std::uint64_t> node_id;
  // Time left until this node fences itself (negative once passed); nullopt without a lease.
  std::optional<std::chrono::milliseconds> lease_time_left;
  std::chrono::milliseconds reservation{0};           // Unix ms of the ceiling (0: none)
  std::chrono::milliseconds reservation_headroom{0};  // reservation minus now
  std::uint64_t claims = 0;          // successful claims, the first included
  std::uint64_t reclaims = 0;        // claims after a lost one
  std::uint64_t fencing_events = 0;  // times the lease deadline passed while held
  std::uint64_t lost_claims = 0;     // times the claim was found gone or taken over
  std::string last_loss;             // why the claim was last lost or fenced ("": never)
  // Why the last attempt to claim again after a loss failed; "" once one
  // succeeded (or none failed).
  std::string last_reclaim_failure;
  std::uint64_t store_errors = 0;    // failed requests to the store (after failover)
  std::uint64_t store_requests = 0;
  std::chrono::microseconds store_latency_total{0};  // sum over store_requests
  std::chrono::microseconds store_latency_max{0};
  // Leased: renewals of the lease sent (failed ones too), and how long each
  // took from sending to the store's answer, by bucket (see
  // renewal_latency_bound()): what a fleet's renewals cost its store, and
  // how close a slow store brings the node to its lease deadline.
  std::uint64_t renewals = 0;
  std::array<std::uint64_t, kRenewalLatencyBuckets> renewal_latency{};
  std::chrono::microseconds renewal_latency_total{0};  // sum over renewals
};

class Coordinator {
 public:
  virtual ~Coordinator() = default;

  // Claims a node id and returns it, or an error saying why not (store
  // unreachable, every id taken, clock too far from the peers'): the caller
  // retries with backoff. Bounded in time. After success a background thread
  // (if any) keeps the claim and its reservation alive.
  virtual Result<Claim> claim() = 0;

  // True while IDs may be issued under the current claim: it is held and its
  // lease deadline (measured on CLOCK_BOOTTIME) has not passed.
  virtual bool may_issue() const = 0;

  // The ceiling of the current claim (Unix ms); raised ahead of need by the
  // background thread. 0 before the first claim.
  virtual std::chrono::milliseconds reservation() const = 0;
  // IDs are wanted up to `through` (Unix ms): the generator was refused a
  // unit past the reservation, as after a forward step of the clock. The
  // coordinator raises its reservation to cover it at its next step. It
  // never raises it ahead of the clock on the clock's word alone (a forward
  // glitch with nothing issued must not poison the reservation a successor
  // starts above). No-op without a ceiling.
  virtual void request_reservation(std::chrono::milliseconds through) { (void)through; }
  // The addresses this node serves on, once its listeners are bound (a port
  // 0 in the configuration becomes the port the system chose): published
  // with the claim at the coordinator's next step. No-op without a store.
  virtual void advertise(std::vector<std::string> addresses) { (void)addresses; }

  virtual std::uint64_t claim_generation() const = 0;
  virtual std::optional<Claim> current_claim() const = 0;

  // Stops the background work and gives the node id back; the reservation
  // stays, so the next holder starts above it. `last_issued` (Unix ms of the
  // unit of the last ID issued) may lower the reservation to it, sparing the
  // next holder a wait. Requires: no ID is issued during or after the call.
  // The coordinator is finished afterwards: claim again with a new one.
  virtual Status release(std::optional<std::chrono::milliseconds> last_issued) = 0;

  virtual CoordinatorStats stats() const = 0;
};

// Today's single-node behaviour: the given ids, always issuable, no ceiling.
// kInvalidArgument if an id does not fit the layout.
Result<std::unique_ptr<Coordinator>> make_static_coordinator(const Layout& layout,
                                                             std::uint64_t datacenter_id,
                                                             std::uint64_t worker_id);

// Number of node ids of a layout: 2^(datacenter_bits + worker_bits).
std::uint64_t node_id_count(const Layout& layout);

// The preferred node id a Kubernetes StatefulSet pod implies: the ordinal
// after the last '-' of its hostname ("snowid-3" -> 3). kInvalidArgument if
// there is no such numeric suffix or it is not below `id_count`.
Result<std::uint64_t> node_id_from_pod_name(std::string_view hostname, std::uint64_t id_count);

}  // namespace snowid
