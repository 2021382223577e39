// Business ID templates (include/snowid/ext/business_format.h): parsing,
// rendering and reading back.
//
// parse() turns the template into a vector of elements once: literal runs
// (merged, their bytes in one string), fixed-width date and time fields,
// the number and a check field. render() walks that vector into a buffer on
// the stack and appends it to the caller's string in one call: digits are
// written by hand, two at a time, never through fmt.
//
// The no-repeat invariant rests on the widths, so parse() enforces them:
// every element but an unpadded {seq} has a fixed width in bytes, there is
// exactly one {seq}, and a period's date digits (yyyy or yy, MM, dd) are all
// shown, so a string splits into (date digits, number) one way only and the
// period label is those date digits. Time of day (HH, mm, ss) is decoration
// of a day's strings: it may only follow dd, where it cannot make two
// (label, number) pairs look alike.
#include "snowid/ext/business_format.h"

#include <absl/time/civil_time.h>
#include <absl/time/time.h>
#include <fmt/format.h>

#include <array>
#include <cassert>
#include <cstring>
#include <limits>

#include "epoch_zone.h"

namespace snowid {

struct BusinessFormat::Zone {
  absl::TimeZone rules;
};

namespace {

constexpr std::size_t kUnpaddedSeqMaxDigits = 19;  // INT64_MAX

// "00".."99": two digits per table lookup.
constexpr std::array<char, 200> kDigitPairs = [] {
  std::array<char, 200> pairs{};
  for (int i = 0; i < 100; ++i) {
    pairs[static_cast<std::size_t>(2 * i)] = static_cast<char>('0' + i / 10);
    pairs[static_cast<std::size_t>(2 * i + 1)] = static_cast<char>('0' + i % 10);
  }
  return pairs;
}();

// Writes the low `width` decimal digits of `value` at `at`.
inline void put_fixed(char* at, std::uint64_t value, int width) {
  int i = width;
  while (i >= 2) {
    std::memcpy(at + i - 2, &kDigitPairs[2 * (value % 100)], 2);
    value /= 100;
    i -= 2;
  }
  if (i == 1) at[0] = static_cast<char>('0' + value % 10);
}

// Writes `value` without leading zeros at `at`; returns the digit count.
inline std::size_t put_unpadded(char* at, std::uint64_t value) {
  char reversed[20];
  std::size_t count = 0;
  do {
    reversed[count++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  for (std::size_t i = 0; i < count; ++i) at[i] = reversed[count - 1 - i];
  return count;
}

// A field's value as the digits it renders: the last `modulus` of it,
// never negative, so that a year past 9999 still fills exactly four digits.
inline std::uint64_t wrap(int value, int modulus) {
  return static_cast<std::uint64_t>(((value % modulus) + modulus) % modulus);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The Luhn check digit of the digits in `text` (other bytes skipped).
char luhn_digit(const char* text, std::size_t size) {
  int sum = 0;
  bool doubled = true;  // the rightmost digit before the check digit is doubled
  for (std::size_t i = size; i-- > 0;) {
    if (!is_digit(text[i])) continue;
    int digit = text[i] - '0';
    if (doubled) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
    sum += digit;
    doubled = !doubled;
  }
  return static_cast<char>('0' + (10 - sum % 10) % 10);
}

// The ISO 7064 MOD 97-10 check digits of the digits in `text`, as IBAN's:
// 98 - (n * 100 mod 97), written to `at` as two digits.
void put_mod97(const char* text, std::size_t size, char* at) {
  int remainder = 0;
  for (std::size_t i = 0; i < size; ++i) {
    if (is_digit(text[i])) remainder = (remainder * 10 + (text[i] - '0')) % 97;
  }
  put_fixed(at, static_cast<std::uint64_t>(98 - remainder * 100 % 97), 2);
}

// The bytes of the UTF-8 sequence a lead byte opens; 0 for no lead byte.
std::size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

// The byte position of the first control character or invalid UTF-8
// sequence (overlong, surrogate, beyond U+10FFFF) in `text`, if any, and
// what is wrong there.
Status check_template_bytes(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 || byte == 0x7f) {
      return invalid_argument(
          fmt::format("template: control character 0x{:02x} at byte {}", byte, i));
    }
    std::size_t length = utf8_length(byte);
    std::uint32_t code = length == 1 ? byte : byte & (0x7fu >> length);
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u;
      if ((next & 0xc0u) != 0x80u) length = 0;
      code = (code << 6) | (next & 0x3fu);
    }
    const bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
    if (length == 0 || overlong || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) {
      return invalid_argument(fmt::format("template: invalid UTF-8 at byte {}", i));
    }
    if (code >= 0x80 && code <= 0x9f) {
      return invalid_argument(
          fmt::format("template: control character U+{:04X} at byte {}", code, i));
    }
    i += length;
  }
  return {};
}

// "+08:00", "-05:30": a fixed offset of at most 18 hours, as java.time's.
bool parse_fixed_offset(std::string_view zone, int& seconds) {
  if (zone.size() != 6 || (zone[0] != '+' && zone[0] != '-') || zone[3] != ':' ||
      !is_digit(zone[1]) || !is_digit(zone[2]) || !is_digit(zone[4]) || !is_digit(zone[5])) {
    return false;
  }
  const int hours = (zone[1] - '0') * 10 + (zone[2] - '0');
  const int minutes = (zone[4] - '0') * 10 + (zone[5] - '0');
  if (minutes > 59 || hours * 60 + minutes > 18 * 60) return false;
  seconds = (zone[0] == '-' ? -1 : 1) * (hours * 3600 + minutes * 60);
  return true;
}

Result<absl::TimeZone> load_business_zone(std::string_view zone) {
  int offset = 0;
  if (parse_fixed_offset(zone, offset)) return absl::FixedTimeZone(offset);
  if (zone.empty() || zone[0] == '+' || zone[0] == '-') {
    return invalid_argument(fmt::format(
        "zone: unknown time zone '{}': give UTC, a tz database name (Asia/Shanghai) or a fixed "
        "offset of at most 18 hours (+08:00, -05:30)",
        zone.substr(0, 64)));
  }
  if (Status known = check_time_zone(zone); !known.ok()) {
    return invalid_argument("zone: " + known.error().message);
  }
  absl::TimeZone rules;
  if (!absl::LoadTimeZone(std::string(zone), &rules)) {
    return invalid_argument(fmt::format("zone: unknown time zone '{}'", zone.substr(0, 64)));
  }
  return rules;
}

int days_in_month(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

}  // namespace

// Reads a template into a BusinessFormat's elements, checking as it goes;
// finish() checks what needs the whole template.
class BusinessTemplateParser {
 public:
  explicit BusinessTemplateParser(BusinessFormat& format) : format_(format) {}

  Status parse(std::string_view text) {
    std::size_t i = 0;
    while (i < text.size()) {
      const char c = text[i];
      if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
        add_literal(text.substr(i, 1));
        i += 2;
      } else if (c == '}') {
        return invalid_argument(
            fmt::format("template: lone '}}' at byte {} (write '}}}}' for a literal '}}')", i));
      } else if (c == '{') {
        const std::size_t close = text.find('}', i);
        if (close == std::string_view::npos) {
          return invalid_argument(fmt::format(
              "template: unclosed '{{' at byte {} (write '{{{{' for a literal '{{')", i));
        }
        if (Status field = parse_field(text.substr(i + 1, close - i - 1), i); !field.ok()) {
          return field;
        }
        i = close + 1;
      } else {
        add_literal(text.substr(i, 1));
        ++i;
      }
    }
    return finish();
  }

 private:
  using Kind = BusinessFormat::Kind;

  void add_literal(std::string_view bytes) {
    auto& elements = format_.elements_;
    if (elements.empty() || elements.back().kind != Kind::kLiteral) {
      elements.push_back(
          {Kind::kLiteral, 0, static_cast<std::uint16_t>(format_.literals_.size()), 0});
    }
    format_.literals_.append(bytes);
    elements.back().size = static_cast<std::uint16_t>(elements.back().size + bytes.size());
    elements.back().width = static_cast<std::uint8_t>(elements.back().size);
  }

  void add_field(Kind kind, int width) {
    format_.elements_.push_back({kind, static_cast<std::uint8_t>(width), 0, 0});
  }

  Status parse_field(std::string_view content, std::size_t at) {
    if (content == "seq" || content.substr(0, 4) == "seq:") return parse_seq(content, at);
    if (content == "luhn" || content == "mod97") {
      if (seq_count_ == 0) {
        return invalid_argument(fmt::format(
            "template: {{{}}} at byte {} comes before {{seq}}: a check field follows the number",
            content, at));
      }
      if (has_check_) {
        return invalid_argument(fmt::format(
            "template: a second check field {{{}}} at byte {}: at most one", content, at));
      }
      has_check_ = true;
      add_field(content == "luhn" ? Kind::kLuhn : Kind::kMod97, content == "luhn" ? 1 : 2);
      return {};
    }
    return parse_date_group(content, at);
  }

  Status parse_seq(std::string_view content, std::size_t at) {
    if (++seq_count_ > 1) {
      return invalid_argument(fmt::format(
          "template: ambiguous: a second {{seq}} at byte {}; a template has exactly one", at));
    }
    int width = 0;
    if (content.size() > 4) {
      const std::string_view digits = content.substr(4);
      for (const char c : digits) {
        if (!is_digit(c)) {
          return invalid_argument(
              fmt::format("template: {{{}}} at byte {}: the width is not a number", content, at));
        }
        width = digits.size() > 3 ? 1000 : width * 10 + (c - '0');
      }
      if (width > kMaxBusinessSeqWidth) {
        return invalid_argument(fmt::format("template: {{{}}} at byte {}: width beyond {} digits",
                                            content, at, kMaxBusinessSeqWidth));
      }
      if (width == 0) {
        return invalid_argument(
            fmt::format("template: {{{}}} at byte {}: width 0; give 1 to {}, or {{seq}} unpadded",
                        content, at, kMaxBusinessSeqWidth));
      }
    } else if (content.size() == 4) {
      return invalid_argument(
          fmt::format("template: {{seq:}} at byte {}: the width is missing", at));
    }
    format_.seq_width_ = width;
    add_field(Kind::kSeq, width);
    return {};
  }

  // One date and time token: its kind, or kLiteral if the run is no token.
  static Kind date_token(char letter, std::size_t run) {
    if (letter == 'y') return run == 4 ? Kind::kYear4 : run == 2 ? Kind::kYear2 : Kind::kLiteral;
    if (run != 2) return Kind::kLiteral;
    switch (letter) {
      case 'M':
        return Kind::kMonth;
      case 'd':
        return Kind::kDay;
      case 'H':
        return Kind::kHour;
      case 'm':
        return Kind::kMinute;
      case 's':
        return Kind::kSecond;
      default:
        return Kind::kLiteral;
    }
  }

  Status parse_date_group(std::string_view content, std::size_t at) {
    constexpr std::string_view kLetters = "yMdHms";
    constexpr std::string_view kSeparators = "-/.:_ ";
    const bool known_alphabet =
        !content.empty() && content.find_first_not_of("yMdHms-/.:_ ") == std::string_view::npos &&
        content.find_first_of(kLetters) != std::string_view::npos;
    if (!known_alphabet) {
      return invalid_argument(fmt::format("template: unknown field '{}' at byte {}", content, at));
    }
    std::size_t i = 0;
    while (i < content.size()) {
      if (kSeparators.find(content[i]) != std::string_view::npos) {
        add_literal(content.substr(i, 1));
        ++i;
        continue;
      }
      const std::size_t end = std::min(content.find_first_not_of(content[i], i), content.size());
      const std::string_view run = content.substr(i, end - i);
      const Kind kind = date_token(content[i], run.size());
      if (kind == Kind::kLiteral) {
        return invalid_argument(
            fmt::format("template: unknown field '{}' in '{{{}}}' at byte {}", run, content, at));
      }
      const int unit = BusinessFormat::date_unit(kind);
      if (seen_[static_cast<std::size_t>(unit)]) {
        return invalid_argument(fmt::format("template: the {} field '{}' at byte {} appears twice",
                                            kUnitNames[unit], run, at));
      }
      seen_[static_cast<std::size_t>(unit)] = true;
      format_.has_year4_ = format_.has_year4_ || kind == Kind::kYear4;
      add_field(kind, static_cast<int>(run.size()));
      i = end;
    }
    return {};
  }

  Status finish() {
    if (seq_count_ == 0) {
      return invalid_argument("template: no {seq}: a template has exactly one number field");
    }
    const bool year = seen_[0], month = seen_[1], day = seen_[2];
    if (day && !month) {
      return invalid_argument("template: ambiguous: dd without MM repeats every month");
    }
    if (month && !year) {
      return invalid_argument(
          "template: ambiguous: MM without a year (yyyy or yy) repeats "
          "every year");
    }
    if (!day && (seen_[3] || seen_[4] || seen_[5])) {
      return invalid_argument(
          "template: HH, mm and ss need dd (with MM and a year): numbers "
          "restart each day at most, and the time of day only decorates");
    }
    format_.period_ = day     ? BusinessPeriod::kDay
                      : month ? BusinessPeriod::kMonth
                      : year  ? BusinessPeriod::kYear
                              : BusinessPeriod::kNone;
    std::size_t longest = 0;
    for (const auto& element : format_.elements_) {
      longest +=
          element.kind == Kind::kSeq && element.width == 0 ? kUnpaddedSeqMaxDigits : element.width;
    }
    if (longest > kMaxBusinessIdBytes) {
      return invalid_argument(fmt::format("template: renders up to {} bytes, more than {}", longest,
                                          kMaxBusinessIdBytes));
    }
    return {};
  }

  static constexpr const char* kUnitNames[] = {"year", "month", "day", "hour", "minute", "second"};
  BusinessFormat& format_;
  int seq_count_ = 0;
  bool has_check_ = false;
  std::array<bool, 6> seen_{};  // year, month, day, hour, minute, second
};

Result<BusinessFormat> BusinessFormat::parse(std::string_view template_text,
                                             std::string_view zone) {
  if (template_text.size() > kMaxBusinessTemplateBytes) {
    return invalid_argument(fmt::format("template: {} bytes, more than {}", template_text.size(),
                                        kMaxBusinessTemplateBytes));
  }
  if (Status bytes = check_template_bytes(template_text); !bytes.ok()) return bytes.error();
  auto rules = load_business_zone(zone);
  if (!rules.ok()) return rules.error();
  BusinessFormat format;
  format.text_ = std::string(template_text);
  format.zone_ = std::string(zone);
  format.zone_rules_ = std::make_shared<const Zone>(Zone{*rules});
  BusinessTemplateParser parser(format);
  if (Status parsed = parser.parse(template_text); !parsed.ok()) return parsed.error();
  return format;
}

int BusinessFormat::date_unit(Kind kind) {
  if (kind == Kind::kYear4 || kind == Kind::kYear2) return 0;
  return 1 + static_cast<int>(kind) - static_cast<int>(Kind::kMonth);
}

std::int64_t BusinessFormat::max_number() const {
  if (seq_width_ == 0) return std::numeric_limits<std::int64_t>::max();
  std::int64_t max = 1;
  for (int i = 0; i < seq_width_; ++i) max *= 10;
  return max - 1;
}

CivilTime BusinessFormat::civil_time(std::chrono::milliseconds unix_time) const {
  const absl::CivilSecond civil =
      absl::ToCivilSecond(absl::FromUnixMillis(unix_time.count()), zone_rules_->rules);
  return CivilTime{static_cast<int>(civil.year()),
                   civil.month(),
                   civil.day(),
                   civil.hour(),
                   civil.minute(),
                   civil.second()};
}

std::string BusinessFormat::period_label(const CivilTime& at) const {
  char label[8];
  std::size_t size = 0;
  if (period_ != BusinessPeriod::kNone) {
    const int year_digits = has_year4_ ? 4 : 2;
    put_fixed(label, wrap(at.year, has_year4_ ? 10000 : 100), year_digits);
    size = static_cast<std::size_t>(year_digits);
  }
  if (period_ == BusinessPeriod::kMonth || period_ == BusinessPeriod::kDay) {
    put_fixed(label + size, wrap(at.month, 100), 2);
    size += 2;
  }
  if (period_ == BusinessPeriod::kDay) {
    put_fixed(label + size, wrap(at.day, 100), 2);
    size += 2;
  }
  return std::string(label, size);
}

void BusinessFormat::render(const CivilTime& at, std::int64_t number, std::string& out) const {
  assert(number >= 1 && number <= max_number());
  char text[kMaxBusinessIdBytes + 8];  // +8: an out-of-contract number still fits
  const int fields[] = {at.year, at.month, at.day, at.hour, at.minute, at.second};
  std::size_t size = 0;
  for (const Element& element : elements_) {
    switch (element.kind) {
      case Kind::kLiteral:
        std::memcpy(text + size, literals_.data() + element.offset, element.size);
        break;
      case Kind::kSeq:
        if (element.width == 0) {
          size += put_unpadded(text + size, static_cast<std::uint64_t>(number));
          continue;
        }
        put_fixed(text + size, static_cast<std::uint64_t>(number), element.width);
        break;
      case Kind::kLuhn:
        text[size] = luhn_digit(text, size);
        break;
      case Kind::kMod97:
        put_mod97(text, size, text + size);
        break;
      default:  // a date or time field: the last 4 (yyyy) or 2 digits of its value
        put_fixed(text + size,
                  wrap(fields[date_unit(element.kind)], element.width == 4 ? 10000 : 100),
                  element.width);
        break;
    }
    size += element.width;
  }
  out.append(text, size);
}

bool BusinessFormat::can_render(std::string_view id) const {
  std::size_t fixed = 0;
  for (const Element& element : elements_) fixed += element.kind == Kind::kSeq ? 0 : element.width;
  if (id.size() < fixed) return false;
  const std::size_t seq_digits =
      seq_width_ != 0 ? static_cast<std::size_t>(seq_width_) : id.size() - fixed;
  if (fixed + seq_digits != id.size() || seq_digits == 0 || seq_digits > kUnpaddedSeqMaxDigits) {
    return false;
  }
  std::array<int, 7> values{2000, 1, 1, 0, 0, 0, 0};  // year, month, ..., second, unused
  std::uint64_t number = 0;
  std::size_t at = 0;
  for (const Element& element : elements_) {
    const std::size_t width = element.kind == Kind::kSeq ? seq_digits : element.width;
    const std::string_view part = id.substr(at, width);
    at += width;
    if (element.kind == Kind::kLiteral || element.kind == Kind::kLuhn ||
        element.kind == Kind::kMod97) {
      continue;  // checked by rendering again below
    }
    std::uint64_t value = 0;
    for (const char c : part) {
      if (!is_digit(c) || value > (std::numeric_limits<std::uint64_t>::max() - 9) / 10) {
        return false;
      }
      value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (element.kind == Kind::kSeq) {
      if (element.width == 0 && part[0] == '0') return false;
      number = value;
    } else {
      const int unit = date_unit(element.kind);
      values[static_cast<std::size_t>(unit)] =
          static_cast<int>(value) + (element.kind == Kind::kYear2 ? 2000 : 0);
    }
  }
  if (number < 1 || number > static_cast<std::uint64_t>(max_number())) return false;
  const CivilTime time{values[0], values[1], values[2], values[3], values[4], values[5]};
  if (time.month < 1 || time.month > 12 || time.day < 1 ||
      time.day > days_in_month(time.year, time.month) || time.hour > 23 || time.minute > 59 ||
      time.second > 59) {
    return false;
  }
  // A reading the zone skips (clocks put forward) is no time of the zone.
  const absl::CivilSecond civil(time.year, time.month, time.day, time.hour, time.minute,
                                time.second);
  const absl::TimeZone::TimeInfo info = zone_rules_->rules.At(civil);
  if (info.kind == absl::TimeZone::TimeInfo::SKIPPED) return false;
  std::string again;
  render(time, static_cast<std::int64_t>(number), again);
  return again == id;
}

}  // namespace snowid
