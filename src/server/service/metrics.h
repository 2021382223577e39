// snowidd's Prometheus metrics. Counters are atomics updated on the request
// path without locks, except the per-agent table, which takes a shared lock
// to find a named agent and an exclusive one only to add one (at most
// kMaxAgents; the rest count as "other", so no client can grow the output).
// Requests without an agent, the common case, take no lock. No protocol's
// routes are known here: HTTP counts its own (http/http_metrics.h).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "outcome.h"
#include "prometheus_text.h"

namespace snowid::server {

// A latency histogram over fixed buckets (the last: above them all),
// updated with relaxed atomics from any thread.
struct LatencyHistogram {
  // Upper bounds of the buckets, in nanoseconds.
  static constexpr std::array<std::int64_t, 12> kBucketsNs{
      50'000,    100'000,    250'000,    500'000,     1'000'000,   2'500'000,
      5'000'000, 10'000'000, 50'000'000, 100'000'000, 500'000'000, 1'000'000'000};

  std::array<std::atomic<std::uint64_t>, kBucketsNs.size() + 1> buckets{};
  std::atomic<std::uint64_t> sum_ns{0};
  std::atomic<std::uint64_t> count{0};

  void add(std::chrono::nanoseconds latency);
  // `name`_bucket/_sum/_count samples, each with `labels` ("" or `k="v",`).
  void render(std::string& out, std::string_view name, std::string_view labels) const;
};

// Metrics a subsystem keeps and renders itself (a listener's own),
// appended to /metrics; render() may be called from any thread.
class MetricsSource {
 public:
  virtual ~MetricsSource() = default;
  virtual void render(std::string& out) const = 0;
};

class Metrics {
 public:
  static constexpr std::size_t kMaxAgents = 100;

  void count_ids(std::string_view agent, std::uint64_t ids);
  // A call of the ID service on any protocol (snowid_requests_total and
  // snowid_request_duration_seconds, labelled by protocol).
  void count_call(Protocol protocol, Call call, Outcome outcome, std::chrono::nanoseconds latency);
  void connection_opened() { open_connections_.fetch_add(1, std::memory_order_relaxed); }
  void connection_closed() { open_connections_.fetch_sub(1, std::memory_order_relaxed); }
  void connection_refused() { refused_connections_.fetch_add(1, std::memory_order_relaxed); }
  void set_grpc_connections(std::uint64_t open) {
    grpc_open_connections_.store(open, std::memory_order_relaxed);
  }
  void grpc_connection_refused() {
    grpc_refused_connections_.fetch_add(1, std::memory_order_relaxed);
  }
  std::int64_t open_connections() const { return open_connections_.load(); }
  std::uint64_t ids_issued() const { return ids_issued_.load(std::memory_order_relaxed); }

  // Prometheus text exposition (format 0.0.4); `extra` is appended as is.
  std::string render(const std::string& extra) const;

 private:
  std::atomic<std::uint64_t> ids_issued_{0};
  mutable std::shared_mutex agents_mutex_;
  std::map<std::string, std::unique_ptr<std::atomic<std::uint64_t>>, std::less<>> agents_;
  std::atomic<std::uint64_t> other_agents_{0};
  // IDs for requests that named no agent: the common case, kept off the lock.
  std::atomic<std::uint64_t> no_agent_{0};

  std::array<std::array<std::array<std::atomic<std::uint64_t>, kOutcomeCount>, kCallCount>,
             kProtocolCount>
      calls_{};
  std::array<LatencyHistogram, kProtocolCount> call_latency_;
  std::atomic<std::int64_t> open_connections_{0};
  std::atomic<std::uint64_t> refused_connections_{0};
  std::atomic<std::uint64_t> grpc_open_connections_{0};
  std::atomic<std::uint64_t> grpc_refused_connections_{0};
};

}  // namespace snowid::server
