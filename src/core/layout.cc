// Presets, validation and derived facts of ID layouts.
#include "snowid/layout.h"

#include <fmt/format.h>

#include <array>

#include "bit_fields.h"
#include "time_text.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;

struct NamedLayout {
  std::string_view name;
  Layout layout;
};

// Epochs in Unix ms, every one in UTC. Sonyflake: 2014-09-01T00:00:00Z.
// Baidu uid-generator's default epochStr "2016-05-20", taken as UTC:
// uid-generator itself reads it in the JVM's default zone, which an epoch
// zone (src/common/epoch_zone.h, --epoch-zone) reproduces.
// js-safe: 2024-01-01T00:00:00Z.
const std::array<NamedLayout, 5>& presets() {
  static const std::array<NamedLayout, 5> kPresets{{
      {"twitter", Layout{41, 5, 5, 12, milliseconds{1}, milliseconds{1288834974657},
                         SequencePosition::kLow}},
      {"discord", Layout{41, 5, 5, 12, milliseconds{1}, milliseconds{1420070400000},
                         SequencePosition::kLow}},
      {"sonyflake", Layout{39, 0, 16, 8, milliseconds{10}, milliseconds{1409529600000},
                           SequencePosition::kHigh}},
      {"baidu", Layout{28, 0, 22, 13, milliseconds{1000}, milliseconds{1463702400000},
                       SequencePosition::kLow}},
      // 53 bits in all, so every ID is a safe JavaScript integer (below 2^53)
      // until 2093; the price is 8 nodes and 512 IDs per ms per node.
      {"js-safe", Layout{41, 0, 3, 9, milliseconds{1}, milliseconds{1704067200000},
                         SequencePosition::kLow}},
  }};
  return kPresets;
}

}  // namespace

const std::vector<std::string_view>& preset_names() {
  static const std::vector<std::string_view> kNames = [] {
    std::vector<std::string_view> names;
    for (const auto& p : presets()) names.push_back(p.name);
    return names;
  }();
  return kNames;
}

Result<Layout> preset(std::string_view name) {
  for (const auto& p : presets()) {
    if (p.name == name) return p.layout;
  }
  return invalid_argument(fmt::format("unknown preset '{}'; known presets: {}", name,
                                      fmt::join(preset_names(), ", ")));
}

Result<Layout> resolve(const LayoutSpec& spec) {
  auto base = preset(spec.preset);
  if (!base.ok()) return base.error();
  Layout layout = *base;
  if (spec.timestamp_bits) layout.timestamp_bits = *spec.timestamp_bits;
  if (spec.datacenter_bits) layout.datacenter_bits = *spec.datacenter_bits;
  if (spec.worker_bits) layout.worker_bits = *spec.worker_bits;
  if (spec.sequence_bits) layout.sequence_bits = *spec.sequence_bits;
  if (spec.time_unit) layout.time_unit = *spec.time_unit;
  if (spec.epoch) layout.epoch = *spec.epoch;
  if (spec.sequence_position) layout.sequence_position = *spec.sequence_position;
  Status valid = validate(layout);
  if (!valid.ok()) return valid.error();
  return layout;
}

const char* sequence_position_name(SequencePosition position) {
  return position == SequencePosition::kLow ? "low" : "high";
}

Result<SequencePosition> parse_sequence_position(std::string_view name) {
  if (name == "low") return SequencePosition::kLow;
  if (name == "high") return SequencePosition::kHigh;
  return invalid_argument(
      fmt::format("unknown sequence position '{}'; expected low or high", name));
}

Status validate(const Layout& layout) {
  auto field_range = [](const char* field, int bits, int low) -> Status {
    if (bits < low || bits > kMaxLayoutBits) {
      return invalid_argument(
          fmt::format("{} bits must be between {} and {}, got {}", field, low, kMaxLayoutBits,
                      bits));
    }
    return {};
  };
  for (const Status& s : {field_range("timestamp", layout.timestamp_bits, 1),
                          field_range("datacenter", layout.datacenter_bits, 0),
                          field_range("worker", layout.worker_bits, 0),
                          field_range("sequence", layout.sequence_bits, 1)}) {
    if (!s.ok()) return s;
  }
  const int total =
      layout.timestamp_bits + layout.datacenter_bits + layout.worker_bits + layout.sequence_bits;
  if (total > kMaxLayoutBits) {
    return invalid_argument(fmt::format(
        "layout has {} bits (timestamp {} + datacenter {} + worker {} + sequence {}); at most "
        "{} fit a signed 64-bit integer",
        total, layout.timestamp_bits, layout.datacenter_bits, layout.worker_bits,
        layout.sequence_bits, kMaxLayoutBits));
  }
  const auto unit = layout.time_unit.count();
  if (unit < 1 || unit > 86'400'000) {
    return invalid_argument(
        fmt::format("time unit must be between 1 and 86400000 ms, got {}", unit));
  }
  if (layout.epoch.count() < 0) {
    return invalid_argument(
        fmt::format("epoch must not be before 1970-01-01, got {} ms", layout.epoch.count()));
  }
  // The last moment must be printable as an ISO 8601 date: before the year 10000.
  constexpr std::uint64_t kYear10000 = 253'402'300'800'000;  // Unix ms of 10000-01-01
  const auto epoch = static_cast<std::uint64_t>(layout.epoch.count());
  const std::uint64_t units = internal::low_mask(layout.timestamp_bits);
  if (epoch >= kYear10000 ||
      units >= (kYear10000 - epoch) / static_cast<std::uint64_t>(unit)) {
    return invalid_argument(fmt::format(
        "a {}-bit timestamp of {} ms units from epoch {} ms runs past the year 9999; use fewer "
        "bits, a shorter unit or an earlier epoch",
        layout.timestamp_bits, unit, layout.epoch.count()));
  }
  return {};
}

std::string describe(const Layout& layout) {
  return fmt::format("{}/{}/{}/{} unit={}ms epoch={} seq={}", layout.timestamp_bits,
                     layout.datacenter_bits, layout.worker_bits, layout.sequence_bits,
                     layout.time_unit.count(), format_time(layout.epoch),
                     sequence_position_name(layout.sequence_position));
}

FieldShifts field_shifts(const Layout& layout) {
  const internal::BitFields f = internal::bit_fields(layout);
  return FieldShifts{f.timestamp_shift, f.datacenter_shift, f.worker_shift, f.sequence_shift};
}

LayoutFacts layout_facts(const Layout& layout, milliseconds now_unix) {
  const auto fields = internal::bit_fields(layout);
  LayoutFacts facts;
  facts.total_bits = fields.total_bits;
  facts.max_datacenter_id = fields.datacenter_mask;
  facts.max_worker_id = fields.worker_mask;
  facts.ids_per_unit = fields.sequence_mask + 1;
  facts.ids_per_second = static_cast<double>(facts.ids_per_unit) * 1000.0 /
                         static_cast<double>(layout.time_unit.count());
  facts.max_timestamp_units = fields.timestamp_mask;
  facts.overflow_at =
      layout.epoch + layout.time_unit * static_cast<std::int64_t>(fields.timestamp_mask + 1);
  facts.max_id = static_cast<std::int64_t>(internal::low_mask(fields.total_bits));

  constexpr milliseconds kFiveYears{5LL * 36525 * 86'400'000 / 100};
  if (facts.overflow_at <= now_unix) {
    facts.warning = fmt::format(
        "the timestamp field overflowed on {}: this layout can no longer issue IDs",
        format_time(facts.overflow_at));
  } else if (facts.overflow_at - now_unix < kFiveYears) {
    facts.warning = fmt::format("the timestamp field overflows on {}, in {} days",
                                format_time(facts.overflow_at),
                                (facts.overflow_at - now_unix).count() / 86'400'000);
  }
  return facts;
}

Status usable_at(const Layout& layout, milliseconds now_unix) {
  if (layout.epoch > now_unix) {
    return invalid_argument(fmt::format(
        "the layout's epoch {} lies in the future (the clock reads {}): no ID can be issued "
        "before it; choose an epoch in the past",
        format_time(layout.epoch), format_time(now_unix)));
  }
  const LayoutFacts facts = layout_facts(layout, now_unix);
  if (facts.overflow_at <= now_unix) return invalid_argument(*facts.warning);
  return {};
}

}  // namespace snowid
