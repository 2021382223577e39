// Whether a tag's template may change while nodes still serve the old one
// (check_business_template_change, include/snowid/ext/business_format.h).
//
// During a change both templates render at once, over the same counters
// (one per period label), so a change is safe only if no string of the new
// template can equal one of the old for a different (label, number). Three
// cases are provably safe: the same template (a zone change moves which
// label a moment falls in, never the strings of a label); the same template
// but for the {seq} width (a string splits the same way in both, and the
// digits of {seq} name one number whatever their padding); and disjoint
// strings, shown position by position over the fixed-width start and end
// of both templates, or by their lengths. Anything else is refused, with
// a string both can render when a small search finds one.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "snowid/ext/business_format.h"

namespace snowid {
namespace {

// A byte position of a template's strings: a byte (0-255) every string
// has there, or any digit.
constexpr int kAnyDigit = -1;

struct TemplateShape {
  std::vector<int> prefix;  // from the start up to the first element of variable width
  std::vector<int> suffix;  // after it; the whole template when all is fixed width
  bool fixed_width = true;
  std::size_t min_size = 0;  // bytes of the shortest string
  std::size_t max_size = 0;  // and of the longest
};

bool is_ascii_digit(int byte) { return byte >= '0' && byte <= '9'; }

// Whether no byte can stand at a position of classes `a` and `b` at once.
bool classes_exclude(int a, int b) {
  if (a == kAnyDigit && b == kAnyDigit) return false;
  if (a == kAnyDigit) return !is_ascii_digit(b);
  if (b == kAnyDigit) return !is_ascii_digit(a);
  return a != b;
}

bool shapes_disjoint(const TemplateShape& a, const TemplateShape& b) {
  if (a.max_size < b.min_size || b.max_size < a.min_size) return true;
  const std::size_t prefix = std::min(a.prefix.size(), b.prefix.size());
  for (std::size_t i = 0; i < prefix; ++i) {
    if (classes_exclude(a.prefix[i], b.prefix[i])) return true;
  }
  const std::size_t suffix = std::min(a.suffix.size(), b.suffix.size());
  for (std::size_t i = 1; i <= suffix; ++i) {
    if (classes_exclude(a.suffix[a.suffix.size() - i], b.suffix[b.suffix.size() - i])) {
      return true;
    }
  }
  return false;
}

// A string `from` renders that `to` can render too, among a few times and
// numbers (small ones, and around each power of ten).
std::optional<std::string> string_both_render(const BusinessFormat& from,
                                              const BusinessFormat& to) {
  static constexpr std::array<CivilTime, 3> kTimes{
      {{2026, 12, 2, 10, 0, 0}, {2026, 1, 1, 0, 0, 0}, {2031, 11, 30, 23, 59, 59}}};
  std::vector<std::int64_t> numbers;
  for (std::int64_t n = 1; n <= 100; ++n) numbers.push_back(n);
  for (std::int64_t power = 100;; power *= 10) {
    numbers.insert(numbers.end(), {power - 1, power, power + 1});
    if (power == 1'000'000'000'000'000'000) break;  // 10^18: the next would overflow
  }
  std::string text;
  for (const CivilTime& at : kTimes) {
    for (const std::int64_t number : numbers) {
      if (number > from.max_number()) break;
      text.clear();
      from.render(at, number, text);
      if (to.can_render(text)) return text;
    }
  }
  return std::nullopt;
}

}  // namespace

Status check_business_template_change(const BusinessFormat& before, const BusinessFormat& after) {
  using Kind = BusinessFormat::Kind;
  if (before.text() == after.text()) return {};

  // The same elements but for the width of {seq}.
  const auto& old_elements = before.elements_;
  const auto& new_elements = after.elements_;
  const bool seq_width_only =
      old_elements.size() == new_elements.size() &&
      std::equal(old_elements.begin(), old_elements.end(), new_elements.begin(),
                 [&](const BusinessFormat::Element& a, const BusinessFormat::Element& b) {
                   if (a.kind != b.kind) return false;
                   if (a.kind == Kind::kSeq) return true;
                   if (a.kind != Kind::kLiteral) return a.width == b.width;
                   return before.literals_.compare(a.offset, a.size, after.literals_, b.offset,
                                                   b.size) == 0;
                 });
  if (seq_width_only && before.period() == after.period()) return {};

  auto shape_of = [](const BusinessFormat& format) {
    TemplateShape shape;
    for (const BusinessFormat::Element& element : format.elements_) {
      if (element.kind == Kind::kSeq && element.width == 0) {
        shape.fixed_width = false;
        shape.prefix = std::move(shape.suffix);
        shape.suffix.clear();
        shape.min_size += 1;
        shape.max_size += 19;
        continue;
      }
      for (std::size_t i = 0; i < element.width; ++i) {
        shape.suffix.push_back(
            element.kind == Kind::kLiteral
                ? static_cast<unsigned char>(format.literals_[element.offset + i])
                : kAnyDigit);
      }
      shape.min_size += element.width;
      shape.max_size += element.width;
    }
    if (shape.fixed_width) shape.prefix = shape.suffix;
    return shape;
  };
  if (shapes_disjoint(shape_of(before), shape_of(after))) return {};

  std::optional<std::string> example = string_both_render(before, after);
  if (!example) example = string_both_render(after, before);
  if (example) {
    return invalid_argument(fmt::format(
        "'{}' and '{}' can both render {}: while nodes serve both, an ID could repeat; give the "
        "new template a fixed start or end the old one cannot render (another letter), or change "
        "only the zone or the {{seq}} width",
        before.text(), after.text(), *example));
  }
  return invalid_argument(fmt::format(
      "cannot prove that '{}' and '{}' never render the same string: no position of their "
      "fixed-width start or end tells them apart; give the new template a fixed start or end the "
      "old one cannot render (another letter), or change only the zone or the {{seq}} width",
      before.text(), after.text()));
}

}  // namespace snowid
