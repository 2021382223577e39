// Decoding the %XX escapes of URLs: HTTP query parameters and the parts of a
// database URL. The one percent-decoder of snowid; header-only, no state, safe
// from any thread.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>

namespace snowid {

namespace percent_detail {

// The byte that the escape "%XX" starting at text[at] stands for; nullopt if
// text[at] is not '%' or is not followed by two hexadecimal digits.
inline std::optional<char> escaped_byte(std::string_view text, std::size_t at) {
  if (text[at] != '%' || text.size() - at < 3) return std::nullopt;
  unsigned char byte = 0;
  const char *digits = text.data() + at + 1;
  if (std::from_chars(digits, digits + 2, byte, 16).ptr != digits + 2) return std::nullopt;
  return static_cast<char>(byte);
}

}  // namespace percent_detail

// `text` with its %XX escapes decoded (either case of hex digit); nullopt if
// a '%' is not followed by two hexadecimal digits.
inline std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    const std::optional<char> byte = percent_detail::escaped_byte(text, i);
    if (!byte) return std::nullopt;
    out += *byte;
    i += 2;
  }
  return out;
}

// `text` with its well-formed %XX escapes decoded and any other '%' kept as
// it is, as libpq reads a URL's parameter names. Never fails.
inline std::string percent_decode_lenient(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (const std::optional<char> byte = percent_detail::escaped_byte(text, i)) {
      out += *byte;
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace snowid
