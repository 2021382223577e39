// The request target of snowidd's HTTP API ("/v1/ids?count=5&agent=web"):
// its path, its query parameters and the `count` parameter. Pure functions,
// apart from http_routes.cc so that tests and fuzz targets can call them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "snowid/error.h"

namespace snowid::server {

// A split request target. The path points into the string parsed; the
// parameters are percent-decoded copies (none on a target without '?').
struct Target {
  std::string_view path;
  std::map<std::string, std::string, std::less<>> query;
};

// The path of a request target: the part before '?', without the scheme and
// authority of an absolute-form target ("http://host/v1/id", RFC 9112
// 3.2.2; "/" if it names no path).
std::string_view target_path(std::string_view target);

// Splits "/path?a=1&b=2" (or its absolute form) into the path and the
// parameters, names and values percent-decoded (RFC 3986 2.1); a parameter
// without '=' has the empty value. kInvalidArgument if a parameter is given
// twice or holds a '%' not followed by two hexadecimal digits.
Result<Target> parse_target(std::string_view target);

// A path segment (a prefix route's tail: "order%3Apay") with its %XX
// escapes decoded (RFC 3986 2.1; '+' stays '+'). kInvalidArgument if a '%' is
// not followed by two hexadecimal digits.
Result<std::string> percent_decode_path(std::string_view path);

// The `count` parameter as a number; nullopt if absent. kInvalidArgument if
// it is not a decimal number below 2^64. Its range (1..max_batch) is
// IdService's to check.
Result<std::optional<std::uint64_t>> parse_count(const Target& target);

}  // namespace snowid::server
