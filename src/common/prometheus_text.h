// Prometheus text exposition (format 0.0.4), shared by every subsystem that
// renders its own metrics for snowidd's /metrics.
#pragma once

#include <fmt/format.h>

#include <iterator>
#include <string>
#include <string_view>

namespace snowid {

// Appends one sample with its HELP and TYPE lines.
inline void append_metric(std::string& out, std::string_view name, std::string_view type,
                          std::string_view help, std::string_view value) {
  fmt::format_to(std::back_inserter(out), "# HELP {0} {1}\n# TYPE {0} {2}\n{0} {3}\n", name, help,
                 type, value);
}

}  // namespace snowid
