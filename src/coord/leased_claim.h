// One node's claim on a node id in a leasing store, as the leased
// coordinator (leased_coordinator.h) drives it: claim, renew, raise the
// reservation, release. Each store implements LeasedClaim in its own file
// (etcd_claim.cc, redis_claim.cc) and keeps the reservation invariant that
// lease_options.h states. This header also holds what
// the stores share: the claim record, the peer clock check, the choice of
// candidate ids, and the store's request counters.
//
// Thread-safety: none; one owner calls a LeasedClaim.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lease_options.h"
#include "snowid/clock.h"
#include "snowid/coordinator.h"
#include "snowid/error.h"

namespace snowid::coord {

// Request counters of a store's client, read by CoordinatorStats.
struct StoreCounters {
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> errors{0};
  std::atomic<std::uint64_t> latency_total_us{0};
  std::atomic<std::uint64_t> latency_max_us{0};
  std::atomic<std::uint64_t> sign_ins{0};  // successful authentications

  // Counts one request that took `latency`.
  void record(std::chrono::microseconds latency, bool failed);
};

// The value of a claim: who holds the node id.
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

  // This process's record under `options`, before it holds an id.
  static ClaimRecord of_this_process(const LeaseOptions& options, Clock& clock);

  std::string to_json() const;
  static Result<ClaimRecord> parse(std::string_view json);
  // "host pid=N instance=I", how operators are told who holds an id.
  std::string holder() const;
  // Sets datacenter_id and worker_id from a node id of `layout`.
  void set_node_id(std::uint64_t node_id, const Layout& layout);
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

// The ids claim() tries, in order: the preferred one if free, then (unless
// the preferred one is required) the lowest free ones, at most `limit`.
// Empty if none is free (or the required one is taken).
std::vector<std::uint64_t> claim_candidates(const LeaseOptions& options,
                                            const std::set<std::uint64_t>& taken,
                                            std::optional<std::uint64_t> preferred,
                                            std::size_t limit);
// What claim() learned of the cluster before choosing: the ids held by
// others, and who holds the preferred one.
struct ClaimsSeen {
  std::set<std::uint64_t> taken;
  std::string preferred_holder = "another node";
};
// Ours if one is taken now; `won`, if it held one, was claimed by `try_claim`
// (true: ours now; false: held by the node it writes to `holder`).
using TryClaim = std::function<Result<bool>(std::uint64_t node_id, std::string* holder)>;
// Takes the first id of claim_candidates() that `try_claim` wins, trying at
// most `limit`. kAlreadyExists naming the holder if the required id is taken
// (or another node wins it), kInvalidArgument if the required id is missing
// or beyond the layout, kUnavailable if every id is claimed; try_claim's
// own errors as they are.
Status claim_first_free(const LeaseOptions& options, const ClaimsSeen& seen,
                        std::optional<std::uint64_t> preferred, std::size_t limit,
                        const TryClaim& try_claim);
// kAlreadyExists: `node_id` is held by `holder` and node_id_policy requires it.
Error held_elsewhere(std::string_view cluster, std::uint64_t node_id, std::string_view holder);
// kUnavailable: every node id of the cluster is claimed.
Error all_node_ids_claimed(const LeaseOptions& options);
// The Claim a coordinator hands out for `node_id`.
Claim claim_of(std::uint64_t node_id, const Layout& layout, std::chrono::milliseconds floor,
               std::chrono::milliseconds reservation);
// kUnavailable: a reservation value is not a Unix-ms timestamp; the node id
// stays unusable until an operator repairs `where`.
Result<std::chrono::milliseconds> parse_reservation(std::string_view where, std::string_view value);

// The reservation a claim should write now, or nullopt if none is due:
// base is the later of what `witness` vouches for and `wanted` (which the
// witness then trusts); due if `force`, or if less than reserve_min_left is
// left above base. The target is base (at least `floor`) + reserve_ahead,
// never below `reservation`.
std::optional<std::chrono::milliseconds> next_reservation(
    WallClockWitness& witness, const LeaseOptions& options, std::chrono::milliseconds reservation,
    std::chrono::milliseconds floor, bool force, std::chrono::milliseconds wanted);

// "host:port,host:port" into entries, each stripped of one of `schemes`
// ("http://"); kInvalidArgument naming the bad entry and `store`.
Result<std::vector<std::string>> parse_host_port_list(std::string_view list, std::string_view store,
                                                      std::vector<std::string_view> schemes);

// How a step that talks to the store ended.
enum class StepOutcome {
  kDone,         // did what it should (or had nothing to do)
  kClaimLost,    // the claim is gone: lease expired or revoked, key deleted or taken
  kStoreFailed,  // the store could not be reached or refused; the claim may still be held
};

struct StepResult {
  StepOutcome outcome = StepOutcome::kDone;
  std::string message;
};

class LeasedClaim {
 public:
  virtual ~LeasedClaim() = default;

  // Checks the peers' clocks, takes a lease, claims the preferred id if free
  // else the lowest free one, and writes the first reservation.
  // `preferred` overrides options.preferred_node_id (a re-claim prefers the old id).
  virtual Result<Claim> claim(std::optional<std::uint64_t> preferred) = 0;
  // One renewal of the lease; on success moves the deadline.
  virtual StepResult keep_alive() = 0;
  // Raises the reservation to base + reserve_ahead if less than
  // reserve_min_left is left above base (always if `force`), refreshing the
  // published wall time. base is the later of the time the monotonic clock
  // vouches for (WallClockWitness: a forward glitch of the wall clock alone
  // does not move the reservation) and `wanted`, the unit the generator was
  // refused for (Unix ms; IDs are really wanted there). Succeeds only while
  // this claim is held.
  virtual StepResult extend_reservation(bool force, std::chrono::milliseconds wanted) = 0;
  // Deletes the claim (keeping the reservation, lowered to `last_issued` if
  // given) and ends the lease. Ok if the claim was gone already.
  virtual Status release(std::optional<std::chrono::milliseconds> last_issued) = 0;
  // Forgets the claim after it was lost; frees the id in the store, best effort.
  virtual void abandon() = 0;
  // Publishes `addresses` in the claim record with the next reservation write.
  virtual void set_addresses(std::vector<std::string> addresses) = 0;

  virtual bool held() const = 0;
  virtual std::uint64_t node_id() const = 0;
  virtual std::chrono::milliseconds reservation() const = 0;
  // CLOCK_BOOTTIME after which this node must not issue.
  virtual std::chrono::nanoseconds deadline() const = 0;
  virtual const StoreCounters& counters() const = 0;
};

}  // namespace snowid::coord
