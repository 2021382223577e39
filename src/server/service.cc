#include "service.h"

#include <fmt/format.h>

#include "id_json.h"

namespace snowid::server {

bool is_transient(const Error& error) {
  return error.code == ErrorCode::kClockBehind || error.code == ErrorCode::kStateFile ||
         error.code == ErrorCode::kUnavailable;
}

bool valid_agent(std::string_view agent) {
  constexpr std::size_t kMaxAgentLength = 64;
  if (agent.empty() || agent.size() > kMaxAgentLength) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (!alpha(agent[0])) return false;
  for (char c : agent) {
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '-') return false;
  }
  return true;
}

Status IdService::issue(std::uint32_t count, std::string_view agent, std::vector<Id>& out) {
  if (Status claim = node_->may_issue(); !claim.ok()) return claim;
  Generator& generator = node_->generator();
  std::uint32_t done = 0;
  Status result;
  while (done < count) {
    auto block = generator.next_block(count - done);
    if (!block.ok()) {
      result = block.error();
      break;
    }
    for (std::uint32_t i = 0; i < block->count; ++i) out.push_back(block->at(i));
    done += block->count;
  }
  if (done > 0) metrics_.count_ids(agent, done);
  return result;
}

Result<Id> IdService::issue_one(std::string_view agent) {
  if (Status claim = node_->may_issue(); !claim.ok()) return claim.error();
  Result<Id> id = node_->generator().next();
  if (id.ok()) metrics_.count_ids(agent, 1);
  return id;
}

IdService::IdService(ServerConfig config, std::unique_ptr<Node> node)
    : config_(std::move(config)), node_(std::move(node)), http_(config_.http),
      grpc_(config_.grpc) {}

void IdService::set_bound_endpoints(Endpoint http, Endpoint grpc) {
  http_ = std::move(http);
  grpc_ = std::move(grpc);
}

nlohmann::json IdService::info() const {
  const Generator& generator = node_->generator();
  const GeneratorStats stats = generator.stats();
  const auto now = SystemClock::instance().now_fresh();
  const auto& options = generator.options();
  return nlohmann::json{
      {"version", kVersion},
      {"layout", layout_json(options.layout, now)},
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
      {"uptime_seconds",
       std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count()},
      {"ids_issued", metrics_.ids_issued()},
      {"http", http_.text()},
      {"grpc", grpc_.text()},
      {"max_batch", config_.max_batch},
      {"cluster", node_->cluster_info()},
  };
}

std::string IdService::metrics_text() const {
  const GeneratorStats s = node_->generator().stats();
  std::string extra;
  auto add = [&extra](std::string_view name, std::string_view type, std::string_view help,
                      const std::string& value) { append_metric(extra, name, type, help, value); };
  add("snowid_clock_rollback_events_total", "counter",
      "Times the clock read behind the last issued ID.", std::to_string(s.clock_behind_events));
  add("snowid_generator_refusals_total", "counter", "Calls the generator refused.",
      std::to_string(s.refusals));
  add("snowid_drift_ahead_seconds", "gauge", "Lead of the last issued ID over the wall clock.",
      fmt::format("{:.3f}", static_cast<double>(s.drift.count()) / 1000.0));
  add("snowid_state_write_failures_total", "counter", "Failed writes of the high-water mark.",
      std::to_string(s.state_write_failures));
  add("snowid_high_water_timestamp_seconds", "gauge", "Persisted high-water mark (Unix time).",
      fmt::format("{:.3f}", static_cast<double>(s.high_water.count()) / 1000.0));
  add("snowid_ready", "gauge", "Whether an ID can be issued right now.",
      node_->readiness().ok() ? "1" : "0");
  extra += node_->cluster_metrics();
  return metrics_.render(extra);
}

}  // namespace snowid::server
