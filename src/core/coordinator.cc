// The coordinator interface's shared helpers and the static coordinator.
#include "snowid/coordinator.h"

#include <fmt/format.h>

#include <atomic>
#include <charconv>
#include <cmath>

namespace snowid {

const char* claim_state_name(ClaimState state) {
  switch (state) {
    case ClaimState::kUnclaimed: return "unclaimed";
    case ClaimState::kHeld: return "held";
    case ClaimState::kReclaiming: return "reclaiming";
  }
  return "?";
}

std::chrono::microseconds renewal_latency_bound(std::size_t bucket) {
  if (bucket + 1 >= kRenewalLatencyBuckets) return std::chrono::microseconds::max();
  return std::chrono::microseconds{
      std::llround(100.0 * std::exp2(static_cast<double>(bucket) / 4.0))};
}

std::size_t renewal_latency_bucket(std::chrono::microseconds latency) {
  std::size_t bucket = 0;
  while (latency > renewal_latency_bound(bucket)) ++bucket;
  return bucket;
}

std::uint64_t node_id_count(const Layout& layout) {
  return std::uint64_t{1} << (layout.datacenter_bits + layout.worker_bits);
}

Result<std::uint64_t> node_id_from_pod_name(std::string_view hostname, std::uint64_t id_count) {
  const std::size_t dash = hostname.rfind('-');
  const std::string_view ordinal =
      dash == std::string_view::npos ? std::string_view{} : hostname.substr(dash + 1);
  std::uint64_t id = 0;
  const char* end = ordinal.data() + ordinal.size();
  if (ordinal.empty() || std::from_chars(ordinal.data(), end, id).ptr != end) {
    return invalid_argument(fmt::format(
        "hostname '{}' does not end in -<ordinal> like a StatefulSet pod (snowid-3)", hostname));
  }
  if (id >= id_count) {
    return invalid_argument(fmt::format("pod ordinal {} of '{}' is beyond the layout's {} node ids",
                                        id, hostname, id_count));
  }
  return id;
}

namespace {

// A fixed node id: the process is trusted to be its only user.
class StaticCoordinator final : public Coordinator {
 public:
  explicit StaticCoordinator(Claim claim) : claim_(claim) {}

  Result<Claim> claim() override {
    claimed_ = true;
    return claim_;
  }
  bool may_issue() const override { return true; }
  std::chrono::milliseconds reservation() const override { return std::chrono::milliseconds{0}; }
  std::uint64_t claim_generation() const override { return 0; }
  std::optional<Claim> current_claim() const override { return claim_; }
  Status release(std::optional<std::chrono::milliseconds>) override {
    claimed_ = false;
    return {};
  }
  CoordinatorStats stats() const override {
    CoordinatorStats stats;
    stats.store = "static";
    stats.state = claimed_ ? ClaimState::kHeld : ClaimState::kUnclaimed;
    stats.node_id = claim_.node_id;
    stats.claims = claimed_ ? 1 : 0;
    return stats;
  }

 private:
  Claim claim_;
  std::atomic<bool> claimed_{false};
};

}  // namespace

Result<std::unique_ptr<Coordinator>> make_static_coordinator(const Layout& layout,
                                                             std::uint64_t datacenter_id,
                                                             std::uint64_t worker_id) {
  Status valid = validate(layout);
  if (!valid.ok()) return valid.error();
  const std::uint64_t max_datacenter = (std::uint64_t{1} << layout.datacenter_bits) - 1;
  const std::uint64_t max_worker = (std::uint64_t{1} << layout.worker_bits) - 1;
  if (datacenter_id > max_datacenter || worker_id > max_worker) {
    return invalid_argument(fmt::format(
        "node (datacenter {}, worker {}) is outside the layout's 0..{} and 0..{}", datacenter_id,
        worker_id, max_datacenter, max_worker));
  }
  Claim claim;
  claim.datacenter_id = datacenter_id;
  claim.worker_id = worker_id;
  claim.node_id = (datacenter_id << layout.worker_bits) | worker_id;
  return std::unique_ptr<Coordinator>(new StaticCoordinator(claim));
}

}  // namespace snowid
