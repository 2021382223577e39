// The bit layout of a snowid ID, its presets, validation and derived facts.
//
// An ID is a non-negative signed 64-bit integer. From high to low bits:
//   sign (always 0) | timestamp | datacenter | worker | sequence      (SequencePosition::kLow)
//   sign (always 0) | timestamp | sequence | datacenter | worker      (SequencePosition::kHigh)
// The timestamp counts time units since the layout's epoch. Unused high bits
// (a layout of fewer than 63 bits) are always 0, so such IDs stay below 2^bits.
//
// Layout is a plain value; all functions here are pure and thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowid/error.h"

namespace snowid {

enum class SequencePosition {
  kLow,   // sequence in the lowest bits (Twitter, Discord, Baidu)
  kHigh,  // sequence above the node fields (Sonyflake)
};

struct Layout {
  int timestamp_bits = 41;
  int datacenter_bits = 5;
  int worker_bits = 5;
  int sequence_bits = 12;
  // Length of one timestamp step: 1 ms (Twitter), 10 ms (Sonyflake), 1 s (Baidu).
  std::chrono::milliseconds time_unit{1};
  // Moment the timestamp counts from, as time since the Unix epoch.
  std::chrono::milliseconds epoch{1288834974657};
  SequencePosition sequence_position = SequencePosition::kLow;

  friend bool operator==(const Layout&, const Layout&) = default;
};

// Largest total of the four fields: one bit stays 0 so IDs fit signed 64-bit columns.
inline constexpr int kMaxLayoutBits = 63;

// Names accepted by preset(): twitter (the default), discord, sonyflake, baidu, js-safe.
const std::vector<std::string_view>& preset_names();
// The named preset, or kInvalidArgument listing the known names.
Result<Layout> preset(std::string_view name);

// Layout settings as a user gives them: a preset and optional overrides.
struct LayoutSpec {
  std::string preset = "twitter";
  std::optional<int> timestamp_bits;
  std::optional<int> datacenter_bits;
  std::optional<int> worker_bits;
  std::optional<int> sequence_bits;
  std::optional<std::chrono::milliseconds> time_unit;
  std::optional<std::chrono::milliseconds> epoch;
  std::optional<SequencePosition> sequence_position;
};

// The preset with the overrides applied, validated.
Result<Layout> resolve(const LayoutSpec& spec);

// "low" / "high".
const char* sequence_position_name(SequencePosition position);
Result<SequencePosition> parse_sequence_position(std::string_view name);

// Ok, or kInvalidArgument whose message names the offending numbers.
Status validate(const Layout& layout);

// Compact one-line form, e.g. "41/5/5/12 unit=1ms epoch=2010-11-04T01:42:54.657Z seq=low".
// Two layouts produce IDs that can be compared only if these strings are equal.
std::string describe(const Layout& layout);

// Facts that follow from a valid layout.
struct LayoutFacts {
  int total_bits = 0;
  std::uint64_t max_datacenter_id = 0;
  std::uint64_t max_worker_id = 0;
  std::uint64_t ids_per_unit = 0;            // per node: 2^sequence_bits
  double ids_per_second = 0;                 // per node
  std::uint64_t max_timestamp_units = 0;     // 2^timestamp_bits - 1
  std::chrono::milliseconds overflow_at{0};  // Unix ms of the first unrepresentable unit
  std::int64_t max_id = 0;                   // largest ID the layout can produce
  // Set when the overflow moment is past, or less than five years after `now`.
  std::optional<std::string> warning;
};

// Where each field of an ID sits: the number of bits below it.
struct FieldShifts {
  int timestamp = 0;
  int datacenter = 0;
  int worker = 0;
  int sequence = 0;
};

// Requires: validate(layout).ok().
FieldShifts field_shifts(const Layout& layout);

// Requires: validate(layout).ok().
LayoutFacts layout_facts(const Layout& layout, std::chrono::milliseconds now_unix);

// Ok if the layout can issue an ID at `now_unix`: its epoch is not in the
// future and its timestamp field has not run out. kInvalidArgument, saying
// which, otherwise: a condition known before the first ID is asked for.
// Requires: validate(layout).ok().
Status usable_at(const Layout& layout, std::chrono::milliseconds now_unix);

}  // namespace snowid
