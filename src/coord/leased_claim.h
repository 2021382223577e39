// One node's claim on a node id in a leasing store, as the leased
// coordinator (leased_coordinator.h) drives it: claim, renew, raise the
// reservation, release. LeasedClaim is the base of every store's claim
// (etcd_claim.h, redis_claim.h, zookeeper_claim.h): it owns the state they
// share (the claim record, the wall-clock witness, the floor, the
// reservation, the deadline and the republish flag) and the common steps of
// extend_reservation(); a store implements only its store operations and
// keeps the reservation invariant that lease_options.h states. This header
// also holds what the stores share besides: the claim record, the peer
// clock check, the choice of candidate ids, and the store's request
// counters.
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

// The samples of `peers` that are live by the store's clock: each was
// refreshed within its max_age + `max_offset` of `store_now_at_least` (the
// store's clock, at least, now). A record that stopped being refreshed, a
// holder partitioned from the store or one that lost its quorum with it,
// tells nothing of any clock: taken as live it would read as this node's
// clock being ahead by its age, and refuse every claim until the record
// went. Without the store's clock (nullopt) every sample is kept.
std::vector<PeerClock> live_peer_clocks(const std::vector<PeerClock>& peers,
                                        std::optional<std::chrono::milliseconds> store_now_at_least,
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
  std::vector<PeerClock> peer_clocks;  // for check_peer_clocks()
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

// The node id `text` spells in decimal, all of it, if it does.
std::optional<std::uint64_t> parse_node_id(std::string_view text);

// "host:port,host:port" into entries, each stripped of one of `schemes`
// ("http://"); kInvalidArgument naming the bad entry and `store`.
Result<std::vector<std::string>> parse_host_port_list(std::string_view list, std::string_view store,
                                                      std::vector<std::string_view> schemes);

// A cluster's ID space as published in a store: its name and its layout,
// described (describe(Layout): bits, unit, epoch, sequence position).
struct ClusterIdSpace {
  std::string cluster;
  std::string layout;
};
// kInvalidArgument naming the first other cluster of `spaces` whose layout
// is `options.layout` (their IDs would repeat under shared node ids), unless
// options.share_id_space; `store` as prose names it.
Status check_distinct_id_space(const LeaseOptions& options, std::string_view store,
                               const std::vector<ClusterIdSpace>& spaces);

// How a step that talks to the store ended.
enum class StepOutcome {
  kDone,         // did what it should (or had nothing to do)
  kClaimLost,    // the claim is gone: lease expired or revoked, key deleted or taken
  kStoreFailed,  // the store could not be reached or refused; the claim may still be held
  // This node's clock is too far from the store's (or the store's clock has
  // not been read for too long): the node must stop issuing at once.
  kClockRefused,
};

// The store's own clock as one request read it (Unix ms): the store's time
// lay in [at, at + resolution] while the request ran (etcd's HTTP Date is
// cut to the second: resolution 1 s; the others 1 ms).
struct StoreTime {
  std::chrono::milliseconds at{0};
  std::chrono::milliseconds resolution{1};
};

// How far this node's clock may run ahead of its store's:
// min(reserve_ahead, max_peer_clock_offset), whatever the operator allows
// beyond (the takeover rule below holds for a lead up to reserve_ahead).
std::chrono::milliseconds clock_lead_allowed(const LeaseOptions& options);
// Ok unless this node's clock (`now`) is ahead of the store's reading by
// more than clock_lead_allowed(), or behind it by more than
// max_peer_clock_offset (0: unchecked); else kUnavailable naming the store,
// both clocks and the bound.
Status check_store_clock(const LeaseOptions& options, std::string_view store, StoreTime store_time,
                         std::chrono::milliseconds now);

// THE TAKEOVER RULE (docs/design.md, "A node never trusts a store's record
// to be current"): a claim cannot tell a dead holder from a live one whose
// record was rewound (a store restored from a backup), so every claim starts
// above the later of the store's clock (read after the take-over; its upper
// bound, `store_now_at_most`) and the claimer's, plus lease_ttl +
// reserve_ahead. A hidden holder issued nothing above that: it issues only
// at or below reservations it wrote, and every reservation a holder writes
// is at most a reading of the store's clock taken before the write +
// lease_ttl + reserve_ahead (extend_reservation()'s cap; the first of a
// claim uses the reading taken for its own take-over, before this one), or
// the reservation the store held already.
std::chrono::milliseconds takeover_floor(const LeaseOptions& options,
                                         std::chrono::milliseconds store_now_at_most,
                                         std::chrono::milliseconds claimer_now);

struct StepResult {
  StepOutcome outcome = StepOutcome::kDone;
  std::string message;
};

// The base of every store's claim (template method): the public steps
// below are the contract the leased coordinator relies on; a store fills in
// the protected hooks and the pure virtual steps with its own operations.
class LeasedClaim {
 public:
  virtual ~LeasedClaim() = default;
  LeasedClaim(const LeasedClaim&) = delete;
  LeasedClaim& operator=(const LeasedClaim&) = delete;

  // Reads the claims (read_claims()), checks the peers' clocks and that no
  // other cluster in the store has this one's ID space
  // (check_distinct_id_space()), claims the
  // preferred id if free else the lowest free one (try_claim(), at most
  // kMaxClaimAttempts ids, with claim_first_free()'s errors), raises the
  // floor to the takeover floor (the store's clock read after the take, and
  // checked against this node's), and writes the first reservation
  // (take_reservation()); abandons what it took if a step fails. A store
  // whose clock cannot be read fails the claim unless live peers' clocks
  // vouched for this node's and the store did not lose its data. `preferred` overrides options.preferred_node_id (a re-claim
  // prefers the old id). kUnavailable if a claim is held already.
  Result<Claim> claim(std::optional<std::uint64_t> preferred);
  // One renewal of the lease (renew_lease()); on success moves the
  // deadline, then reads the store's clock (check_clock_with_store()).
  StepResult keep_alive();
  // The renewal alone: on success deadline() has moved. A caller that
  // publishes the deadline does so before check_clock_with_store(), whose
  // read may wait on a store that stopped answering after the renewal.
  StepResult renew() { return renew_lease(); }
  // Reads the store's clock: kClockRefused if this node's clock is further
  // from it than check_store_clock() allows; done if the clock cannot be read
  // (the cap keeps the last reading, reservation_cap()).
  StepResult check_clock_with_store();
  // Raises the reservation to base + reserve_ahead if less than
  // reserve_min_left is left above base (always if `force`, or if the record
  // changed since it was last written), refreshing the published wall time.
  // base is the later of the time the monotonic clock vouches for
  // (WallClockWitness: a forward glitch of the wall clock alone does not
  // move the reservation) and `wanted`, the unit the generator was refused
  // for (Unix ms; IDs are really wanted there). Succeeds only while this
  // claim is held: kClaimLost if it is not; else prepare_extension(), then
  // write_reservation() if a new reservation is due. The reservation written
  // is at most the store's clock as last read + lease_ttl + reserve_ahead
  // (a claim's first one: at most the store's reservation, if that is
  // higher): the bound the takeover rule rests on; a clock or wanted unit
  // beyond it ends the step with kClockRefused.
  StepResult extend_reservation(bool force = false,
                                std::chrono::milliseconds wanted = std::chrono::milliseconds{0});
  // Deletes the claim (keeping the reservation, lowered to `last_issued` if
  // given) and ends the lease. Ok if the claim was gone already.
  virtual Status release(std::optional<std::chrono::milliseconds> last_issued) = 0;
  // Forgets the claim after it was lost; frees the id in the store, best effort.
  virtual void abandon() = 0;
  // Publishes `addresses` in the claim record with the next reservation write.
  void set_addresses(std::vector<std::string> addresses);

  virtual bool held() const = 0;
  std::uint64_t node_id() const { return node_id_; }
  // The floor read when the id was claimed: every ID issued lies above it.
  std::chrono::milliseconds floor() const { return floor_; }
  std::chrono::milliseconds reservation() const { return reservation_; }
  // CLOCK_BOOTTIME after which this node must not issue.
  std::chrono::nanoseconds deadline() const { return deadline_; }
  const std::string& instance() const { return record_.instance; }
  virtual const StoreCounters& counters() const = 0;
  // The reservation the store held for the id when it was claimed (0: none).
  std::chrono::milliseconds store_reservation() const { return store_reservation_; }

 protected:
  // The wall-clock witness's tolerance (WallClockWitness): a reading further
  // ahead than this of what the monotonic clock vouches for is a forward
  // step that the reservation does not follow.
  static constexpr std::chrono::milliseconds kWitnessTolerance{100};

  // Requires: options passed check_lease_options(). Its clock (or the
  // system clock) is the one every step reads.
  explicit LeasedClaim(const LeaseOptions& options);

  // Ids tried per claim() before giving up on a contended cluster.
  static constexpr std::size_t kMaxClaimAttempts = 32;

  // The claims in the store now (note_claim() each), for claim(). A store
  // that opens a session or a lease per claim opens it here.
  virtual Result<ClaimsSeen> read_claims(std::optional<std::uint64_t> preferred) = 0;
  // Takes `node_id` if it is free: true if it is ours now (node_id_, floor_
  // and reservation_ set, the lease's deadline_ too); false naming the
  // holder's claim value in `holder` if another node holds it.
  virtual Result<bool> try_claim(std::uint64_t node_id, std::string* holder) = 0;
  // Writes the first reservation of the id just claimed: by default
  // raise_to_takeover_floor(), then extend_reservation(force), kUnavailable
  // saying why if it fails. A store that sets floor_ here, not in
  // try_claim(), calls raise_to_takeover_floor() itself once it has.
  virtual Status take_reservation();
  // Reads the store's clock, checks this node's against it and raises
  // floor_ to takeover_floor(). `peers_vouched`: live peers' clocks agreed
  // with this node's (claim() checked them: peers_vouched_).
  Status raise_to_takeover_floor(bool peers_vouched);

  // The store's own clock, read now; kUnavailable saying why if it cannot
  // be read (the store unreachable, or etcd's HTTP Date not reachable).
  virtual Result<StoreTime> read_store_time() = 0;
  // Every cluster's ID space published in this store (this one's too).
  virtual Result<std::vector<ClusterIdSpace>> read_id_spaces() = 0;
  // Publishes this cluster's ID space (`layout`, described) in the store.
  virtual Status publish_id_space(const std::string& layout) = 0;
  // The store as prose names it in messages: "etcd", "PostgreSQL".
  virtual std::string store_title() const = 0;
  // One renewal of the lease; on success moves the deadline.
  virtual StepResult renew_lease() = 0;

  // Before extend_reservation() computes the next reservation of a held
  // claim: what the store must learn first (ZooKeeper: the reservation's
  // version after an unanswered write). Anything but kDone ends the step.
  virtual StepResult prepare_extension() { return {}; }
  // Writes `target` and the claim record (record_, its wall time set) under
  // the claim, fenced so that it applies only while the claim is ours; calls
  // reservation_written() once the store holds it.
  virtual StepResult write_reservation(std::chrono::milliseconds target) = 0;

  // The store now holds `value` as the reservation, and the current record.
  void reservation_written(std::chrono::milliseconds value);
  // Adds the claim of `id` whose value is `value` to `seen`: the id is
  // taken, and the clock its record published is a peer's unless the record
  // is this process's.
  void note_claim(ClaimsSeen& seen, std::uint64_t id, std::string_view value,
                  std::optional<std::uint64_t> preferred) const;
  // True if the claim value `value` is this process's record (a claim left
  // by an earlier claim of this process, which issues nothing under it).
  bool left_by_this_process(std::string_view value) const;

  Clock& clock() const { return *clock_; }

  ClaimRecord record_;
  std::uint64_t node_id_ = 0;
  // Set by try_claim(): the store's reservation H (or the floor a lost
  // store's created marker implies); claim() raises it to the takeover floor.
  std::chrono::milliseconds floor_{0};
  std::chrono::milliseconds reservation_{0};
  std::chrono::nanoseconds deadline_{0};
  bool peers_vouched_ = false;  // claim() checked live peers' clocks, and they agreed
  std::chrono::milliseconds created_{0};  // the store's created marker read with the claim
  bool created_now_ = false;              // this claim wrote the marker

 private:
  LeaseOptions lease_;
  Clock* clock_;
  WallClockWitness witness_;  // read by extend_reservation() alone
  bool republish_ = false;    // the record changed: write it at the next extension

  // The Claim handed out for the id now held (floor, reservation, created).
  Claim granted() const;
  // check_distinct_id_space() over the store's ID spaces; notes whether
  // this cluster's is published there.
  Status check_id_space();
  // Reads the store's clock into store_time_ (or store_time_unread_).
  std::optional<StoreTime> read_clock_of_store();
  // The highest reservation the takeover rule lets this claim write now.
  std::optional<std::chrono::milliseconds> reservation_cap() const;

  std::chrono::milliseconds store_reservation_{0};
  std::string floor_source_;
  std::optional<StoreTime> store_time_;  // the latest reading of the store's clock
  std::chrono::nanoseconds store_read_at_{0};  // CLOCK_BOOTTIME when it was read
  std::string store_time_unread_;  // why the last reading failed ("": it did not)
  bool id_space_published_ = false;  // this cluster's ID space is in the store
  bool first_reservation_ = false;   // the claim's first reservation is not written yet
  // What that first reservation may reach: the store's reservation, or the
  // takeover floor by the store's clock alone.
  std::chrono::milliseconds first_bound_{0};
};

}  // namespace snowid::coord
