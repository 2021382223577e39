#include "http_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "percent_decode.h"
#include "snowid/decode.h"

namespace snowid::server {

namespace {

// The target without the scheme and authority of its absolute form.
std::string_view origin_form(std::string_view target) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() < scheme.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < scheme.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(target[i])) == scheme[i];
    }
    if (!same) continue;
    const auto slash = target.find_first_of("/?", scheme.size());
    if (slash == std::string_view::npos) return "/";
    return target[slash] == '?' ? std::string_view{} : target.substr(slash);
  }
  return target;
}

}  // namespace

std::string_view target_path(std::string_view target) {
  const std::string_view origin = origin_form(target);
  const std::string_view path = origin.substr(0, origin.find('?'));
  return path.empty() ? "/" : path;
}

Result<Target> parse_target(std::string_view target) {
  Target out;
  out.path = target_path(target);
  const auto q = target.find('?');
  if (q == std::string_view::npos) return out;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    auto key = percent_decode(pair.substr(0, eq));
    auto value = percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    if (!key || !value) {
      return invalid_argument(
          fmt::format("query parameter '{}' has a '%' not followed by two "
                      "hexadecimal digits",
                      pair.substr(0, 40)));
    }
    if (!out.query.emplace(std::move(*key), std::move(*value)).second) {
      return invalid_argument(fmt::format("query parameter '{}' given twice",
                                          pair.substr(0, std::min<std::size_t>(eq, 40))));
    }
  }
  return out;
}

Result<std::string> percent_decode_path(std::string_view path) {
  auto decoded = percent_decode(path);
  if (!decoded) {
    return invalid_argument(fmt::format(
        "path '{}' has a '%' not followed by two hexadecimal digits (write '%' as %25)",
        path.substr(0, 100)));
  }
  return std::move(*decoded);
}

Result<std::optional<std::uint64_t>> parse_count(const Target& target) {
  auto it = target.query.find("count");
  if (it == target.query.end()) return std::optional<std::uint64_t>{};
  auto count = parse_unsigned(it->second, UINT64_MAX, "count");
  if (!count.ok()) return count.error();
  return std::optional<std::uint64_t>{*count};
}

}  // namespace snowid::server
