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

// A label value as the text format writes it between its quotes: '\\', '"'
// and a line feed escaped (segment tags may hold the first two).
inline std::string prometheus_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace snowid
