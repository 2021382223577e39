#include "leased_claim.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>

#include "time_text.h"

namespace snowid {

Status check_lease_options(const LeaseOptions& options) {
  const std::string& cluster = options.cluster;
  const bool named = !cluster.empty() && std::all_of(cluster.begin(), cluster.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
  });
  if (!named) {
    return invalid_argument(
        fmt::format("bad cluster name '{}': use letters, digits, '-', '_' and '.'", cluster));
  }
  Status layout = validate(options.layout);
  if (!layout.ok()) return layout;
  if (options.preferred_node_id && *options.preferred_node_id >= node_id_count(options.layout)) {
    return invalid_argument(fmt::format("preferred node id {} is beyond the layout's {} node ids",
                                        *options.preferred_node_id, node_id_count(options.layout)));
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

}  // namespace snowid

namespace snowid::coord {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

void StoreCounters::record(std::chrono::microseconds latency, bool failed) {
  const auto took = static_cast<std::uint64_t>(std::max<std::int64_t>(latency.count(), 0));
  requests.fetch_add(1, std::memory_order_relaxed);
  latency_total_us.fetch_add(took, std::memory_order_relaxed);
  std::uint64_t max = latency_max_us.load(std::memory_order_relaxed);
  while (took > max && !latency_max_us.compare_exchange_weak(max, took)) {
  }
  if (failed) errors.fetch_add(1, std::memory_order_relaxed);
}

namespace {

std::string random_instance_id() {
  std::random_device entropy;
  return fmt::format("{:08x}{:08x}", entropy(), entropy());
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

}  // namespace

ClaimRecord ClaimRecord::of_this_process(const LeaseOptions& options, Clock& clock) {
  ClaimRecord record;
  record.host = host_name();
  record.pid = ::getpid();
  record.instance = random_instance_id();
  record.addresses = options.advertised_addresses;
  record.started = clock.now_fresh();
  // The record is written with every extension of the reservation: at least
  // every reserve_ahead - reserve_min_left, plus the coordinator's tick.
  record.refresh_every = options.reserve_ahead - options.reserve_min_left + milliseconds{200};
  return record;
}

void ClaimRecord::set_node_id(std::uint64_t node_id, const Layout& layout) {
  worker_id = node_id & ((std::uint64_t{1} << layout.worker_bits) - 1);
  datacenter_id = node_id >> layout.worker_bits;
}

std::string ClaimRecord::to_json() const {
  nlohmann::json json = {{"host", host},
                         {"pid", pid},
                         {"instance", instance},
                         {"addresses", addresses},
                         {"started_ms", started.count()},
                         {"wall_time_ms", wall_time.count()},
                         {"refresh_ms", refresh_every.count()},
                         {"datacenter_id", datacenter_id},
                         {"worker_id", worker_id}};
  return json.dump();
}

Result<ClaimRecord> ClaimRecord::parse(std::string_view text) {
  const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return invalid_argument("a claim value is not a JSON object");
  ClaimRecord record;
  try {
    record.host = json.value("host", "");
    record.pid = json.value("pid", std::int64_t{0});
    record.instance = json.value("instance", "");
    record.addresses = json.value("addresses", std::vector<std::string>{});
    record.started = milliseconds{json.value("started_ms", std::int64_t{0})};
    record.wall_time = milliseconds{json.value("wall_time_ms", std::int64_t{0})};
    record.refresh_every = milliseconds{json.value("refresh_ms", std::int64_t{0})};
    record.datacenter_id = json.value("datacenter_id", std::uint64_t{0});
    record.worker_id = json.value("worker_id", std::uint64_t{0});
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(
        fmt::format("a claim value has a field of the wrong type: {}", e.what()));
  }
  return record;
}

std::string ClaimRecord::holder() const {
  return fmt::format("{} pid={} instance={}", host, pid, instance);
}

std::string describe_claim_value(std::string_view json) {
  auto record = ClaimRecord::parse(json);
  if (!record.ok()) return "an unknown holder";
  std::string text = record->holder();
  if (!record->addresses.empty()) {
    text += fmt::format(" serving {}", fmt::join(record->addresses, ","));
  }
  return text;
}

Status check_peer_clocks(const std::vector<PeerClock>& peers, milliseconds now,
                         milliseconds max_offset) {
  if (peers.empty() || max_offset.count() <= 0) return {};
  // Our offset from the mean peer clock lies in [least, most]: each peer's
  // clock reads between wall_time and wall_time + max_age now.
  double least = 0;
  double most = 0;
  long long oldest = 0;
  for (const PeerClock& peer : peers) {
    least += static_cast<double>((now - peer.wall_time - peer.max_age).count());
    most += static_cast<double>((now - peer.wall_time).count());
    oldest = std::max<long long>(oldest, peer.max_age.count());
  }
  least /= static_cast<double>(peers.size());
  most /= static_cast<double>(peers.size());
  const auto bound = static_cast<double>(max_offset.count());
  if (least <= bound && most >= -bound) return {};
  const bool ahead = least > bound;
  const double near = ahead ? least : -most;
  const double far = ahead ? most : -least;
  return Error{ErrorCode::kUnavailable,
               fmt::format("this node's clock is {:.1f} s {} the mean of the {} live peers' "
                           "clocks ({}their samples were up to {:.1f} s old), more than the "
                           "{:.1f} s allowed; fix its time synchronisation before starting",
                           near / 1000.0, ahead ? "ahead of" : "behind", peers.size(),
                           far - near >= 50 ? fmt::format("up to {:.1f} s: ", far / 1000.0) : "",
                           static_cast<double>(oldest) / 1000.0, bound / 1000.0)};
}

std::vector<PeerClock> live_peer_clocks(const std::vector<PeerClock>& peers,
                                        std::optional<milliseconds> store_now_at_least,
                                        milliseconds max_offset) {
  if (!store_now_at_least) return peers;
  std::vector<PeerClock> live;
  for (const PeerClock& peer : peers) {
    if (*store_now_at_least - peer.wall_time <= peer.max_age + max_offset) live.push_back(peer);
  }
  return live;
}

Status check_store_clock(const LeaseOptions& options, std::string_view store,
                         StoreTime store_time, milliseconds now) {
  const milliseconds offset = options.max_peer_clock_offset;
  const milliseconds ahead_limit = clock_lead_allowed(options);
  const milliseconds store_latest = store_time.at + store_time.resolution;
  const milliseconds ahead = now - store_latest;
  const milliseconds behind = store_time.at - now;
  const bool too_far_ahead = ahead > ahead_limit;
  const bool too_far_behind = offset.count() > 0 && behind > offset;
  if (!too_far_ahead && !too_far_behind) return {};
  return Error{ErrorCode::kUnavailable,
               fmt::format("this node's clock is {:.1f} s {} {}'s clock ({}), more than the "
                           "{:.1f} s allowed (max_peer_clock_offset_ms{}); it neither claims nor "
                           "issues until its time synchronisation is fixed",
                           static_cast<double>((too_far_ahead ? ahead : behind).count()) / 1000.0,
                           too_far_ahead ? "ahead of" : "behind", store,
                           format_time(store_time.at),
                           static_cast<double>((too_far_ahead ? ahead_limit : offset).count()) /
                               1000.0,
                           too_far_ahead ? ", and ahead at most reserve_ahead_ms" : "")};
}

milliseconds clock_lead_allowed(const LeaseOptions& options) {
  const milliseconds offset = options.max_peer_clock_offset;
  return offset.count() > 0 ? std::min(offset, options.reserve_ahead) : options.reserve_ahead;
}

milliseconds takeover_floor(const LeaseOptions& options, milliseconds store_now_at_most,
                            milliseconds claimer_now) {
  return std::max(store_now_at_most, claimer_now) +
         std::chrono::duration_cast<milliseconds>(options.lease_ttl) + options.reserve_ahead;
}

Status check_distinct_id_space(const LeaseOptions& options, std::string_view store,
                               const std::vector<ClusterIdSpace>& spaces) {
  if (options.share_id_space) return {};
  const std::string ours = describe(options.layout);
  for (const ClusterIdSpace& space : spaces) {
    if (space.cluster == options.cluster || space.layout != ours) continue;
    return invalid_argument(fmt::format(
        "cluster '{}' in this {} has the layout of cluster '{}' ({}): under the node ids both "
        "use they would issue the same IDs; give one of them another epoch or node-id bits, or "
        "set share_id_space = true if their IDs never meet",
        space.cluster, store, options.cluster, ours));
  }
  return {};
}

nanoseconds boot_time_now() {
  timespec now{};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  return std::chrono::seconds{now.tv_sec} + nanoseconds{now.tv_nsec};
}

std::vector<std::uint64_t> claim_candidates(const LeaseOptions& options,
                                            const std::set<std::uint64_t>& taken,
                                            std::optional<std::uint64_t> preferred,
                                            std::size_t limit) {
  const std::uint64_t id_count = node_id_count(options.layout);
  std::vector<std::uint64_t> candidates;
  if (preferred && *preferred < id_count && taken.count(*preferred) == 0) {
    candidates.push_back(*preferred);
  }
  if (options.require_preferred_node_id) return candidates;
  for (std::uint64_t id = 0; id < id_count && candidates.size() < limit; ++id) {
    if (taken.count(id) == 0 && (!preferred || id != *preferred)) candidates.push_back(id);
  }
  return candidates;
}

Status claim_first_free(const LeaseOptions& options, const ClaimsSeen& seen,
                        std::optional<std::uint64_t> preferred, std::size_t limit,
                        const TryClaim& try_claim) {
  if (options.require_preferred_node_id) {
    if (!preferred || *preferred >= node_id_count(options.layout)) {
      return invalid_argument("a required node id must be configured and within the layout");
    }
    if (seen.taken.count(*preferred) != 0) {
      return held_elsewhere(options.cluster, *preferred, seen.preferred_holder);
    }
  }
  for (std::uint64_t id : claim_candidates(options, seen.taken, preferred, limit)) {
    std::string holder;
    auto won = try_claim(id, &holder);
    if (!won.ok()) return won.error();
    if (*won) return {};
    if (options.require_preferred_node_id) {
      // Another node won the race for it: name the winner.
      return held_elsewhere(options.cluster, id, describe_claim_value(holder));
    }
  }
  return all_node_ids_claimed(options);
}

Error held_elsewhere(std::string_view cluster, std::uint64_t node_id, std::string_view holder) {
  return Error{ErrorCode::kAlreadyExists,
               fmt::format("node id {} of cluster '{}' is held by {}; node_id_policy "
                           "\"require\" waits until it is released or its lease expires",
                           node_id, cluster, holder)};
}

Error all_node_ids_claimed(const LeaseOptions& options) {
  return Error{ErrorCode::kUnavailable,
               fmt::format("all {} node ids of cluster '{}' are claimed; retry later or stop "
                           "a node",
                           node_id_count(options.layout), options.cluster)};
}

Claim claim_of(std::uint64_t node_id, const Layout& layout, milliseconds floor,
               milliseconds reservation) {
  Claim claim;
  claim.node_id = node_id;
  claim.worker_id = node_id & ((std::uint64_t{1} << layout.worker_bits) - 1);
  claim.datacenter_id = node_id >> layout.worker_bits;
  claim.floor = floor;
  claim.ceiling = reservation;
  return claim;
}

std::optional<milliseconds> next_reservation(WallClockWitness& witness, const LeaseOptions& options,
                                             milliseconds reservation, milliseconds floor,
                                             bool force, milliseconds wanted) {
  milliseconds base = witness.vouched_now();
  if (wanted > base) {
    witness.trust(wanted);
    base = wanted;
  }
  if (!force && reservation - base >= options.reserve_min_left) return std::nullopt;
  return std::max(reservation, std::max(base, floor) + options.reserve_ahead);
}

namespace {

Clock& clock_of(const LeaseOptions& options) {
  return options.clock != nullptr ? *options.clock : SystemClock::instance();
}

}  // namespace

LeasedClaim::LeasedClaim(const LeaseOptions& options)
    : record_(ClaimRecord::of_this_process(options, clock_of(options))),
      lease_(options),
      clock_(&clock_of(options)),
      witness_(*clock_, kWitnessTolerance) {}

void LeasedClaim::set_addresses(std::vector<std::string> addresses) {
  record_.addresses = std::move(addresses);
  republish_ = true;
}

StepResult LeasedClaim::keep_alive() {
  StepResult renewed = renew_lease();
  if (renewed.outcome != StepOutcome::kDone) return renewed;
  return check_clock_with_store();
}

StepResult LeasedClaim::check_clock_with_store() {
  const std::optional<StoreTime> store_time = read_clock_of_store();
  if (!store_time) return {};  // the cap keeps the last reading (reservation_cap())
  Status agreed = check_store_clock(lease_, store_title(), *store_time, clock_->now_fresh());
  if (!agreed.ok()) return {StepOutcome::kClockRefused, agreed.error().message};
  return {};
}

std::optional<StoreTime> LeasedClaim::read_clock_of_store() {
  Result<StoreTime> read = read_store_time();
  if (!read.ok()) {
    store_time_unread_ = read.error().message;
    return std::nullopt;
  }
  store_time_unread_.clear();
  store_time_ = *read;
  store_read_at_ = boot_time_now();
  return *read;
}

std::optional<milliseconds> LeasedClaim::reservation_cap() const {
  if (!store_time_) return std::nullopt;
  const milliseconds ttl = std::chrono::duration_cast<milliseconds>(lease_.lease_ttl);
  return store_time_->at + ttl + lease_.reserve_ahead;
}

StepResult LeasedClaim::extend_reservation(bool force, milliseconds wanted) {
  if (!held()) return {StepOutcome::kClaimLost, "no claim is held"};
  if (StepResult ready = prepare_extension(); ready.outcome != StepOutcome::kDone) return ready;
  const milliseconds now = clock_->now_fresh();
  auto due = next_reservation(witness_, lease_, reservation_, floor_, force || republish_, wanted);
  if (!due) return {};
  // The takeover rule's bound: never reserve beyond what a successor's
  // takeover floor covers: the store's clock as last read + lease_ttl +
  // reserve_ahead, or, for a claim's first reservation, its floor (read
  // from the store, or the takeover floor, whose reading came after the
  // take). IDs above the floor wait until the clock nears it and the cap has
  // moved past it. A node that wants more has a clock that ran ahead of its
  // store's since the last reading: it stops, saying so.
  auto cap = reservation_cap();
  if (cap && *due > *cap && !first_reservation_) {
    (void)read_clock_of_store();  // a fresher reading may allow more
    cap = reservation_cap();
  }
  if (cap && *due > *cap) {
    const milliseconds allowed = first_reservation_ ? std::max(*cap, first_bound_) : *cap;
    // Beyond the bound because of the clock (or a wanted unit), not the
    // floor: ahead of where the store's clock has got since the reading.
    const auto since_read = std::chrono::duration_cast<milliseconds>(boot_time_now() - store_read_at_);
    const bool clock_ahead =
        std::max(now, wanted) + lease_.reserve_ahead > allowed + std::max(since_read, milliseconds{0});
    if (clock_ahead && allowed <= reservation_ && !first_reservation_) {
      return {StepOutcome::kClockRefused,
              fmt::format("node id {} would need a reservation up to {}, beyond {} ({}'s clock "
                          "as last read, {}, + lease_ttl + reserve_ahead): this node's clock ran "
                          "ahead of its store's",
                          node_id_, format_time(*due), format_time(*cap), store_title(),
                          format_time(store_time_->at))};
    }
    due = std::max(allowed, reservation_);
  }
  record_.wall_time = now;
  return write_reservation(*due);
}

void LeasedClaim::reservation_written(milliseconds value) {
  reservation_ = value;
  republish_ = false;
  first_reservation_ = false;
}

Result<Claim> LeasedClaim::claim(std::optional<std::uint64_t> preferred) {
  if (held()) return Error{ErrorCode::kUnavailable, "a node id is claimed already"};
  if (!preferred) preferred = lease_.preferred_node_id;
  Result<ClaimsSeen> seen = read_claims(preferred);
  // The store's clock, read before the take (a slow round trip, such as
  // etcd's HTTP Date, does not eat the new lease); its upper bound at the
  // take adds the time elapsed since (raise_to_takeover_floor()). Read
  // before the peer check too, which weighs only the samples live by it.
  store_time_.reset();
  if (seen.ok()) (void)read_clock_of_store();
  const std::optional<milliseconds> store_now =
      store_time_ ? std::optional<milliseconds>(store_time_->at) : std::nullopt;
  Status ready =
      seen.ok() ? check_peer_clocks(
                      live_peer_clocks(seen->peer_clocks, store_now, lease_.max_peer_clock_offset),
                      clock_->now_fresh(), lease_.max_peer_clock_offset)
                : Status{seen.error()};
  if (ready.ok()) ready = check_id_space();
  if (ready.ok()) {
    ready = claim_first_free(
        lease_, *seen, preferred, kMaxClaimAttempts,
        [this](std::uint64_t id, std::string* holder) { return try_claim(id, holder); });
  }
  if (ready.ok()) {
    peers_vouched_ =
        !live_peer_clocks(seen->peer_clocks, store_now, lease_.max_peer_clock_offset).empty();
    ready = take_reservation();
  }
  if (ready.ok() && !id_space_published_) {
    ready = publish_id_space(describe(lease_.layout));
    id_space_published_ = ready.ok();
  }
  if (!ready.ok()) {
    abandon();
    return ready.error();
  }
  return granted();
}

Status LeasedClaim::raise_to_takeover_floor(bool peers_vouched) {
  store_reservation_ = floor_;
  floor_source_ = "the store's reservation for it";
  std::optional<StoreTime> store_time = store_time_;
  if (store_time) {
    // The store's clock has gone on since the reading (claim()).
    store_time->at += std::max(
        milliseconds{0}, std::chrono::duration_cast<milliseconds>(boot_time_now() - store_read_at_));
  }
  const milliseconds now = clock_->now_fresh();
  milliseconds store_latest = now;
  if (store_time) {
    Status agreed = check_store_clock(lease_, store_title(), *store_time, now);
    if (!agreed.ok()) return agreed;
    store_latest = store_time->at + store_time->resolution;
  } else if (!peers_vouched || created_now_) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("cannot read {}'s clock ({}), and {}: a claim would rest on this "
                             "node's clock alone, which may be behind the IDs an earlier holder "
                             "issued; refusing to claim until the store's clock can be read",
                             store_title(), store_time_unread_,
                             created_now_ ? "the store lost this cluster's data"
                                          : "no live peer vouched for this node's clock")};
  }
  const milliseconds takeover = takeover_floor(lease_, store_latest, now);
  // The first reservation reaches only as far as a lower bound of the
  // store's clock vouches for (the bound every reservation keeps): the rest
  // of the floor, the reading's resolution or this node's clock ahead, is
  // reserved as the store's clock gets there (reservation_cap()).
  first_bound_ = store_time ? std::max(floor_, takeover_floor(lease_, store_time->at, store_time->at))
                            : takeover;
  if (takeover > floor_) {
    floor_ = takeover;
    floor_source_ = fmt::format(
        "the takeover floor ({}'s clock{} + lease_ttl + reserve_ahead: a record restored from a "
        "backup may hide a live holder)",
        store_title(), store_time ? "" : " unread: this node's, vouched for by live peers");
  }
  first_reservation_ = true;
  return {};
}

Status LeasedClaim::check_id_space() {
  auto spaces = read_id_spaces();
  if (!spaces.ok()) return spaces.error();
  bool ours_there = false;
  for (const ClusterIdSpace& space : *spaces) {
    ours_there = ours_there ||
                 (space.cluster == lease_.cluster && space.layout == describe(lease_.layout));
  }
  // Published once per claim of this process, again if the store lost it.
  if (!ours_there) id_space_published_ = false;
  return check_distinct_id_space(lease_, store_title(), *spaces);
}

Status LeasedClaim::take_reservation() {
  if (Status raised = raise_to_takeover_floor(peers_vouched_); !raised.ok()) return raised;
  StepResult first = extend_reservation(/*force=*/true);
  if (first.outcome != StepOutcome::kDone) {
    return Error{ErrorCode::kUnavailable, "cannot write the first reservation: " + first.message};
  }
  return {};
}

void LeasedClaim::note_claim(ClaimsSeen& seen, std::uint64_t id, std::string_view value,
                             std::optional<std::uint64_t> preferred) const {
  seen.taken.insert(id);
  if (preferred == id) seen.preferred_holder = describe_claim_value(value);
  auto record = ClaimRecord::parse(value);
  if (record.ok() && record->instance != record_.instance && record->wall_time.count() > 0) {
    seen.peer_clocks.push_back({record->wall_time, record->refresh_every});
  }
}

bool LeasedClaim::left_by_this_process(std::string_view value) const {
  auto record = ClaimRecord::parse(value);
  return record.ok() && record->instance == record_.instance;
}

Claim LeasedClaim::granted() const {
  Claim claim = claim_of(node_id_, lease_.layout, floor_, reservation_);
  claim.store_created = created_;
  claim.store_created_now = created_now_;
  claim.store_reservation = store_reservation_;
  claim.floor_source = floor_source_;
  return claim;
}

Result<std::vector<std::string>> parse_host_port_list(std::string_view list, std::string_view store,
                                                      std::vector<std::string_view> schemes) {
  std::vector<std::string> endpoints;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view entry = list.substr(start, end - start);
    for (std::string_view scheme : schemes) {
      if (entry.substr(0, scheme.size()) == scheme) entry.remove_prefix(scheme.size());
    }
    const std::size_t colon = entry.rfind(':');
    unsigned port = 0;
    const char* port_end = entry.data() + entry.size();
    const bool port_ok =
        colon != std::string_view::npos && colon > 0 && colon + 1 < entry.size() &&
        std::from_chars(entry.data() + colon + 1, port_end, port).ptr == port_end && port >= 1 &&
        port <= 65535;
    if (!port_ok) {
      return invalid_argument(
          fmt::format("bad {} endpoint '{}': expected host:port with a port in 1..65535", store,
                      list.substr(start, end - start)));
    }
    endpoints.emplace_back(entry);
    start = end + 1;
  }
  return endpoints;
}

std::optional<std::uint64_t> parse_node_id(std::string_view text) {
  std::uint64_t id = 0;
  const char* end = text.data() + text.size();
  if (text.empty() || std::from_chars(text.data(), end, id).ptr != end) return std::nullopt;
  return id;
}

Result<milliseconds> parse_reservation(std::string_view where, std::string_view value) {
  std::int64_t ms = 0;
  const char* end = value.data() + value.size();
  if (value.empty() || std::from_chars(value.data(), end, ms).ptr != end || ms < 0) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("{} holds '{}', not a Unix-ms timestamp; refusing to use that node "
                             "id until an operator repairs it",
                             where, value.substr(0, 40))};
  }
  return milliseconds{ms};
}

}  // namespace snowid::coord
