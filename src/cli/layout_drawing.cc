#include "layout_drawing.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace snowid::cli {

std::string draw_layout(const Layout& layout) {
  struct Field {
    std::string name;
    int bits;
  };
  std::vector<Field> fields{{"timestamp", layout.timestamp_bits}};
  const Field sequence{"sequence", layout.sequence_bits};
  if (layout.sequence_position == SequencePosition::kHigh) fields.push_back(sequence);
  fields.push_back({"datacenter", layout.datacenter_bits});
  fields.push_back({"worker", layout.worker_bits});
  if (layout.sequence_position == SequencePosition::kLow) fields.push_back(sequence);

  const int total = layout.timestamp_bits + layout.datacenter_bits + layout.worker_bits +
                    layout.sequence_bits;
  std::string ranges = fmt::format("| {:<4} ", total == 63 ? "63" : fmt::format("63..{}", total));
  std::string names = fmt::format("| {:<4} ", total == 63 ? "sign" : "zero");
  if (total < 63) {
    const std::size_t width = std::max(ranges.size(), names.size());
    ranges.resize(width, ' ');
    names.resize(width, ' ');
  }
  int high = total - 1;
  for (const Field& field : fields) {
    if (field.bits == 0) continue;
    const int low = high - field.bits + 1;
    const std::string range = field.bits == 1 ? std::to_string(high)
                                              : fmt::format("{}..{}", high, low);
    const std::string name = fmt::format("{} ({})", field.name, field.bits);
    const std::size_t width = std::max(range.size(), name.size());
    ranges += fmt::format("| {:<{}} ", range, width);
    names += fmt::format("| {:<{}} ", name, width);
    high = low - 1;
  }
  return ranges + "|\n" + names + "|\n";
}

}  // namespace snowid::cli
