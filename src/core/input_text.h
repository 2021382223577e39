// Small checks of text a user typed, shared by the parsers of IDs, numbers
// and times.
#pragma once

#include <string>
#include <string_view>

namespace snowid::internal {

// Input echoed in an error message is cut short so a huge argument cannot
// flood a log line.
inline std::string shown(std::string_view text) {
  constexpr std::size_t kMaxShown = 40;
  if (text.size() <= kMaxShown) return std::string(text);
  return std::string(text.substr(0, kMaxShown)) + "...";
}

// True if text is one or more of the digits 0 to 9 and nothing else.
inline bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace snowid::internal
