// The process facts Prometheus's client libraries export under their
// conventional names (process_cpu_seconds_total, process_resident_memory_bytes,
// process_open_fds, ...), read from /proc at each scrape, and
// snowid_build_info{version,compiler} 1.
#pragma once

#include "metrics.h"

namespace snowid::server {

class ProcessMetrics final : public MetricsSource {
 public:
  // Appends the metrics; a fact /proc cannot give is left out, never made up.
  void render(std::string& out) const override;
};

}  // namespace snowid::server
