// Decoding an ID into its fields, composing one from fields, and the parsing
// of IDs and numbers that every snowid front end shares.
// All functions are pure and thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid {

using Id = std::int64_t;

struct IdFields {
  std::chrono::milliseconds timestamp{0};  // Unix ms of the start of the ID's time unit
  std::uint64_t datacenter = 0;
  std::uint64_t worker = 0;
  std::uint64_t sequence = 0;

  friend bool operator==(const IdFields&, const IdFields&) = default;
};

// The fields of `id` under `layout`. kInvalidArgument if id is negative or has
// bits above the layout's total. Requires: validate(layout).ok().
Result<IdFields> decode(const Layout& layout, Id id);

// The ID with these fields. The timestamp is truncated to the layout's time
// unit. kInvalidArgument (naming the field and its range) if a field does not
// fit. Requires: validate(layout).ok().
Result<Id> compose(const Layout& layout, const IdFields& fields);

// Parses a decimal ID: digits only, 0 .. 2^63-1.
Result<Id> parse_id(std::string_view text);

// Parses a non-negative decimal integer no greater than `max`; `what` names it in errors.
Result<std::uint64_t> parse_unsigned(std::string_view text, std::uint64_t max,
                                     std::string_view what);

}  // namespace snowid
