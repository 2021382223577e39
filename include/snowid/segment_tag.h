// Segment tag names: the one rule every entry point applies (the segment
// allocator and its stores, the CLI, snowidd's HTTP, gRPC and Redis-protocol
// routes, the client library), so that a tag one of them lists, another
// serves.
//
// A tag is what Meituan Leaf's leaf_alloc.biz_tag (varchar(128)) holds:
// 1 to 128 characters (Unicode code points, as MySQL counts a VARCHAR's
// length; so at most 512 bytes) of well-formed UTF-8 ("order:pay", "a/b",
// "with space", "订单"), with two exceptions: no control character (U+0000 to
// U+001F, U+007F, U+0080 to U+009F), which no log line, metric label or
// Redis reply could carry as it is, and no '#' first, which snowid keeps
// for its own rows of a store (the ticket identity '#ticket'). Pure and
// thread-safe.
#pragma once

#include <cstddef>
#include <string_view>

#include "snowid/error.h"

namespace snowid {

inline constexpr std::size_t kMaxSegmentTagCharacters = 128;

// Ok for a tag of the rule above; kInvalidArgument saying which part of it
// `tag` breaks, its text shown in printable ASCII ('?' for other bytes).
Status validate_segment_tag(std::string_view tag);

// Ok for the key of one of snowid's own rows of a segment store (or a prefix
// of such keys): '#' first, then the characters of the rule above, at most
// kMaxSegmentTagCharacters in all (the column's width); kInvalidArgument
// saying which part of it `key` breaks.
Status validate_own_row_key(std::string_view key);

}  // namespace snowid
