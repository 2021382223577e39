// HTTP's own request metrics: snowid_http_requests_total by route (the
// route table's names, probes and /metrics included) and status, and the
// latency histogram snowid_http_request_duration_seconds. A MetricsSource
// the HTTP listener adds to the service's /metrics (the calls of the service
// are counted there, by protocol, as for every other protocol).
// Thread-safety: counted with relaxed atomics from any connection thread;
// render() may run concurrently.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "http_routes.h"
#include "metrics.h"

namespace snowid::server {

class HttpMetrics final : public MetricsSource {
 public:
  // A request answered, by route and status; `latency` from its parsing to
  // its answer (0 for the requests the transport refuses itself).
  void count(Route route, unsigned status, std::chrono::nanoseconds latency);
  void render(std::string& out) const override;

 private:
  // The statuses counted by name; the last, 0, counts any other as "other".
  static constexpr std::array<unsigned, 10> kStatuses{200, 400, 401, 404, 405,
                                                      413, 431, 500, 503, 0};
  static std::size_t status_index(unsigned status);

  std::array<std::array<std::atomic<std::uint64_t>, kStatuses.size()>, kRouteCount> requests_{};
  LatencyHistogram latency_;
};

}  // namespace snowid::server
