// What snowid::Client accepts of a node's answer to NextBusinessIds
// (docs/clients.md, "What a client accepts"): an answer that breaks any rule
// is discarded whole and never handed to the application.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_set>

#include <google/protobuf/repeated_ptr_field.h>

namespace snowid {

// The longest business ID a client accepts, in bytes (a template renders at
// most 160 bytes of text and 18 digits).
inline constexpr std::size_t kMaxBusinessIdBytes = 256;
// The most business IDs one call may ask for.
inline constexpr std::size_t kMaxBusinessBatch = 1000;

// Why `ids`, the answer to a request for `count` business IDs, cannot be
// handed out, or "" if it can: exactly `count` IDs, each 1 to
// kMaxBusinessIdBytes bytes without a control character (below 0x20, or
// 0x7f), no two alike.
inline std::string why_invalid_business(const google::protobuf::RepeatedPtrField<std::string>& ids,
                                        std::size_t count) {
  if (static_cast<std::size_t>(ids.size()) != count) {
    return std::to_string(ids.size()) + " business IDs for a request of " + std::to_string(count);
  }
  std::unordered_set<std::string_view> seen;
  for (const std::string& id : ids) {
    if (id.empty() || id.size() > kMaxBusinessIdBytes) {
      return "a business ID of " + std::to_string(id.size()) + " bytes";
    }
    for (const char c : id) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        return "a business ID with a control character";
      }
    }
    if (!seen.insert(id).second) return "a business ID twice in one answer";
  }
  return "";
}

}  // namespace snowid
