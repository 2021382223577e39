// The printing and parsing of times as ISO 8601 text.
#include "time_text.h"

#include <fmt/format.h>

#include <limits>

#include "input_text.h"
#include "snowid/decode.h"

namespace snowid {

using internal::all_digits;
using internal::shown;
using std::chrono::milliseconds;

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
    auto ms = parse_unsigned(
        text, static_cast<std::uint64_t>(std::numeric_limits<long long>::max()), "time");
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

bool time_text_names_zone(std::string_view text) {
  if (all_digits(text)) return true;
  // "YYYY-MM-DD" then, if anything, 'T' or ' ' and the time: only a zone
  // designator puts a 'Z', '+' or '-' after the date.
  const std::string_view time = text.size() > 10 ? text.substr(10) : std::string_view{};
  return time.find_first_of("Z+-") != std::string_view::npos;
}

std::string format_wall_time(milliseconds unix_time) {
  std::string text = format_time(unix_time);
  if (!text.empty() && text.back() == 'Z') text.pop_back();
  return text;
}

}  // namespace snowid
