#include "segment_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string_view>

#include "prometheus_text.h"

namespace snowid {

std::string segment_metrics(const SegmentAllocator& segments, std::size_t max_tags) {
  const auto stats = segments.stats();
  const std::size_t shown = std::min(stats.size(), max_tags);
  std::string out;
  auto series = [&](std::string_view name, std::string_view type, std::string_view help,
                    auto value_of) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n", name, help, type);
    for (std::size_t i = 0; i < shown; ++i) {
      out += fmt::format("{}{{tag=\"{}\"}} {}\n", name, prometheus_label_value(stats[i].tag),
                         value_of(stats[i]));
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
  series("snowid_segment_tag_refused", "gauge",
         "1 while the tag is refused: its store handed a range below one it handed this node "
         "before (restored from an older backup?).",
         [](const SegmentTagStats& t) { return t.refused ? "1" : "0"; });
  const SegmentReadiness readiness = segments.readiness();
  out += fmt::format(
      "# HELP snowid_segment_tags_refused Tags refused: their store went back below a range it "
      "handed this node.\n"
      "# TYPE snowid_segment_tags_refused gauge\nsnowid_segment_tags_refused {}\n"
      "# HELP snowid_segment_stores_refused Ticket servers never used: their identity disagrees.\n"
      "# TYPE snowid_segment_stores_refused gauge\nsnowid_segment_stores_refused {}\n",
      readiness.refused_tags.size(), readiness.refused_stores.size());
  out += fmt::format(
      "# HELP snowid_segment_store_reachable Whether the last segment store call succeeded.\n"
      "# TYPE snowid_segment_store_reachable gauge\nsnowid_segment_store_reachable {}\n"
      "# HELP snowid_segment_ready Whether every known tag can issue a number now.\n"
      "# TYPE snowid_segment_ready gauge\nsnowid_segment_ready {}\n"
      "# HELP snowid_segment_tags Tags this node knows (series above: at most {}).\n"
      "# TYPE snowid_segment_tags gauge\nsnowid_segment_tags {}\n",
      readiness.store_reachable ? 1 : 0, readiness.ready ? 1 : 0, max_tags, stats.size());
  return out;
}

}  // namespace snowid
