// The segment tag rule (see snowid/segment_tag.h). It runs on every request
// for a tag's numbers, so it is one pass over the bytes without allocation
// while the tag is good; only a refusal builds a message.
#include "snowid/segment_tag.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace snowid {
namespace {

// The length of the UTF-8 sequence starting at text[at] and its code point,
// or 0 if the bytes there are not well-formed UTF-8 (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence(std::string_view text, std::size_t at, char32_t& code_point) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) {
    code_point = lead;
    return 1;
  }
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (text.size() - at < length || byte(1) < low || byte(1) > high) return 0;
  code_point = static_cast<char32_t>(lead & (0x7f >> length));
  for (std::size_t i = 1; i < length; ++i) {
    if (i > 1 && (byte(i) < 0x80 || byte(i) > 0xbf)) return 0;
    code_point = code_point << 6 | static_cast<char32_t>(byte(i) & 0x3f);
  }
  return length;
}

bool control_character(char32_t c) { return c < 0x20 || (c >= 0x7f && c <= 0x9f); }

// Why `text` breaks the characters' rule (well-formed UTF-8, no control
// character, at most kMaxSegmentTagCharacters of them), or "" if it keeps it.
std::string characters_refusal(std::string_view text) {
  std::size_t characters = 0;
  for (std::size_t at = 0; at < text.size(); ++characters) {
    char32_t code_point = 0;
    const std::size_t length = utf8_sequence(text, at, code_point);
    if (length == 0) return fmt::format("byte {} is not well-formed UTF-8", at + 1);
    if (control_character(code_point)) {
      return fmt::format("character {} is a control character", characters + 1);
    }
    at += length;
  }
  if (characters > kMaxSegmentTagCharacters) {
    return fmt::format("it is {} characters long", characters);
  }
  return "";
}

// `text` in printable ASCII ('?' for other bytes), cut short.
std::string shown_in_ascii(std::string_view text) {
  std::string out(text.substr(0, 4 * kMaxSegmentTagCharacters + 1));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return out;
}

Status refuse(std::string_view tag, std::string_view why) {
  return invalid_argument(
      fmt::format("bad segment tag '{}': {}; a tag is 1 to {} characters of UTF-8 without control "
                  "characters, not starting with '#'",
                  shown_in_ascii(tag), why, kMaxSegmentTagCharacters));
}

}  // namespace

Status validate_segment_tag(std::string_view tag) {
  if (tag.empty()) return refuse(tag, "it is empty");
  if (tag.front() == '#') return refuse(tag, "'#' first is kept for snowid's own rows");
  if (std::string why = characters_refusal(tag); !why.empty()) return refuse(tag, why);
  return {};
}

Status validate_own_row_key(std::string_view key) {
  std::string why = key.starts_with('#') ? characters_refusal(key) : "it does not start with '#'";
  if (why.empty()) return {};
  return invalid_argument(
      fmt::format("bad key of snowid's own row '{}': {}; such a key is '#' and then at most {} "
                  "more characters of UTF-8 without control characters",
                  shown_in_ascii(key), why, kMaxSegmentTagCharacters - 1));
}

}  // namespace snowid
