// The etcd coordinator: a NodeClaim (etcd_claim.cc) kept alive by one
// background thread, with its state published in atomics so that the
// server's request path never waits on etcd or on a lock.
//
// The background thread wakes every 100 ms and, while the claim is held:
//   - fences: once CLOCK_BOOTTIME passes the lease deadline, the claim counts
//     as lost (may_issue() turns false at that instant by itself);
//   - sends a keep-alive every lease_ttl / 3, and at every wake-up once the
//     deadline is closer than that, moving the deadline;
//   - raises the reservation when less than reserve_min_left is left.
// After a loss it revokes the old lease (best effort) and claims again,
// preferring the same node id, with backoff from 200 ms to 5 s.
#include "snowid/etcd_coordinator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "etcd_claim.h"
#include "etcd_client.h"

namespace snowid {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

namespace {

constexpr milliseconds kTick{100};
constexpr milliseconds kFirstBackoff{200};
constexpr milliseconds kMaxBackoff{5000};

Status check_cluster_name(const std::string& cluster) {
  const bool ok = !cluster.empty() && std::all_of(cluster.begin(), cluster.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
  });
  if (ok) return {};
  return invalid_argument(
      fmt::format("bad cluster name '{}': use letters, digits, '-', '_' and '.'", cluster));
}

Status check_options(const EtcdOptions& options) {
  Status name = check_cluster_name(options.cluster);
  if (!name.ok()) return name;
  Status layout = validate(options.layout);
  if (!layout.ok()) return layout;
  if (options.preferred_node_id && *options.preferred_node_id >= node_id_count(options.layout)) {
    return invalid_argument(fmt::format("preferred node id {} is beyond the layout's {} node ids",
                                        *options.preferred_node_id,
                                        node_id_count(options.layout)));
  }
  if (options.lease_ttl.count() < 1) return invalid_argument("the lease TTL must be at least 1 s");
  if (options.safety_margin.count() < 0 || options.safety_margin >= options.lease_ttl) {
    return invalid_argument("the safety margin must be at least 0 and below the lease TTL");
  }
  if (options.reserve_min_left.count() <= 0 || options.reserve_ahead <= options.reserve_min_left) {
    return invalid_argument("need 0 < reserve_min_left < reserve_ahead");
  }
  if (options.max_peer_clock_offset.count() < 0) {
    return invalid_argument("the peer clock offset limit must not be negative");
  }
  return {};
}

class EtcdCoordinator final : public Coordinator {
 public:
  EtcdCoordinator(std::unique_ptr<coord::EtcdClient> client, const EtcdOptions& options)
      : client_(std::move(client)),
        options_(options),
        clock_(options.clock != nullptr ? options.clock : &SystemClock::instance()),
        node_claim_(*client_, options) {}

  ~EtcdCoordinator() override {
    stop_thread();
    std::lock_guard lock(work_mutex_);
    node_claim_.abandon();  // frees the id early; the reservation keeps uniqueness
  }

  Result<Claim> claim() override {
    std::lock_guard lock(work_mutex_);
    if (node_claim_.held()) return *current_claim();
    auto claimed = node_claim_.claim(std::nullopt);
    if (!claimed.ok()) return claimed.error();
    Claim published = publish_claim(*claimed);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    return published;
  }

  bool may_issue() const override {
    return state_.load(std::memory_order_acquire) == ClaimState::kHeld &&
           coord::boot_time_now().count() < deadline_ns_.load(std::memory_order_acquire);
  }

  void advertise(std::vector<std::string> addresses) override {
    std::lock_guard lock(work_mutex_);
    node_claim_.set_addresses(std::move(addresses));
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
    return node_claim_.release(last_issued);
  }

  CoordinatorStats stats() const override {
    CoordinatorStats s;
    s.store = "etcd";
    s.leased = true;
    s.cluster = options_.cluster;
    s.endpoints = options_.endpoints_text.empty()
                      ? fmt::format("{}", fmt::join(options_.endpoints, ","))
                      : options_.endpoints_text;
    s.state = state_.load();
    if (auto claim = current_claim(); claim && s.state != ClaimState::kUnclaimed) {
      s.node_id = claim->node_id;
    }
    if (s.state == ClaimState::kHeld) {
      s.lease_time_left = std::chrono::duration_cast<milliseconds>(
          nanoseconds{deadline_ns_.load()} - coord::boot_time_now());
    }
    s.reservation = reservation();
    if (s.reservation.count() > 0) s.reservation_headroom = s.reservation - clock_->now();
    s.claims = claims_.load();
    s.reclaims = reclaims_.load();
    s.fencing_events = fencing_events_.load();
    s.lost_claims = lost_claims_.load();
    const auto& counters = client_->counters();
    s.store_requests = counters.requests.load();
    s.store_errors = counters.errors.load();
    s.store_latency_total = std::chrono::microseconds{counters.latency_total_us.load()};
    s.store_latency_max = std::chrono::microseconds{counters.latency_max_us.load()};
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
    publish_progress();
    claims_.fetch_add(1);
    state_.store(ClaimState::kHeld, std::memory_order_release);
    last_keep_alive_ = coord::boot_time_now();
    return claim;
  }

  // Requires: work_mutex_ is held.
  void publish_progress() {
    deadline_ns_.store(node_claim_.deadline().count(), std::memory_order_release);
    reservation_ms_.store(node_claim_.reservation().count(), std::memory_order_release);
  }

  // Requires: work_mutex_ is held.
  void lose_claim(std::atomic<std::uint64_t>& counter) {
    state_.store(ClaimState::kReclaiming, std::memory_order_release);
    counter.fetch_add(1);
    lost_node_id_ = node_claim_.node_id();
    node_claim_.abandon();
    next_attempt_ = coord::boot_time_now();
    backoff_ = kFirstBackoff;
  }

  void run() {
    const nanoseconds keep_alive_every = options_.lease_ttl / 3;
    while (!wait_for_stop(kTick)) {
      std::lock_guard lock(work_mutex_);
      const nanoseconds now = coord::boot_time_now();
      if (state_.load() == ClaimState::kHeld) {
        if (now >= node_claim_.deadline()) {
          lose_claim(fencing_events_);
          continue;
        }
        // Every third of the TTL, and at each tick once less than that is
        // left before the deadline: a claim whose Txn waited on a stalled
        // etcd starts with little of its lease left, and would otherwise
        // fence itself again before its first keep-alive.
        if (now - last_keep_alive_ >= keep_alive_every ||
            node_claim_.deadline() - now < keep_alive_every) {
          last_keep_alive_ = now;
          if (node_claim_.keep_alive().outcome == coord::StepOutcome::kClaimLost) {
            lose_claim(lost_claims_);
            continue;
          }
        }
        const milliseconds wanted{wanted_ms_.load(std::memory_order_relaxed)};
        if (node_claim_.extend_reservation(false, wanted).outcome ==
            coord::StepOutcome::kClaimLost) {
          lose_claim(lost_claims_);
          continue;
        }
        publish_progress();
      } else if (state_.load() == ClaimState::kReclaiming && now >= next_attempt_) {
        auto claimed = node_claim_.claim(lost_node_id_);
        if (claimed.ok()) {
          reclaims_.fetch_add(1);
          publish_claim(*claimed);
        } else {
          next_attempt_ = now + backoff_;
          backoff_ = std::min(backoff_ * 2, kMaxBackoff);
        }
      }
    }
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

  std::unique_ptr<coord::EtcdClient> client_;
  EtcdOptions options_;
  Clock* clock_;

  std::mutex work_mutex_;  // the background thread, claim() and release() take turns
  coord::NodeClaim node_claim_;
  nanoseconds last_keep_alive_{0};
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
  mutable std::mutex claim_mutex_;
  std::optional<Claim> current_;

  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread thread_;
};

Result<std::unique_ptr<coord::EtcdClient>> connect_checked(const EtcdOptions& options) {
  Status name = check_cluster_name(options.cluster);
  if (!name.ok()) return name.error();
  return coord::EtcdClient::connect(options);
}

}  // namespace

Result<std::unique_ptr<Coordinator>> make_etcd_coordinator(const EtcdOptions& options) {
  Status valid = check_options(options);
  if (!valid.ok()) return valid.error();
  auto client = coord::EtcdClient::connect(options);
  if (!client.ok()) return client.error();
  return std::unique_ptr<Coordinator>(new EtcdCoordinator(std::move(*client), options));
}

Result<std::vector<ClusterNode>> list_cluster(const EtcdOptions& options) {
  auto client = connect_checked(options);
  if (!client.ok()) return client.error();
  std::map<std::uint64_t, ClusterNode> nodes;
  for (const std::string& prefix :
       {coord::claims_prefix(options.cluster), coord::reservations_prefix(options.cluster)}) {
    etcdserverpb::RangeRequest request;
    request.set_key(prefix);
    request.set_range_end(coord::prefix_end(prefix));
    auto listed = (*client)->range(request);
    if (!listed.ok()) return listed.error();
    const bool claims = prefix == coord::claims_prefix(options.cluster);
    for (const auto& kv : listed->kvs()) {
      const auto id = coord::node_id_of_key(kv.key());
      if (!id) continue;
      ClusterNode& node = nodes[*id];
      node.node_id = *id;
      if (!claims) {
        node.reservation = milliseconds{std::strtoll(kv.value().c_str(), nullptr, 10)};
        continue;
      }
      node.claimed = true;
      auto record = coord::ClaimRecord::parse(kv.value());
      if (record.ok()) {
        node.holder = record->holder();
        node.addresses = fmt::format("{}", fmt::join(record->addresses, ","));
        node.started = record->started;
        node.published_wall_time = record->wall_time;
      } else {
        node.holder = "(unreadable claim value)";
      }
      if (kv.lease() != 0) {
        auto ttl = (*client)->lease_time_to_live(kv.lease());
        if (ttl.ok() && ttl->ttl() >= 0) node.lease_time_left = std::chrono::seconds{ttl->ttl()};
      }
    }
  }
  std::vector<ClusterNode> rows;
  for (auto& [id, node] : nodes) rows.push_back(std::move(node));
  return rows;
}

Status release_node_id(const EtcdOptions& options, std::uint64_t node_id, bool force) {
  auto client = connect_checked(options);
  if (!client.ok()) return client.error();
  const std::string key = coord::claim_key(options.cluster, node_id);
  etcdserverpb::RangeRequest request;
  request.set_key(key);
  auto found = (*client)->range(request);
  if (!found.ok()) return found.error();
  if (found->kvs_size() == 0) return {};
  const auto& kv = found->kvs(0);
  if (!force) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("node id {} is claimed by {} and its lease is alive; stop that "
                             "node, or pass --force to take the id away from it",
                             node_id, coord::describe_claim_value(kv.value()))};
  }
  // Delete exactly the claim we looked at, then end its lease.
  etcdserverpb::TxnRequest txn;
  auto* same = txn.add_compare();
  same->set_key(key);
  same->set_target(etcdserverpb::Compare::CREATE);
  same->set_result(etcdserverpb::Compare::EQUAL);
  same->set_create_revision(kv.create_revision());
  txn.add_success()->mutable_request_delete_range()->set_key(key);
  auto deleted = (*client)->txn(txn);
  if (!deleted.ok()) return deleted.error();
  if (kv.lease() != 0) return (*client)->lease_revoke(kv.lease());
  return {};
}

}  // namespace snowid
