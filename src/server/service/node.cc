#include "node.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "coordinator_factory.h"
#include "metrics.h"
#include "time_text.h"

namespace snowid::server {

std::optional<std::uint64_t> disposable_starts_left(const CoordinatorStats& stats,
                                                    const Layout& layout) {
  if (stats.leased || stats.endpoints.empty() || !stats.node_id) return std::nullopt;
  return node_id_count(layout) - 1 - *stats.node_id;
}

namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr milliseconds kFirstClaimBackoff{200};
constexpr milliseconds kMaxClaimBackoff{2000};
constexpr milliseconds kClockWaitStep{50};

// Retries `attempt` until it succeeds, fails with an error `retry_on` does
// not accept, or `deadline` passes (then the last error).
template <typename T, typename Attempt, typename RetryOn>
Result<T> retry_until(SteadyClock::time_point deadline, milliseconds first_pause,
                      milliseconds max_pause, Attempt attempt, RetryOn retry_on) {
  milliseconds pause = first_pause;
  for (;;) {
    Result<T> result = attempt();
    if (result.ok() || !retry_on(result.error())) return result;
    if (SteadyClock::now() + pause >= deadline) return result;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, max_pause);
  }
}

double seconds(milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

}  // namespace

Node::Node(const GeneratorOptions& generator_options, std::unique_ptr<Coordinator> coordinator,
           const std::filesystem::path& state_dir, const std::filesystem::path& audit_log)
    : generator_options_(generator_options),
      coordinator_(std::move(coordinator)),
      store_(coordinator_->stats().store),
      leased_(coordinator_->stats().leased) {
  if (leased_) {
    marks_ = std::make_unique<ClusterMarks>(state_dir, store_, coordinator_->stats().cluster,
                                            generator_options_.layout, audit_log);
  }
}

Node::~Node() = default;

Result<std::unique_ptr<Node>> Node::start(const ResolvedConfig& config) {
  auto coordinator = make_coordinator(config.coordinator);
  if (!coordinator.ok()) return coordinator.error();
  std::unique_ptr<Node> node(new Node(config.generator, std::move(*coordinator),
                                      config.generator.state_file.parent_path(), config.audit_log));
  const bool leased = node->leased_;
  if (leased) {
    Status held = node->marks_->hold_state_directory();
    if (!held.ok()) return held.error();
  }

  const auto claim_timeout = config.coordinator.options.claim_timeout;
  const auto deadline = SteadyClock::now() + claim_timeout;
  auto claim = retry_until<Claim>(
      deadline, kFirstClaimBackoff, kMaxClaimBackoff, [&] { return node->coordinator_->claim(); },
      [&](const Error& error) {
        spdlog::warn("cannot claim a node id yet: {}", error.message);
        return error.code != ErrorCode::kInvalidArgument;
      });
  if (!claim.ok()) {
    return Error{claim.error().code, fmt::format("no node id claimed within {} ms: {}",
                                                 claim_timeout.count(), claim.error().message)};
  }
  ClusterMarks::Start start{claim->floor, claim->floor_source};
  if (!leased && claim->floor.count() > 0) {
    const milliseconds ahead = claim->floor - SystemClock::instance().now_fresh();
    spdlog::warn("took node id {}; issuing above {}, {:.1f} s ahead of this node's clock, from {}",
                 claim->node_id, format_time(claim->floor), seconds(ahead), claim->floor_source);
  }
  if (leased) {
    auto prepared = node->marks_->prepare(*claim);
    if (!prepared.ok()) return prepared.error();
    start = *prepared;
    const milliseconds ahead = start.above - SystemClock::instance().now_fresh();
    if (ahead > config.generator.max_drift) {
      spdlog::warn("claimed node id {}; issuing above {}, {:.1f} s ahead of this node's clock, "
                   "from {}: waiting for the clock to pass it (within claim_timeout_ms)",
                   claim->node_id, format_time(start.above), seconds(ahead), start.source);
    } else {
      spdlog::info("claimed node id {}; issuing above {}, from {}", claim->node_id,
                   format_time(start.above), start.source);
    }
  }
  // A floor ahead of the clock (the previous holder's reservation, or this
  // node's own mark) is waited out, within the claim timeout; the lease is
  // kept alive meanwhile.
  auto generator = retry_until<std::unique_ptr<Generator>>(
      deadline, kClockWaitStep, kClockWaitStep,
      [&]() -> Result<std::unique_ptr<Generator>> {
        if (leased) {
          if (Status followed = node->follow_new_claim(*claim, start); !followed.ok()) {
            return followed.error();
          }
        }
        return node->build_generator(*claim, start.above);
      },
      [&](const Error& error) {
        return (leased || claim->floor.count() > 0) && error.code == ErrorCode::kClockBehind;
      });
  if (!generator.ok()) {
    if (!leased && claim->floor.count() == 0) return generator.error();
    return Error{generator.error().code,
                 fmt::format("{} (the high-water mark is {}; waited up to claim_timeout_ms, {} ms)",
                             generator.error().message, start.source, claim_timeout.count())};
  }
  node->install(std::move(*generator), claim->generation, claim->node_id);
  if (!leased) node->report_disposable_id(claim->node_id);
  const Status ready = node->generator().readiness();
  node->waiting_for_clock_ = !ready.ok() && ready.error().code == ErrorCode::kClockBehind;
  return node;
}

// A tenth of the layout's starts left: the operator is warned at every start
// from then on, while there is still time to widen the layout.
void Node::report_disposable_id(std::uint64_t node_id) const {
  const auto left = disposable_starts_left(coordinator_->stats(), generator_options_.layout);
  if (!left) return;
  const std::uint64_t starts = node_id_count(generator_options_.layout) - 1;
  if (*left * 10 < starts) {
    spdlog::warn(
        "took node id {}, a new one for this start; only {} of the layout's {} node ids are "
        "left for later starts: widen the layout (more worker bits) before they run out",
        node_id, *left, starts);
  } else {
    spdlog::info("took node id {}, a new one for this start; {} starts left", node_id, *left);
  }
}

// A claim lost and taken again while the start waits (a renewal that missed
// its deadline on a loaded machine) has a floor and a reservation of its
// own, maybe under another node id: the wait follows the claim held now,
// never the one that is gone, whose reservation would not move again.
Status Node::follow_new_claim(Claim& claim, ClusterMarks::Start& start) const {
  if (coordinator_->claim_generation() == claim.generation) return {};
  const std::optional<Claim> current = coordinator_->current_claim();
  if (!current || current->generation == claim.generation) return {};
  auto prepared = marks_->prepare(*current);
  if (!prepared.ok()) return prepared.error();
  claim = *current;
  start = *prepared;
  spdlog::warn("the claim was lost while the start waited ({}); claimed node id {} again; "
               "issuing above {}, from {}",
               coordinator_->stats().last_loss, claim.node_id, format_time(start.above),
               start.source);
  return {};
}

Result<std::unique_ptr<Generator>> Node::build_generator(const Claim& claim,
                                                         milliseconds start_above) const {
  GeneratorOptions options = generator_options_;
  // The claim's node id: a fixed one is the configured id, a disposable one
  // new at every start.
  options.datacenter_id = claim.datacenter_id;
  options.worker_id = claim.worker_id;
  // A fixed id's floor is 0; a disposable one's is its takeover floor.
  options.start_above = std::max(options.start_above, start_above);
  if (leased_) {
    options.state_file.clear();
    // A claim's first reservation is its floor: the coordinator raises it as
    // the clock nears the floor. The generator waits for that, as for the
    // clock, and starts with the reservation as it is then, in its mark.
    milliseconds ceiling = claim.ceiling.value_or(milliseconds{0});
    const std::uint64_t before = coordinator_->claim_generation();
    const milliseconds now_reserved = coordinator_->reservation();
    if (before == claim.generation && coordinator_->claim_generation() == before) {
      ceiling = std::max(ceiling, now_reserved);  // see coordinator.h: of this claim
    }
    if (ceiling <= options.start_above) {
      return Error{ErrorCode::kClockBehind,
                   fmt::format("the reservation of node id {} ({}) has not passed the start ({}) "
                               "yet",
                               claim.node_id, format_time(ceiling),
                               format_time(options.start_above))};
    }
    if (Status covered = marks_->cover(claim.node_id, ceiling); !covered.ok()) {
      return covered.error();
    }
    options.external_ceiling = ceiling;
  }
  return Generator::create(options);
}

void Node::install(std::unique_ptr<Generator> generator, std::uint64_t generation,
                   std::uint64_t node_id) {
  std::lock_guard lock(generators_mutex_);
  generators_.push_back(std::move(generator));
  node_id_ = node_id;
  current_.store(generators_.back().get(), std::memory_order_release);
  generation_.store(generation, std::memory_order_release);
}

Status Node::may_issue() const {
  if (!leased_) {
    if (coordinator_->may_issue()) return {};
    const std::string why = coordinator_->stats().last_loss;
    return Error{ErrorCode::kUnavailable,
                 "this node's node id is not provably its own right now: " +
                     (why.empty() ? std::string("its store has not answered") : why)};
  }
  if (!coordinator_->may_issue()) {
    return Error{ErrorCode::kUnavailable,
                 "this node does not hold its node id claim right now (lease deadline passed or "
                 "claim lost); re-claiming"};
  }
  // After a re-claim, nothing is issued until the generator for the new
  // claim is in place (the old one would still be safe, see node.h, but the
  // node would then answer while /readyz says it is not ready).
  if (coordinator_->claim_generation() != generation_.load(std::memory_order_acquire)) {
    return Error{ErrorCode::kUnavailable, "re-claimed a node id; starting its generator"};
  }
  return {};
}

Status Node::readiness() const {
  Status claim = may_issue();
  if (!claim.ok()) return claim;
  if (auto loss = store_loss()) return Error{ErrorCode::kUnavailable, *loss};
  return generator().readiness();
}

std::optional<std::string> Node::store_loss() const {
  return marks_ ? marks_->loss() : std::nullopt;
}

void Node::maintain() {
  if (!leased_) {
    report_lost_claims();
    if (waiting_for_clock_ && generator().readiness().ok()) {
      spdlog::info("the clock has passed the high-water mark: issuing IDs");
      waiting_for_clock_ = false;
    }
    Status s = generator().extend_reservation();
    // Logged when the reason changes, not every 100 ms while it lasts.
    std::string reason = s.ok() ? "" : s.error().message;
    if (reason != last_maintenance_error_) {
      if (!s.ok()) {
        spdlog::error("{}", reason);
      } else {
        spdlog::info("the state file is written again");
      }
      last_maintenance_error_ = std::move(reason);
    }
    return;
  }
  marks_->poll_confirmation();
  report_lost_claims();
  const std::uint64_t before = coordinator_->claim_generation();
  if (before == generation_.load(std::memory_order_relaxed)) {
    follow_reservation();
  } else {
    follow_reclaim(before);
  }
}

void Node::follow_reservation() {
  const std::uint64_t before = coordinator_->claim_generation();
  const milliseconds demand = generator().stats().external_demand;
  if (demand.count() > 0) coordinator_->request_reservation(demand);
  // See coordinator.h: the reservation counts only if the generation read
  // on both sides of it is the one the current generator was built for.
  const milliseconds reservation = coordinator_->reservation();
  if (coordinator_->claim_generation() != before) return;
  // This node's own mark first: it never issues past what it persisted.
  Status covered = marks_->cover(node_id_, reservation);
  std::string reason = covered.ok() ? "" : covered.error().message;
  if (reason != last_cover_error_) {
    if (!covered.ok()) {
      spdlog::error(
          "cannot persist the reservation in this node's own mark, so IDs stop at the current one: "
          "{}",
          reason);
    } else {
      spdlog::info("this node's own mark is written again");
    }
    last_cover_error_ = std::move(reason);
  }
  if (covered.ok()) generator().raise_external_ceiling(reservation);
  report_readiness();
}

// A change in whether the generator can issue (its reservation ended, the
// clock fell behind its mark), logged once per change of kind, not every
// 100 ms while it lasts.
void Node::report_readiness() {
  const Status ready = generator().readiness();
  const int kind = ready.ok() ? -1 : static_cast<int>(ready.error().code);
  if (kind == readiness_logged_) return;
  if (!ready.ok()) {
    spdlog::warn("not issuing IDs under node id {}: {}", node_id_, ready.error().message);
  } else if (readiness_logged_ != -1) {
    spdlog::info("issuing IDs under node id {} again", node_id_);
  }
  readiness_logged_ = kind;
}

void Node::follow_reclaim(std::uint64_t generation) {
  const auto claim = coordinator_->current_claim();
  if (!claim || claim->generation != generation) return;  // moving again; next tick
  // Prepared once per claim: a generator that cannot start yet covers the
  // claim's reservation in this node's mark (build_generator()), and a
  // second prepare() would start above that, chasing its own reservation
  // tick after tick. Nothing is issued under the claim until its generator
  // is in place, so the start found first still holds.
  if (!prepared_ || prepared_->first != generation) {
    auto prepared = marks_->prepare(*claim);
    if (!prepared.ok()) return report_pending_swap(claim->node_id, prepared.error());
    prepared_.emplace(generation, *prepared);
  }
  const ClusterMarks::Start start = prepared_->second;
  auto generator = build_generator(*claim, start.above);
  if (!generator.ok()) return report_pending_swap(claim->node_id, generator.error());
  reported_pending_swap_ = false;
  prepared_.reset();
  install(std::move(*generator), claim->generation, claim->node_id);
  spdlog::warn(
      "re-claimed node id {} (datacenter {}, worker {}) after losing the claim; issuing above {}, "
      "from {}",
      claim->node_id, claim->datacenter_id, claim->worker_id, format_time(start.above),
      start.source);
}

// Once per claim that cannot start issuing yet (the next tick tries again).
void Node::report_pending_swap(std::uint64_t node_id, const Error& why) {
  if (reported_pending_swap_) return;
  spdlog::warn("re-claimed node id {}, but cannot start issuing under it yet: {}", node_id,
               why.message);
  reported_pending_swap_ = true;
}

void Node::report_lost_claims() {
  const CoordinatorStats s = coordinator_->stats();
  // Each refusal to claim again, when its reason changes (the start path
  // logs its own refusals at warning level too).
  if (s.last_reclaim_failure != reclaim_failure_logged_) {
    if (!s.last_reclaim_failure.empty()) {
      spdlog::warn("cannot claim a node id of cluster '{}' in {} again yet: {}; retrying",
                   s.cluster, s.store, s.last_reclaim_failure);
    }
    reclaim_failure_logged_ = s.last_reclaim_failure;
  }
  const std::uint64_t losses = s.lost_claims + s.fencing_events;
  if (losses == losses_logged_) return;
  losses_logged_ = losses;
  const std::string id = s.node_id ? std::to_string(*s.node_id) : "?";
  if (!leased_) {
    spdlog::warn("stopped issuing under node id {} from {}: {}", id, s.store, s.last_loss);
    return;
  }
  spdlog::warn(
      "lost the claim on node id {} of cluster '{}' in {}: {}; issuing nothing until a node id is "
      "claimed again",
      id, s.cluster, s.store, s.last_loss);
}

Status Node::stop() {
  if (!leased_) return generator().checkpoint();
  const milliseconds last = generator().stats().last_issued;
  Status released =
      coordinator_->release(last.count() > 0 ? std::optional<milliseconds>(last) : std::nullopt);
  // As the store's reservation: nothing above the last issued unit was issued.
  Status lowered = marks_->lower(node_id_, last);
  return released.ok() ? lowered : released;
}

// A disposable node id's two gauges; nothing for a fixed one.
std::string Node::disposable_metrics() const {
  const CoordinatorStats s = coordinator_->stats();
  const auto left = disposable_starts_left(s, generator_options_.layout);
  if (!left) return {};
  std::string out;
  append_metric(out, "snowid_cluster_node_id", "gauge", "The node id taken for this start.",
                std::to_string(*s.node_id));
  append_metric(out, "snowid_node_id_starts_left", "gauge",
                "Node ids the layout has left for later starts (node_id_policy = disposable).",
                std::to_string(*left));
  return out;
}

namespace {

// snowid_cluster_renewal_duration_seconds: the coordinator's renewal
// latencies (sent to answered, failed ones too), every fourth of its
// buckets, so each bound doubles the last: 100 us to 3.28 s, then +Inf.
void append_renewal_histogram(std::string& out, const CoordinatorStats& s) {
  constexpr std::string_view kName = "snowid_cluster_renewal_duration_seconds";
  auto sink = std::back_inserter(out);
  fmt::format_to(sink,
                 "# HELP {0} Time from sending a lease renewal to the store's answer.\n"
                 "# TYPE {0} histogram\n",
                 kName);
  std::uint64_t cumulative = 0;
  for (std::size_t bucket = 0; bucket + 1 < kRenewalLatencyBuckets; ++bucket) {
    cumulative += s.renewal_latency[bucket];
    if (bucket % 4 != 0) continue;
    fmt::format_to(sink, "{}_bucket{{le=\"{}\"}} {}\n", kName,
                   static_cast<double>(renewal_latency_bound(bucket).count()) / 1e6, cumulative);
  }
  fmt::format_to(sink, "{}_bucket{{le=\"+Inf\"}} {}\n", kName, s.renewals);
  fmt::format_to(sink, "{}_sum {:.6f}\n{}_count {}\n", kName,
                 static_cast<double>(s.renewal_latency_total.count()) / 1e6, kName, s.renewals);
}

}  // namespace

std::string Node::cluster_metrics() const {
  if (!leased_) return disposable_metrics();
  const CoordinatorStats s = coordinator_->stats();
  std::string out;
  auto add = [&out](std::string_view name, std::string_view type, std::string_view help,
                    const std::string& value) { append_metric(out, name, type, help, value); };
  add("snowid_cluster_claim_held", "gauge", "1 while this node holds its node id claim.",
      s.state == ClaimState::kHeld && coordinator_->may_issue() ? "1" : "0");
  add("snowid_cluster_node_id", "gauge", "The node id claimed (-1: none).",
      s.node_id ? std::to_string(*s.node_id) : "-1");
  add("snowid_cluster_lease_time_left_seconds", "gauge",
      "Time until this node fences itself unless a keep-alive succeeds.",
      fmt::format("{:.3f}", s.lease_time_left ? seconds(*s.lease_time_left) : 0.0));
  add("snowid_cluster_reservation_timestamp_seconds", "gauge",
      "Reservation H (Unix time): no ID is issued past it.",
      fmt::format("{:.3f}", seconds(s.reservation)));
  add("snowid_cluster_reservation_headroom_seconds", "gauge",
      "Reservation minus the wall clock.", fmt::format("{:.3f}", seconds(s.reservation_headroom)));
  add("snowid_cluster_claims_total", "counter", "Node id claims, the first included.",
      std::to_string(s.claims));
  add("snowid_cluster_reclaims_total", "counter", "Claims after a lost one.",
      std::to_string(s.reclaims));
  add("snowid_cluster_fencing_events_total", "counter",
      "Times the lease deadline passed while the claim was held.",
      std::to_string(s.fencing_events));
  add("snowid_cluster_lost_claims_total", "counter",
      "Times the claim was found gone or taken over.", std::to_string(s.lost_claims));
  add("snowid_cluster_store_losses_total", "counter",
      "Times the store answered for a cluster this node served as if it had lost its data.",
      std::to_string(store_losses()));
  add("snowid_cluster_store_loss_unconfirmed", "gauge",
      "1 while a detected store loss awaits an operator's confirmation.", store_loss() ? "1" : "0");
  // The store's own metrics, named after it: snowid_etcd_requests_total, ...
  const std::string& store = s.store;
  add(fmt::format("snowid_{}_requests_total", store), "counter",
      fmt::format("Requests to {}.", store), std::to_string(s.store_requests));
  add(fmt::format("snowid_{}_errors_total", store), "counter",
      fmt::format("Failed requests to {} (after failover).", store),
      std::to_string(s.store_errors));
  add(fmt::format("snowid_{}_request_seconds_total", store), "counter",
      fmt::format("Time spent in requests to {}.", store),
      fmt::format("{:.6f}", static_cast<double>(s.store_latency_total.count()) / 1e6));
  add(fmt::format("snowid_{}_request_max_seconds", store), "gauge",
      fmt::format("Longest request to {} so far.", store),
      fmt::format("{:.6f}", static_cast<double>(s.store_latency_max.count()) / 1e6));
  append_renewal_histogram(out, s);
  return out;
}


}  // namespace snowid::server
