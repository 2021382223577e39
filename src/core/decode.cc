// Decode, compose, and the parsing of IDs and numbers.
#include "snowid/decode.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "bit_fields.h"
#include "input_text.h"
#include "time_text.h"

namespace snowid {

using internal::all_digits;
using internal::shown;

Result<IdFields> decode(const Layout& layout, Id id) {
  const auto f = internal::bit_fields(layout);
  if (id < 0) return invalid_argument(fmt::format("ID {} is negative", id));
  const auto bits = static_cast<std::uint64_t>(id);
  if (f.total_bits < 64 && (bits >> f.total_bits) != 0) {
    return invalid_argument(
        fmt::format("ID {} has bits above the layout's {} bits", id, f.total_bits));
  }
  IdFields out;
  const auto units = static_cast<std::int64_t>((bits >> f.timestamp_shift) & f.timestamp_mask);
  out.timestamp = layout.epoch + layout.time_unit * units;
  out.datacenter = (bits >> f.datacenter_shift) & f.datacenter_mask;
  out.worker = (bits >> f.worker_shift) & f.worker_mask;
  out.sequence = (bits >> f.sequence_shift) & f.sequence_mask;
  return out;
}

Result<Id> compose(const Layout& layout, const IdFields& fields) {
  const auto f = internal::bit_fields(layout);
  if (fields.timestamp < layout.epoch) {
    return invalid_argument(fmt::format("timestamp {} ms is before the layout's epoch {} ({})",
                                        fields.timestamp.count(), layout.epoch.count(),
                                        format_time(layout.epoch)));
  }
  const auto units = static_cast<std::uint64_t>((fields.timestamp - layout.epoch).count() /
                                                layout.time_unit.count());
  if (units > f.timestamp_mask) {
    const auto last = layout.epoch + layout.time_unit * static_cast<std::int64_t>(f.timestamp_mask);
    return invalid_argument(fmt::format("timestamp {} ms is after the layout's last moment {} ({})",
                                        fields.timestamp.count(), last.count(), format_time(last)));
  }
  auto check = [](const char* name, std::uint64_t value, std::uint64_t mask) -> Status {
    if (value > mask) {
      return invalid_argument(fmt::format("{} {} is out of range 0..{}", name, value, mask));
    }
    return {};
  };
  for (const Status& s : {check("datacenter", fields.datacenter, f.datacenter_mask),
                          check("worker", fields.worker, f.worker_mask),
                          check("sequence", fields.sequence, f.sequence_mask)}) {
    if (!s.ok()) return s.error();
  }
  const std::uint64_t bits = (units << f.timestamp_shift) |
                             (fields.datacenter << f.datacenter_shift) |
                             (fields.worker << f.worker_shift) |
                             (fields.sequence << f.sequence_shift);
  return static_cast<Id>(bits);
}

Result<std::uint64_t> parse_unsigned(std::string_view text, std::uint64_t max,
                                     std::string_view what) {
  if (text.empty()) return invalid_argument(fmt::format("{} is empty", what));
  if (text.front() == '-' && all_digits(text.substr(1))) {
    return invalid_argument(fmt::format("{} {} is negative", what, shown(text)));
  }
  if (!all_digits(text)) {
    return invalid_argument(fmt::format("{} '{}' is not a decimal number", what, shown(text)));
  }
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range || value > max) {
    return invalid_argument(fmt::format("{} {} is above the maximum {}", what, shown(text), max));
  }
  if (ec != std::errc{} || end != text.data() + text.size()) {
    return invalid_argument(fmt::format("{} '{}' is not a decimal number", what, shown(text)));
  }
  return value;
}

Result<Id> parse_id(std::string_view text) {
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<Id>::max());
  auto value = parse_unsigned(text, kMax, "ID");
  if (!value.ok()) {
    if (all_digits(text)) {
      return invalid_argument(
          fmt::format("ID {} exceeds 2^63-1 ({}), the largest signed 64-bit ID", shown(text), kMax));
    }
    return value.error();
  }
  return static_cast<Id>(*value);
}

}  // namespace snowid
