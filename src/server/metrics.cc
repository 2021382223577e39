#include "metrics.h"

#include <fmt/format.h>

#include <mutex>

namespace snowid::server {

std::string_view route_name(Route route) {
  switch (route) {
    case Route::kId: return "/v1/id";
    case Route::kIds: return "/v1/ids";
    case Route::kDecode: return "/v1/decode";
    case Route::kInfo: return "/v1/info";
    case Route::kLeafSnowflake: return "/api/snowflake/get";
    case Route::kHealthz: return "/healthz";
    case Route::kReadyz: return "/readyz";
    case Route::kMetrics: return "/metrics";
    case Route::kSegment: return "/v1/segment";
    case Route::kLeafSegment: return "/api/segment/get";
    case Route::kReadyzSegment: return "/readyz/segment";
    case Route::kOther: return "other";
  }
  return "other";
}

void append_metric(std::string& out, std::string_view name, std::string_view type,
                   std::string_view help, std::string_view value) {
  fmt::format_to(std::back_inserter(out), "# HELP {0} {1}\n# TYPE {0} {2}\n{0} {3}\n", name, help,
                 type, value);
}

std::size_t Metrics::status_index(unsigned status) {
  for (std::size_t i = 0; i + 1 < kStatuses.size(); ++i) {
    if (kStatuses[i] == status) return i;
  }
  return kStatuses.size() - 1;
}

void Metrics::count_ids(std::string_view agent, std::uint64_t ids) {
  ids_issued_.fetch_add(ids, std::memory_order_relaxed);
  if (agent.empty() || agent == "none") {
    no_agent_.fetch_add(ids, std::memory_order_relaxed);
    return;
  }
  const std::string_view key = agent;
  {
    std::shared_lock lock(agents_mutex_);
    if (auto it = agents_.find(key); it != agents_.end()) {
      it->second->fetch_add(ids, std::memory_order_relaxed);
      return;
    }
  }
  std::unique_lock lock(agents_mutex_);
  if (auto it = agents_.find(key); it != agents_.end()) {
    it->second->fetch_add(ids, std::memory_order_relaxed);
  } else if (agents_.size() < kMaxAgents) {
    agents_.emplace(std::string(key), std::make_unique<std::atomic<std::uint64_t>>(ids));
  } else {
    other_agents_.fetch_add(ids, std::memory_order_relaxed);
  }
}

void Metrics::count_request(Route route, unsigned status, std::chrono::nanoseconds latency) {
  requests_[static_cast<std::size_t>(route)][status_index(status)].fetch_add(
      1, std::memory_order_relaxed);
  std::size_t bucket = 0;
  while (bucket < kBucketsNs.size() && latency.count() > kBucketsNs[bucket]) ++bucket;
  latency_buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  latency_sum_ns_.fetch_add(static_cast<std::uint64_t>(latency.count()), std::memory_order_relaxed);
  latency_count_.fetch_add(1, std::memory_order_relaxed);
}

std::string Metrics::render(const std::string& extra) const {
  std::string out;
  out += "# HELP snowid_ids_issued_total IDs issued, by client agent.\n";
  out += "# TYPE snowid_ids_issued_total counter\n";
  {
    std::shared_lock lock(agents_mutex_);
    for (const auto& [agent, count] : agents_) {
      out += fmt::format("snowid_ids_issued_total{{agent=\"{}\"}} {}\n", agent, count->load());
    }
  }
  out += fmt::format("snowid_ids_issued_total{{agent=\"none\"}} {}\n", no_agent_.load());
  out += fmt::format("snowid_ids_issued_total{{agent=\"other\"}} {}\n", other_agents_.load());

  out += "# HELP snowid_http_requests_total HTTP requests, by route and status.\n";
  out += "# TYPE snowid_http_requests_total counter\n";
  for (std::size_t r = 0; r < kRouteCount; ++r) {
    for (std::size_t s = 0; s < kStatuses.size(); ++s) {
      const auto n = requests_[r][s].load(std::memory_order_relaxed);
      if (n == 0) continue;
      const std::string status = kStatuses[s] == 0 ? "other" : std::to_string(kStatuses[s]);
      out += fmt::format("snowid_http_requests_total{{route=\"{}\",status=\"{}\"}} {}\n",
                         route_name(static_cast<Route>(r)), status, n);
    }
  }

  out += "# HELP snowid_http_request_duration_seconds HTTP request latency.\n";
  out += "# TYPE snowid_http_request_duration_seconds histogram\n";
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b < kBucketsNs.size(); ++b) {
    cumulative += latency_buckets_[b].load(std::memory_order_relaxed);
    out += fmt::format("snowid_http_request_duration_seconds_bucket{{le=\"{}\"}} {}\n",
                       static_cast<double>(kBucketsNs[b]) / 1e9, cumulative);
  }
  cumulative += latency_buckets_[kBucketsNs.size()].load(std::memory_order_relaxed);
  out += fmt::format("snowid_http_request_duration_seconds_bucket{{le=\"+Inf\"}} {}\n",
                     cumulative);
  out += fmt::format("snowid_http_request_duration_seconds_sum {:.9f}\n",
                     static_cast<double>(latency_sum_ns_.load()) / 1e9);
  out += fmt::format("snowid_http_request_duration_seconds_count {}\n", latency_count_.load());

  out += "# HELP snowid_open_connections Open HTTP connections.\n";
  out += "# TYPE snowid_open_connections gauge\n";
  out += fmt::format("snowid_open_connections {}\n", open_connections_.load());
  out += "# HELP snowid_refused_connections_total Connections refused at the connection limit.\n";
  out += "# TYPE snowid_refused_connections_total counter\n";
  out += fmt::format("snowid_refused_connections_total {}\n", refused_connections_.load());
  out += "# HELP snowid_grpc_open_connections Open gRPC connections (plain text).\n";
  out += "# TYPE snowid_grpc_open_connections gauge\n";
  out += fmt::format("snowid_grpc_open_connections {}\n", grpc_open_connections_.load());
  out +=
      "# HELP snowid_grpc_refused_connections_total gRPC connections refused at "
      "grpc_max_connections.\n";
  out += "# TYPE snowid_grpc_refused_connections_total counter\n";
  out +=
      fmt::format("snowid_grpc_refused_connections_total {}\n", grpc_refused_connections_.load());
  out += extra;
  return out;
}

}  // namespace snowid::server
