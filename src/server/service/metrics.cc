#include "metrics.h"

#include <fmt/format.h>

#include <mutex>

namespace snowid::server {

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

void LatencyHistogram::add(std::chrono::nanoseconds latency) {
  std::size_t bucket = 0;
  while (bucket < kBucketsNs.size() && latency.count() > kBucketsNs[bucket]) ++bucket;
  buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_ns.fetch_add(static_cast<std::uint64_t>(latency.count()), std::memory_order_relaxed);
  count.fetch_add(1, std::memory_order_relaxed);
}

void LatencyHistogram::render(std::string& out, std::string_view name,
                              std::string_view labels) const {
  auto sink = std::back_inserter(out);
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b < kBucketsNs.size(); ++b) {
    cumulative += buckets[b].load(std::memory_order_relaxed);
    fmt::format_to(sink, "{}_bucket{{{}le=\"{}\"}} {}\n", name, labels,
                   static_cast<double>(kBucketsNs[b]) / 1e9, cumulative);
  }
  cumulative += buckets[kBucketsNs.size()].load(std::memory_order_relaxed);
  fmt::format_to(sink, "{}_bucket{{{}le=\"+Inf\"}} {}\n", name, labels, cumulative);
  // `labels` without its trailing comma, in braces, for _sum and _count.
  const std::string braces =
      labels.empty() ? "" : fmt::format("{{{}}}", labels.substr(0, labels.size() - 1));
  fmt::format_to(sink, "{}_sum{} {:.9f}\n", name, braces, static_cast<double>(sum_ns.load()) / 1e9);
  fmt::format_to(sink, "{}_count{} {}\n", name, braces, count.load());
}

void Metrics::count_call(Protocol protocol, Call call, Outcome outcome,
                         std::chrono::nanoseconds latency) {
  const auto p = static_cast<std::size_t>(protocol);
  calls_[p][static_cast<std::size_t>(call)][static_cast<std::size_t>(outcome)].fetch_add(
      1, std::memory_order_relaxed);
  call_latency_[p].add(latency);
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

  out += "# HELP snowid_requests_total Calls of the ID service, by protocol, call and outcome.\n";
  out += "# TYPE snowid_requests_total counter\n";
  for (std::size_t p = 0; p < kProtocolCount; ++p) {
    for (std::size_t c = 0; c < kCallCount; ++c) {
      for (std::size_t o = 0; o < kOutcomeCount; ++o) {
        const auto n = calls_[p][c][o].load(std::memory_order_relaxed);
        if (n == 0) continue;
        out +=
            fmt::format("snowid_requests_total{{protocol=\"{}\",call=\"{}\",outcome=\"{}\"}} {}\n",
                        protocol_name(static_cast<Protocol>(p)), call_name(static_cast<Call>(c)),
                        outcome_name(static_cast<Outcome>(o)), n);
      }
    }
  }
  out += "# HELP snowid_request_duration_seconds Latency of calls of the ID service.\n";
  out += "# TYPE snowid_request_duration_seconds histogram\n";
  for (std::size_t p = 0; p < kProtocolCount; ++p) {
    call_latency_[p].render(
        out, "snowid_request_duration_seconds",
        fmt::format("protocol=\"{}\",", protocol_name(static_cast<Protocol>(p))));
  }

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
