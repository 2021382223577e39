// snowidd's segment mode options (snowid/ext/segment.h, see snowid.example.toml)
// and their rows in the option table. The segment_store row itself is the
// server's (config.cc): its default lives in state_dir.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "option_rows.h"

namespace snowid::server {

// The value of segment_store that turns segment mode off.
inline constexpr const char* kSegmentStoreOff = "off";

// The file in state_dir that remembers the highest range end each segment
// store handed this node, per tag (src/segment/range_memory.h).
inline constexpr const char* kSegmentRangeMemoryFile = "segment-ranges";
// The same for business IDs' period rows (tags/tag_book.h).
inline constexpr const char* kBusinessRangeMemoryFile = "business-ranges";

struct SegmentConfig {
  // Empty: the SQLite file segments.db in state_dir; "off": no segment routes.
  std::string store;
  bool auto_create = false;
  std::int64_t auto_create_step = 1000;
  double prefetch_at = 0.1;
  std::int64_t max_step = 1'000'000;
  std::chrono::milliseconds request_timeout{1000};
  std::chrono::milliseconds store_timeout{3000};
  std::chrono::milliseconds retry_max{5000};
  // Tag administration's audit log (tags/tag_audit_file.h); empty: the
  // server log alone.
  std::string tag_audit_log;
  // A business tag's period warns once its numbers pass this fraction of
  // its template's width.
  double business_width_warning = 0.8;
  // How often a node reads every tag's settings from the store (a change
  // made on another node reaches this one within it).
  std::chrono::milliseconds tag_refresh{1000};
};

// The rows after segment_store, in table order; they apply unless segment
// mode is off.
OptionRows<SegmentConfig> segment_rows();

}  // namespace snowid::server
