// The request target of snowidd's HTTP API ("/v1/ids?count=5&agent=web"):
// its path, its query parameters and the `count` parameter. Pure functions,
// apart from http_routes.cc so that tests and fuzz targets can call them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>

#include "snowid/error.h"

namespace snowid::server {

// A split request target. The views point into the string parsed.
struct Target {
  std::string_view path;
  std::map<std::string_view, std::string_view> query;
};

// Splits "/path?a=1&b=2" into the path and the parameters, taken as given
// (no percent-decoding); a parameter without '=' has the empty value.
// kInvalidArgument if a parameter is given twice.
Result<Target> parse_target(std::string_view target);

// The `count` parameter, 1..max; nullopt if absent. kInvalidArgument naming
// the range otherwise.
Result<std::optional<std::uint32_t>> parse_count(const Target& target, std::uint32_t max);

}  // namespace snowid::server
