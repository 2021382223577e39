#include "info_json.h"

#include "audit_format.h"
#include "id_json.h"
#include "node.h"
#include "time_text.h"

namespace snowid::server {
namespace {

double in_milliseconds(std::chrono::microseconds us) {
  return static_cast<double>(us.count()) / 1000.0;
}

// A fixed node id. One a store gave without a lease (it names its
// endpoints: node_id_policy = "disposable") is new at every start, so the
// layout's node ids above it are the starts left.
nlohmann::json fixed_node_json(const NodeInfo& info) {
  const CoordinatorStats& s = info.cluster;
  nlohmann::json out{{"coordinator", s.store}};
  const auto starts_left = disposable_starts_left(s, info.generator.layout);
  if (!starts_left) return out;
  out[s.store + "_endpoints"] = s.endpoints;
  out["node_id"] = *s.node_id;
  out["node_id_starts_left"] = *starts_left;
  out["last_loss"] = s.last_loss;  // why the node stopped issuing ("": it did not)
  return out;
}

// The store's own keys are named after it ("etcd_requests").
nlohmann::json cluster_json(const NodeInfo& info) {
  const CoordinatorStats& s = info.cluster;
  const std::string& store = s.store;
  if (!s.leased) return fixed_node_json(info);
  nlohmann::json out{
      {"coordinator", store},
      {"cluster", s.cluster},
      {store + "_endpoints", s.endpoints},
      {"claim_state", claim_state_name(s.state)},
      {"reservation_ms", s.reservation.count()},
      {"reservation", format_time(s.reservation)},
      {"reservation_headroom_ms", s.reservation_headroom.count()},
      {"claims", s.claims},
      {"reclaims", s.reclaims},
      {"fencing_events", s.fencing_events},
      {"lost_claims", s.lost_claims},
      {store + "_requests", s.store_requests},
      {store + "_errors", s.store_errors},
      {store + "_latency_max_ms", in_milliseconds(s.store_latency_max)},
  };
  out["node_id"] = s.node_id ? nlohmann::json(*s.node_id) : nlohmann::json(nullptr);
  out["lease_time_left_ms"] =
      s.lease_time_left ? nlohmann::json(s.lease_time_left->count()) : nlohmann::json(nullptr);
  out["last_loss"] = s.last_loss;
  out["store_losses"] = info.store_losses;
  out["store_loss_unconfirmed"] =
      info.store_loss ? nlohmann::json(*info.store_loss) : nlohmann::json(nullptr);
  return out;
}

nlohmann::json segments_json(const std::optional<SegmentInfo>& segments) {
  if (!segments) return nullptr;
  return nlohmann::json{{"store", segments->store},
                        {"store_reachable", segments->readiness.store_reachable},
                        {"store_state", segments->readiness.reason},
                        {"auto_create", segments->auto_create},
                        {"prefetch_at", segments->prefetch_at},
                        {"max_step", segments->max_step},
                        {"tags_known", segments->tags_known},
                        {"tags", segments->tags}};
}

}  // namespace

nlohmann::json info_json(const NodeInfo& info) {
  const GeneratorOptions& options = info.generator;
  const GeneratorStats& stats = info.stats;
  nlohmann::json out{
      {"version", kVersion},
      {"layout", layout_json(options.layout, info.now)},
      {"datacenter_id", options.datacenter_id},
      {"worker_id", options.worker_id},
      {"clock_policy", clock_policy_name(options.clock_policy)},
      {"max_wait_ms", options.max_wait.count()},
      {"max_drift_ms", options.max_drift.count()},
      {"sequence_start", sequence_start_name(options.sequence_start)},
      {"state_file", options.state_file.string()},
      {"high_water_ms", stats.high_water.count()},
      {"high_water", format_time(stats.high_water)},
      {"last_issued_ms", stats.last_issued.count()},
      {"drift_ms", stats.drift.count()},
      {"clock_behind_events", stats.clock_behind_events},
      {"now_ms", info.now.count()},
      {"uptime_seconds", info.uptime.count()},
      {"ids_issued", info.ids_issued},
      {"max_batch", info.max_batch},
      {"cluster", cluster_json(info)},
      {"segment", segments_json(info.segments)},
      // Whether opaque IDs are on; never anything of the key.
      {"opaque_ids", nlohmann::json{{"enabled", info.opaque_ids}}},
      {"audit_log",
       info.audit_log
           ? nlohmann::json{{"path", info.audit_log->path},
                            {"incarnation", audit::format_incarnation(info.audit_log->incarnation)},
                            {"fsync", info.audit_log->fsync}}
           : nlohmann::json(nullptr)},
  };
  for (const auto& [protocol, address] : info.listeners) out[protocol] = address;
  return out;
}

nlohmann::json segment_readiness_json(const std::optional<SegmentReadiness>& readiness) {
  if (!readiness) return nlohmann::json{{"enabled", false}};
  return nlohmann::json{{"enabled", true},
                        {"ready", readiness->ready},
                        {"store_reachable", readiness->store_reachable},
                        {"refused_tags", readiness->refused_tags},
                        {"refused_stores", readiness->refused_stores},
                        {"reason", readiness->reason}};
}

std::string info_json_text(const NodeInfo& info) {
  return info_json(info).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace snowid::server
