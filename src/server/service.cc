#include "service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>

#include "audit_format.h"
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
  thread_local std::string records;
  records.clear();
  std::uint64_t blocks = 0;
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
    if (audit_log_) {
      const GeneratorOptions& node = generator.options();
      audit::append_record(records, {audit_log_->incarnation(), node.datacenter_id,
                                     node.worker_id, block->first, block->last()});
      ++blocks;
    }
  }
  if (done > 0) metrics_.count_ids(agent, done);
  // A refused request sends no ID, so its blocks need no record.
  if (result.ok() && audit_log_) result = audit_log_->append(records, blocks);
  return result;
}

Result<Id> IdService::issue_one(std::string_view agent) {
  if (Status claim = node_->may_issue(); !claim.ok()) return claim.error();
  Generator& generator = node_->generator();
  Result<Id> id = generator.next();
  if (!id.ok()) return id;
  metrics_.count_ids(agent, 1);
  if (audit_log_) {
    thread_local std::string record;
    record.clear();
    const GeneratorOptions& node = generator.options();
    audit::append_record(record,
                         {audit_log_->incarnation(), node.datacenter_id, node.worker_id, *id, *id});
    if (Status logged = audit_log_->append(record, 1); !logged.ok()) return logged.error();
  }
  return id;
}

IdService::IdService(ServerConfig config, std::unique_ptr<Node> node)
    : config_(std::move(config)),
      node_(std::move(node)),
      http_(config_.http.endpoint),
      grpc_(config_.grpc.endpoint) {}

void IdService::set_bound_endpoints(Endpoint http, Endpoint grpc) {
  http_ = std::move(http);
  grpc_ = std::move(grpc);
}

namespace {

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

}  // namespace

bool IdService::authorized(std::optional<std::string_view> authorization) const {
  const std::string& token = config_.bearer_token;
  if (token.empty()) return true;
  constexpr std::string_view kScheme = "bearer ";
  if (!authorization || authorization->size() < kScheme.size()) return false;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    const char c = (*authorization)[i];
    if ((c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c) != kScheme[i]) return false;
  }
  return constant_time_equal(authorization->substr(kScheme.size()), token);
}

Status IdService::readiness() const {
  if (Status node = node_->readiness(); !node.ok()) return node;
  if (audit_log_) return audit_log_->health();
  return {};
}

void IdService::maintain() {
  node_->maintain();
  if (audit_log_) audit_log_->probe();
}

Error IdService::segment_error_for_client(std::string_view tag, const Error& error) const {
  if (error.code != ErrorCode::kUnavailable) return error;
  static std::atomic<long long> last_logged_s{0};
  const long long now_s = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count();
  long long last = last_logged_s.load();
  if (now_s - last >= 10 && last_logged_s.compare_exchange_strong(last, now_s)) {
    spdlog::warn("segment requests refused: {}", error.message);
  }
  return Error{ErrorCode::kUnavailable,
               fmt::format("segment tag '{}' has no numbers buffered and the segment store is "
                           "unavailable; retry later (details in the server log)",
                           tag.substr(0, 64))};
}

nlohmann::json IdService::segment_readiness() const {
  if (segments_ == nullptr) return nlohmann::json{{"enabled", false}};
  const SegmentReadiness r = segments_->readiness();
  // /readyz needs no token: the store's own text stays in /v1/info and the log.
  std::string reason;
  if (!r.store_reachable) {
    reason = r.ready ? "segment store unreachable; serving from buffered ranges"
                     : "segment store unreachable; no numbers buffered";
  }
  return nlohmann::json{{"enabled", true},
                        {"ready", r.ready},
                        {"store_reachable", r.store_reachable},
                        {"reason", reason}};
}

namespace {

nlohmann::json segment_info(const ServerConfig& config, const SegmentAllocator* segments) {
  if (segments == nullptr) return nullptr;
  const auto stats = segments->stats();
  nlohmann::json tags = nlohmann::json::array();
  for (std::size_t i = 0; i < stats.size() && i < kMaxSegmentTagsExported; ++i) {
    tags.push_back(stats[i].tag);
  }
  const SegmentReadiness readiness = segments->readiness();
  return nlohmann::json{{"store", redact_store_url(segment_store_url(config))},
                        {"store_reachable", readiness.store_reachable},
                        {"store_state", readiness.reason},
                        {"auto_create", config.segment.auto_create},
                        {"prefetch_at", config.segment.prefetch_at},
                        {"max_step", config.segment.max_step},
                        {"tags_known", stats.size()},
                        {"tags", std::move(tags)}};
}

// Per-tag series for /metrics, at most kMaxSegmentTagsExported tags.
std::string segment_metrics(const SegmentAllocator& segments) {
  const auto stats = segments.stats();
  const std::size_t shown = std::min(stats.size(), kMaxSegmentTagsExported);
  std::string out;
  auto series = [&](std::string_view name, std::string_view type, std::string_view help,
                    auto value_of) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n", name, help, type);
    for (std::size_t i = 0; i < shown; ++i) {
      out += fmt::format("{}{{tag=\"{}\"}} {}\n", name, stats[i].tag, value_of(stats[i]));
    }
  };
  auto seconds = [](std::chrono::microseconds us) {
    return fmt::format("{:.6f}", static_cast<double>(us.count()) / 1e6);
  };
  series("snowid_segment_numbers_issued_total", "counter", "Segment numbers issued, by tag.",
         [](const SegmentTagStats& t) { return std::to_string(t.numbers_issued); });
  series("snowid_segment_fetches_total", "counter", "Ranges fetched from the segment store.",
         [](const SegmentTagStats& t) { return std::to_string(t.segments_fetched); });
  series("snowid_segment_step", "gauge", "Increment of the tag's next fetch.",
         [](const SegmentTagStats& t) { return std::to_string(t.current_step); });
  series("snowid_segment_buffered_numbers", "gauge",
         "Numbers left in the current and the standby range.",
         [](const SegmentTagStats& t) { return std::to_string(t.buffered_numbers); });
  series("snowid_segment_requests_waited_total", "counter",
         "Requests that found no number buffered and waited for the store.",
         [](const SegmentTagStats& t) { return std::to_string(t.requests_waited); });
  series("snowid_segment_store_errors_total", "counter", "Failed fetches from the segment store.",
         [](const SegmentTagStats& t) { return std::to_string(t.store_errors); });
  series("snowid_segment_fetch_seconds_total", "counter",
         "Time spent in fetches (successful and failed).",
         [&](const SegmentTagStats& t) { return seconds(t.fetch_latency_total); });
  series("snowid_segment_fetch_seconds_max", "gauge", "Longest fetch so far.",
         [&](const SegmentTagStats& t) { return seconds(t.fetch_latency_max); });
  const SegmentReadiness readiness = segments.readiness();
  out += fmt::format(
      "# HELP snowid_segment_store_reachable Whether the last segment store call succeeded.\n"
      "# TYPE snowid_segment_store_reachable gauge\nsnowid_segment_store_reachable {}\n"
      "# HELP snowid_segment_ready Whether every known tag can issue a number now.\n"
      "# TYPE snowid_segment_ready gauge\nsnowid_segment_ready {}\n"
      "# HELP snowid_segment_tags Tags this node knows (series above: at most {}).\n"
      "# TYPE snowid_segment_tags gauge\nsnowid_segment_tags {}\n",
      readiness.store_reachable ? 1 : 0, readiness.ready ? 1 : 0, kMaxSegmentTagsExported,
      stats.size());
  return out;
}

}  // namespace

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
      {"now_ms", SystemClock::instance().now_fresh().count()},
      {"uptime_seconds",
       std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count()},
      {"ids_issued", metrics_.ids_issued()},
      {"http", http_.text()},
      {"grpc", grpc_.text()},
      {"max_batch", config_.max_batch},
      {"cluster", node_->cluster_info()},
      {"segment", segment_info(config_, segments_)},
      {"audit_log",
       audit_log_
           ? nlohmann::json{{"path", audit_log_->path()},
                            {"incarnation", audit::format_incarnation(audit_log_->incarnation())},
                            {"fsync", audit_log_->fsync()}}
           : nlohmann::json(nullptr)},
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
      readiness().ok() ? "1" : "0");
  if (audit_log_) {
    const AuditStats audit = audit_log_->stats();
    add("snowid_audit_records_total", "counter",
        "Audit log records written (one per block of IDs a request took).",
        std::to_string(audit.records));
    add("snowid_audit_write_errors_total", "counter",
        "Requests refused (503 / UNAVAILABLE) because their audit records could not be written.",
        std::to_string(audit.write_errors));
    add("snowid_audit_fsyncs_total", "counter", "fdatasync calls on the audit log (audit_fsync).",
        std::to_string(audit.fsyncs));
  }
  extra += node_->cluster_metrics();
  if (segments_ != nullptr) extra += segment_metrics(*segments_);
  return metrics_.render(extra);
}

}  // namespace snowid::server
