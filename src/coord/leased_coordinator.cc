// The leased coordinator's background thread. It wakes every 100 ms and,
// while the claim is held:
//   - fences: once CLOCK_BOOTTIME passes the lease deadline, the claim counts
//     as lost (may_issue() turns false at that instant by itself);
//   - renews the lease every lease_ttl / 3, and at every wake-up once the
//     deadline is closer than that, moving the deadline;
//   - raises the reservation when less than reserve_min_left is left.
// Each renewal's time at the store is counted in CoordinatorStats
// (renewal_latency), bucketed, so that a reader learns the distribution
// without a lock or an allocation here.
// After a loss it frees the old claim (best effort) and claims again,
// preferring the same node id, with backoff from 200 ms to the renewal
// period (lease_ttl / 3, at most 5 s): a store back after an outage is
// claimed from again within about one renewal. The library does not log: the
// reason of the last loss is in CoordinatorStats::last_loss, that of the last
// failed re-claim in last_reclaim_failure, and the server logs both at
// warning level (server/node.cc).
#include "leased_coordinator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace snowid::coord {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

namespace {

constexpr milliseconds kTick{100};
constexpr milliseconds kFirstBackoff{200};
constexpr milliseconds kMaxBackoff{5000};

// A step after which the node must not issue another ID under its claim:
// the claim is gone, or its clock and the store's disagree.
bool stops_issuing(const StepResult& step) {
  return step.outcome == StepOutcome::kClaimLost || step.outcome == StepOutcome::kClockRefused;
}

class LeasedCoordinator final : public Coordinator {
 public:
  LeasedCoordinator(std::unique_ptr<LeasedClaim> claim, LeasedStore store)
      : store_(std::move(store)),
        clock_(store_.clock != nullptr ? store_.clock : &SystemClock::instance()),
        node_claim_(std::move(claim)) {}

  ~LeasedCoordinator() override {
    stop_thread();
    std::lock_guard lock(work_mutex_);
    node_claim_->abandon();  // frees the id early; the reservation keeps uniqueness
  }

  Result<Claim> claim() override {
    std::lock_guard lock(work_mutex_);
    if (node_claim_->held()) return *current_claim();
    auto claimed = node_claim_->claim(std::nullopt);
    if (!claimed.ok()) return claimed.error();
    Claim published = publish_claim(*claimed);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    return published;
  }

  bool may_issue() const override {
    return state_.load(std::memory_order_acquire) == ClaimState::kHeld &&
           boot_time_now().count() < deadline_ns_.load(std::memory_order_acquire);
  }

  void advertise(std::vector<std::string> addresses) override {
    std::lock_guard lock(work_mutex_);
    node_claim_->set_addresses(std::move(addresses));
  }

  void request_reservation(milliseconds through) override {
    std::int64_t seen = wanted_ms_.load(std::memory_order_relaxed);
    while (through.count() > seen && !wanted_ms_.compare_exchange_weak(seen, through.count())) {
    }
  }

  milliseconds reservation() const override {
    return milliseconds{reservation_ms_.load(std::memory_order_acquire)};
  }

  std::uint64_t claim_generation() const override { return generation_.load(); }

  std::optional<Claim> current_claim() const override {
    std::lock_guard lock(claim_mutex_);
    return current_;
  }

  Status release(std::optional<milliseconds> last_issued) override {
    stop_thread();
    std::lock_guard lock(work_mutex_);
    state_.store(ClaimState::kUnclaimed);
    return node_claim_->release(last_issued);
  }

  CoordinatorStats stats() const override {
    CoordinatorStats s;
    s.store = store_.name;
    s.leased = true;
    s.cluster = store_.cluster;
    s.endpoints = store_.endpoints;
    s.state = state_.load();
    if (auto claim = current_claim(); claim && s.state != ClaimState::kUnclaimed) {
      s.node_id = claim->node_id;
    }
    if (s.state == ClaimState::kHeld) {
      s.lease_time_left = std::chrono::duration_cast<milliseconds>(
          nanoseconds{deadline_ns_.load()} - boot_time_now());
    }
    s.reservation = reservation();
    if (s.reservation.count() > 0) s.reservation_headroom = s.reservation - clock_->now();
    s.claims = claims_.load();
    s.reclaims = reclaims_.load();
    s.fencing_events = fencing_events_.load();
    s.lost_claims = lost_claims_.load();
    {
      std::lock_guard lock(claim_mutex_);
      s.last_loss = last_loss_;
      s.last_reclaim_failure = last_reclaim_failure_;
    }
    const StoreCounters& counters = node_claim_->counters();
    s.store_requests = counters.requests.load();
    s.store_errors = counters.errors.load();
    s.store_latency_total = std::chrono::microseconds{counters.latency_total_us.load()};
    s.store_latency_max = std::chrono::microseconds{counters.latency_max_us.load()};
    for (std::size_t i = 0; i < kRenewalLatencyBuckets; ++i) {
      s.renewal_latency[i] = renewal_latency_[i].load(std::memory_order_relaxed);
      s.renewals += s.renewal_latency[i];
    }
    s.renewal_latency_total =
        std::chrono::microseconds{renewal_latency_total_us_.load(std::memory_order_relaxed)};
    return s;
  }

 private:
  // Requires: work_mutex_ is held.
  // The generation is published before the new claim's reservation, so a
  // reader that loads the generation, then the reservation, then the
  // generation again, and sees the same generation twice, holds a
  // reservation of that generation (never a newer claim's, which may belong
  // to another node id).
  Claim publish_claim(Claim claim) {
    claim.generation = generation_.load() + 1;
    {
      std::lock_guard lock(claim_mutex_);
      current_ = claim;
    }
    generation_.store(claim.generation);
    claimed_at_ = boot_time_now();
    confirmed_ = false;
    first_reservation_ = node_claim_->reservation();
    publish_progress();
    claims_.fetch_add(1);
    state_.store(ClaimState::kHeld, std::memory_order_release);
    last_keep_alive_ = claimed_at_;
    return claim;
  }

  // Requires: work_mutex_ is held.
  // CONFIRMATION (docs/takeover-model.md). A claim's first reservation is at
  // most its floor, so nothing is issued under it until a raised one is
  // published; that waits for a renewal sent a lease after the claim. A store
  // restored from a copy taken before the claim may bring back the former
  // holder's claim, live for as long as that holder's renewals still come
  // within its own lease, which began before this claim: by then the claim is
  // gone from the store and that renewal fails instead.
  void publish_progress() {
    deadline_ns_.store(node_claim_->deadline().count(), std::memory_order_release);
    const milliseconds reservation =
        confirmed_ ? node_claim_->reservation() : std::min(node_claim_->reservation(), first_reservation_);
    reservation_ms_.store(reservation.count(), std::memory_order_release);
  }

  // Requires: work_mutex_ is held.
  void lose_claim(std::atomic<std::uint64_t>& counter, std::string why) {
    state_.store(ClaimState::kReclaiming, std::memory_order_release);
    {
      std::lock_guard lock(claim_mutex_);
      last_loss_ = std::move(why);
    }
    counter.fetch_add(1);
    lost_node_id_ = node_claim_->node_id();
    node_claim_->abandon();
    next_attempt_ = boot_time_now();
    backoff_ = kFirstBackoff;
  }

  void run() {
    const nanoseconds keep_alive_every = store_.lease_ttl / 3;
    while (!wait_for_stop(kTick)) {
      std::lock_guard lock(work_mutex_);
      const nanoseconds now = boot_time_now();
      if (state_.load() == ClaimState::kHeld) {
        if (fence_if_past_deadline()) continue;
        // Every third of the TTL, and at each tick once less than that is
        // left before the deadline: a claim whose Txn waited on a stalled
        // store starts with little of its lease left, and would otherwise
        // fence itself again before its first keep-alive.
        if (now - last_keep_alive_ >= keep_alive_every ||
            node_claim_->deadline() - now < keep_alive_every) {
          last_keep_alive_ = now;
          const nanoseconds sent = boot_time_now();
          StepResult kept = node_claim_->renew();
          count_renewal(boot_time_now() - sent);
          if (kept.outcome == StepOutcome::kDone) {
            // The deadline a renewal moved is published before the clock
            // read, which may wait on a store that went silent since: the
            // fence then follows the lease the store granted, never an older
            // deadline that a late publication would move forward again.
            deadline_ns_.store(node_claim_->deadline().count(), std::memory_order_release);
            kept = node_claim_->check_clock_with_store();
          }
          if (stops_issuing(kept)) {
            lose_claim(lost_claims_, std::move(kept.message));
            continue;
          }
          // A renewal that waited on silent store members (up to a request
          // timeout on each) may return after the deadline: the claim is
          // given up now, not after another store call waits as long.
          if (fence_if_past_deadline()) continue;
          // Sent a lease after the claim and acknowledged (see CONFIRMATION).
          if (kept.outcome == StepOutcome::kDone && now >= claimed_at_ + store_.lease_ttl) {
            confirmed_ = true;
          }
        }
        const milliseconds wanted{wanted_ms_.load(std::memory_order_relaxed)};
        if (StepResult extended = node_claim_->extend_reservation(false, wanted);
            stops_issuing(extended)) {
          lose_claim(lost_claims_, std::move(extended.message));
          continue;
        }
        if (fence_if_past_deadline()) continue;
        publish_progress();
      } else if (state_.load() == ClaimState::kReclaiming && now >= next_attempt_) {
        auto claimed = node_claim_->claim(lost_node_id_);
        if (claimed.ok()) {
          reclaims_.fetch_add(1);
          set_reclaim_failure({});
          publish_claim(*claimed);
        } else {
          set_reclaim_failure(claimed.error().message);
          next_attempt_ = now + backoff_;
          backoff_ = std::min(backoff_ * 2, max_backoff());
        }
      }
    }
  }

  // Requires: work_mutex_ is held and the claim is held.
  // True once the lease deadline has passed: the claim is then given up (the
  // readers' may_issue() already refuses from the deadline on).
  bool fence_if_past_deadline() {
    if (boot_time_now() < node_claim_->deadline()) return false;
    lose_claim(fencing_events_, "the lease deadline passed before the store acknowledged a renewal");
    return true;
  }

  // The longest wait between two re-claims: the renewal period, so that a
  // store back after an outage is claimed from within about one renewal.
  milliseconds max_backoff() const {
    return std::clamp(std::chrono::duration_cast<milliseconds>(store_.lease_ttl / 3),
                      kFirstBackoff, kMaxBackoff);
  }

  void count_renewal(nanoseconds took) {
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(took);
    renewal_latency_[renewal_latency_bucket(micros)].fetch_add(1, std::memory_order_relaxed);
    renewal_latency_total_us_.fetch_add(static_cast<std::uint64_t>(micros.count()),
                                        std::memory_order_relaxed);
  }

  void set_reclaim_failure(std::string why) {
    std::lock_guard lock(claim_mutex_);
    last_reclaim_failure_ = std::move(why);
  }

  // Sleeps up to `period`; true once stop_thread() was called.
  bool wait_for_stop(milliseconds period) {
    std::unique_lock lock(stop_mutex_);
    return stop_cv_.wait_for(lock, period, [this] { return stopping_; });
  }

  void stop_thread() {
    {
      std::lock_guard lock(stop_mutex_);
      stopping_ = true;
    }
    stop_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  LeasedStore store_;
  Clock* clock_;

  std::mutex work_mutex_;  // the background thread, claim() and release() take turns
  std::unique_ptr<LeasedClaim> node_claim_;
  nanoseconds last_keep_alive_{0};
  nanoseconds claimed_at_{0};  // CLOCK_BOOTTIME when the current claim was published
  bool confirmed_ = false;     // a renewal sent a lease after it was acknowledged
  milliseconds first_reservation_{0};  // published until then
  std::optional<std::uint64_t> lost_node_id_;
  nanoseconds next_attempt_{0};
  milliseconds backoff_{kFirstBackoff};

  // Published for lock-free readers.
  std::atomic<ClaimState> state_{ClaimState::kUnclaimed};
  std::atomic<std::int64_t> deadline_ns_{0};  // CLOCK_BOOTTIME
  std::atomic<std::int64_t> reservation_ms_{0};
  std::atomic<std::int64_t> wanted_ms_{0};  // request_reservation()'s highest
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::uint64_t> claims_{0}, reclaims_{0}, fencing_events_{0}, lost_claims_{0};
  std::array<std::atomic<std::uint64_t>, kRenewalLatencyBuckets> renewal_latency_{};
  std::atomic<std::uint64_t> renewal_latency_total_us_{0};
  mutable std::mutex claim_mutex_;
  std::optional<Claim> current_;
  std::string last_loss_;  // why the claim was last lost; under claim_mutex_
  std::string last_reclaim_failure_;  // see CoordinatorStats; under claim_mutex_

  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace

LeasedStore leased_store(std::string name, const LeaseOptions& options,
                         const std::vector<std::string>& endpoints,
                         const std::string& endpoints_text) {
  LeasedStore store;
  store.name = std::move(name);
  store.cluster = options.cluster;
  store.endpoints =
      endpoints_text.empty() ? fmt::format("{}", fmt::join(endpoints, ",")) : endpoints_text;
  store.lease_ttl = options.lease_ttl;
  store.clock = options.clock;
  return store;
}

std::unique_ptr<Coordinator> make_leased_coordinator(std::unique_ptr<LeasedClaim> claim,
                                                     LeasedStore store) {
  return std::make_unique<LeasedCoordinator>(std::move(claim), std::move(store));
}

}  // namespace snowid::coord
