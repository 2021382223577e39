#include "http_target.h"

#include <fmt/format.h>

#include "snowid/decode.h"

namespace snowid::server {

Result<Target> parse_target(std::string_view target) {
  Target out;
  const auto q = target.find('?');
  out.path = target.substr(0, q);
  if (q == std::string_view::npos) return out;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    if (!out.query.emplace(key, value).second) {
      return invalid_argument(fmt::format("query parameter '{}' given twice", key.substr(0, 40)));
    }
  }
  return out;
}

Result<std::optional<std::uint32_t>> parse_count(const Target& target, std::uint32_t max) {
  auto it = target.query.find("count");
  if (it == target.query.end()) return std::optional<std::uint32_t>{};
  auto count = parse_unsigned(it->second, UINT64_MAX, "count");
  if (!count.ok()) return count.error();
  if (*count < 1 || *count > max) {
    return invalid_argument(fmt::format("count {} is out of range 1..{}", *count, max));
  }
  return std::optional<std::uint32_t>{static_cast<std::uint32_t>(*count)};
}

}  // namespace snowid::server
