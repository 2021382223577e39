// Business ID templates: the strings people read ("ORD-20261202-000042")
// that a segment-mode tag may hand out instead of bare numbers.
//
// A template is literal text with fields in braces: the number ({seq} or
// {seq:NN}), date and time groups ({yyyyMMdd}, {yyyy-MM-dd}, {HHmmss}) and
// at most one check field ({luhn} or {mod97}) after the number. Numbers
// restart at 1 in each period of the template (the day if it shows dd, else
// the month if it shows MM, else the year, else never) read in its time
// zone; the caller keeps one counter per period label and hands each
// (label, number) out once.
//
// The no-repeat invariant, kept by parse(): distinct (label, number) pairs
// render distinct strings. Every element but an unpadded {seq} has a fixed
// width, so a rendered string splits into its elements one way only; the
// label is made of the date digits the string shows (a template with yy
// labels its periods with two year digits, so its counters continue, not
// restart, a century later) and the number of the digits of {seq}. A template
// for which this would not hold is refused.
//
// A BusinessFormat is an immutable value: its const methods are safe from
// any number of threads at once. This is an extension header
// (include/snowid/ext/README.md), implemented by snowid_business.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "snowid/error.h"

namespace snowid {

// The span in which a template's numbers restart at 1.
enum class BusinessPeriod { kNone, kYear, kMonth, kDay };

// A wall-clock reading in a format's zone. Fields as people write them:
// month 1-12, day 1-31, hour 0-23.
struct CivilTime {
  int year = 1970;
  int month = 1;
  int day = 1;
  int hour = 0;
  int minute = 0;
  int second = 0;
};

// The widest {seq:NN}: 18 digits, every one of which an int64 can hold.
inline constexpr int kMaxBusinessSeqWidth = 18;
// The longest template, in bytes.
inline constexpr std::size_t kMaxBusinessTemplateBytes = 160;
// The longest string a template may render, in bytes (checked by parse()
// with {seq} at its widest).
inline constexpr std::size_t kMaxBusinessIdBytes = 256;

class BusinessFormat {
 public:
  // The template `template_text` read in `zone`: "UTC", a name of the tz
  // database ("Asia/Shanghai") or a fixed offset ("+08:00", "-05:30").
  // kInvalidArgument with one message naming the field or byte position on
  // any problem, including a template whose strings could repeat.
  static Result<BusinessFormat> parse(std::string_view template_text,
                                      std::string_view zone = "UTC");

  const std::string& text() const { return text_; }
  const std::string& zone() const { return zone_; }
  BusinessPeriod period() const { return period_; }
  // The width {seq} is zero-padded to; 0 when it is not padded.
  int seq_width() const { return seq_width_; }
  // The largest number render() takes: 10^width - 1, or INT64_MAX unpadded.
  std::int64_t max_number() const;

  // The reading of `unix_time` in zone(), to the second (floored). No
  // allocation; cheap enough to call once per second or per ID.
  CivilTime civil_time(std::chrono::milliseconds unix_time) const;

  // The period `at` falls in, as the date digits the template shows: ""
  // (kNone), "2026" (year), "202612" (month), "20261202" (day); with yy
  // instead of yyyy, "26", "2612", "261202". The caller's counter key.
  std::string period_label(const CivilTime& at) const;

  // Appends the string of `number` rendered at `at` to `out`.
  // Requires: 1 <= number <= max_number(). Years render as their last four
  // (yyyy) or two (yy) digits. Hot path: no allocation but `out` growing, no
  // system call, no lock.
  void render(const CivilTime& at, std::int64_t number, std::string& out) const;

  // Whether some time and some number in 1..max_number() render `id`
  // exactly, check digits included: a string of this template.
  bool can_render(std::string_view id) const;

 private:
  enum class Kind : std::uint8_t {
    kLiteral,
    kYear4,
    kYear2,
    kMonth,
    kDay,
    kHour,
    kMinute,
    kSecond,
    kSeq,
    kLuhn,
    kMod97
  };
  // One piece of the template; a literal's bytes are literals_[offset, +size).
  struct Element {
    Kind kind;
    std::uint8_t width;  // digits of a field, bytes of a literal; 0: unpadded {seq}
    std::uint16_t offset;
    std::uint16_t size;
  };
  struct Zone;  // the zone's rules (absl::TimeZone), shared by copies

  BusinessFormat() = default;
  // A date or time field's unit: 0 year, 1 month, 2 day, 3 hour, 4 minute, 5 second.
  static int date_unit(Kind kind);
  friend class BusinessTemplateParser;
  friend Status check_business_template_change(const BusinessFormat& before,
                                               const BusinessFormat& after);

  std::string text_;
  std::string zone_;
  BusinessPeriod period_ = BusinessPeriod::kNone;
  int seq_width_ = 0;
  bool has_year4_ = false;  // yyyy, not yy: the label's year digits
  std::vector<Element> elements_;
  std::string literals_;
  std::shared_ptr<const Zone> zone_rules_;
};

// Whether a tag may change from template `before` to `after` while nodes
// still serve `before` for a moment and the counters of each period
// continue. Ok when no string of `after` can equal one of `before` for a
// different (label, number): the templates are the same (the zone alone may
// change: counters are keyed by the label), differ only in the {seq} width
// with the same period, or provably render disjoint strings (a position of
// their fixed-width prefixes or suffixes that cannot hold the same byte, or
// different lengths). kInvalidArgument saying which strings could repeat
// otherwise.
Status check_business_template_change(const BusinessFormat& before, const BusinessFormat& after);

}  // namespace snowid
