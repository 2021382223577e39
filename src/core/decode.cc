// Decode, compose, and the parsing and printing of IDs and times.
#include "snowid/decode.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "bit_fields.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;

// Input echoed in an error message is cut short so a huge argument cannot
// flood a log line.
std::string shown(std::string_view text) {
  constexpr std::size_t kMaxShown = 40;
  if (text.size() <= kMaxShown) return std::string(text);
  return std::string(text.substr(0, kMaxShown)) + "...";
}

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

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

std::string format_time(milliseconds unix_time) {
  using namespace std::chrono;
  // The calendar (and fmt's four-digit year) covers the years 0000 to 9999;
  // a value outside (a damaged or forged mark) is named as what it is.
  constexpr milliseconds kFirst{-62'167'219'200'000};  // 0000-01-01T00:00:00.000Z
  constexpr milliseconds kLast{253'402'300'799'999};   // 9999-12-31T23:59:59.999Z
  if (unix_time < kFirst || unix_time > kLast) {
    return fmt::format("Unix ms {} (outside the years 0000 to 9999)", unix_time.count());
  }
  const auto days = floor<std::chrono::days>(unix_time);
  const year_month_day date{sys_days{days}};
  const hh_mm_ss time{unix_time - days};
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", static_cast<int>(date.year()),
                     static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                     time.hours().count(), time.minutes().count(), time.seconds().count(),
                     time.subseconds().count());
}

Result<milliseconds> parse_time(std::string_view text) {
  using namespace std::chrono;
  if (all_digits(text)) {
    auto ms = parse_unsigned(text, static_cast<std::uint64_t>(std::numeric_limits<long long>::max()),
                             "time");
    if (!ms.ok()) return ms.error();
    return milliseconds{static_cast<long long>(*ms)};
  }
  const auto bad = [&](std::string_view why) {
    return invalid_argument(fmt::format(
        "time '{}' is not ISO 8601 ({}); expected e.g. 2014-09-01 or 2014-09-01T00:00:00.000Z",
        shown(text), why));
  };
  std::size_t pos = 0;
  auto number = [&](std::size_t digits, int& out) {
    if (pos + digits > text.size() || !all_digits(text.substr(pos, digits))) return false;
    out = 0;
    for (std::size_t i = 0; i < digits; ++i) out = out * 10 + (text[pos + i] - '0');
    pos += digits;
    return true;
  };
  auto literal = [&](char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  };
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, frac_ms = 0;
  if (!number(4, y) || !literal('-') || !number(2, mo) || !literal('-') || !number(2, d)) {
    return bad("date must be YYYY-MM-DD");
  }
  const year_month_day date{year{y}, month{static_cast<unsigned>(mo)},
                            day{static_cast<unsigned>(d)}};
  if (!date.ok()) return bad("no such date");
  milliseconds offset{0};
  if (pos < text.size()) {
    if (!literal('T') && !literal(' ')) return bad("expected 'T' after the date");
    if (!number(2, h) || !literal(':') || !number(2, mi)) return bad("time must be HH:MM[:SS]");
    if (literal(':') && !number(2, s)) return bad("seconds must be two digits");
    if (literal('.')) {
      int digits = 0;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        if (digits < 3) frac_ms = frac_ms * 10 + (text[pos] - '0');
        ++digits;
        ++pos;
      }
      if (digits == 0) return bad("expected digits after '.'");
      for (int i = digits; i < 3; ++i) frac_ms *= 10;
    }
    if (h > 23 || mi > 59 || s > 59) return bad("hour, minute or second out of range");
    if (literal('Z')) {
      // UTC
    } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
      const bool minus = text[pos] == '-';
      ++pos;
      int oh = 0, om = 0;
      if (!number(2, oh) || !literal(':') || !number(2, om) || oh > 23 || om > 59) {
        return bad("offset must be +HH:MM");
      }
      offset = hours{oh} + minutes{om};
      if (minus) offset = -offset;
    }
    if (pos != text.size()) return bad("unexpected text after the time");
  }
  const auto result = sys_days{date}.time_since_epoch() + hours{h} + minutes{mi} + seconds{s} +
                      milliseconds{frac_ms} - offset;
  return duration_cast<milliseconds>(result);
}

}  // namespace snowid
