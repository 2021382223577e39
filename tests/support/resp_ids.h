// The IDs in a hiredis reply to snowidd's SNOWID.ID or SNOWID.IDS, which
// answers each ID as a bulk string of its decimal digits (never a RESP
// integer, which JavaScript clients would round). A reply of any other form
// holds no ID: a test that expects some then fails on the count.
#pragma once

#include <hiredis/hiredis.h>

#include <charconv>
#include <string_view>
#include <vector>

#include "snowid/decode.h"

namespace snowid::test {

// Appends the IDs of `reply` (one string, or an array of strings) to `out`.
inline void append_resp_ids(const redisReply* reply, std::vector<Id>& out) {
  if (reply == nullptr) return;
  if (reply->type == REDIS_REPLY_ARRAY) {
    for (std::size_t i = 0; i < reply->elements; ++i) append_resp_ids(reply->element[i], out);
    return;
  }
  if (reply->type != REDIS_REPLY_STRING) return;
  const std::string_view text(reply->str, reply->len);
  Id id = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec == std::errc{} && end == text.data() + text.size()) out.push_back(id);
}

}  // namespace snowid::test
