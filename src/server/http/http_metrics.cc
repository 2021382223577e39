#include "http_metrics.h"

#include <fmt/format.h>

namespace snowid::server {

std::size_t HttpMetrics::status_index(unsigned status) {
  for (std::size_t i = 0; i + 1 < kStatuses.size(); ++i) {
    if (kStatuses[i] == status) return i;
  }
  return kStatuses.size() - 1;
}

void HttpMetrics::count(Route route, unsigned status, std::chrono::nanoseconds latency) {
  requests_[static_cast<std::size_t>(route)][status_index(status)].fetch_add(
      1, std::memory_order_relaxed);
  latency_.add(latency);
}

void HttpMetrics::render(std::string& out) const {
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
  latency_.render(out, "snowid_http_request_duration_seconds", "");
}

}  // namespace snowid::server
