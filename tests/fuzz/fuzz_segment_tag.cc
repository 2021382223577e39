// Fuzz target: segment tag names as they arrive from outside (the {tag} of
// /v1/segment/{tag} and /api/segment/get/{tag}, NextSegmentIds.tag, the
// arguments of `snowid segment`).
//   validate_segment_tag        against the documented rule
//   SegmentAllocator::next      one number and a batch, on a SQLite store in
//                               the scratch directory that creates a valid
//                               tag on its first request (segment_auto_create)
//
// Input: the tag's bytes. Checks beyond "no crash, no sanitizer report": a
// tag is accepted exactly when it is 1 to 128 code points of well-formed
// UTF-8 without control characters and not starting with '#'
// (snowid/segment_tag.h, checked here by decoding and re-encoding); a bad
// one is kInvalidArgument with a message that echoes no control character;
// a good one gets numbers that keep increasing, the batch strictly
// increasing.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "snowid/ext/segment.h"
#include "snowid/ext/segment_store.h"

namespace {

// The UTF-8 encoding of code point `c` (c <= 0x10FFFF).
std::string encode_utf8(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
  return out;
}

// The documented rule, by another road than the validator's: read each
// sequence by its lead byte's count of high ones, and accept it only if
// re-encoding its code point gives the same bytes (no overlong form) and
// the code point is a scalar value.
bool documented_tag(std::string_view tag) {
  if (tag.empty() || tag.front() == '#') return false;
  std::size_t characters = 0;
  for (std::size_t at = 0; at < tag.size(); ++characters) {
    const auto lead = static_cast<unsigned char>(tag[at]);
    std::size_t length = 1;
    while (length < 5 && (lead & (0x80 >> (length - 1))) != 0) ++length;
    length = length == 1 ? 1 : length - 1;  // 0xxxxxxx: 1; 110xxxxx: 2; ...
    if ((lead & 0xc0) == 0x80 || length > 4 || at + length > tag.size()) return false;
    char32_t c = static_cast<char32_t>(length == 1 ? lead : lead & (0xff >> (length + 1)));
    for (std::size_t i = 1; i < length; ++i) {
      const auto next = static_cast<unsigned char>(tag[at + i]);
      if ((next & 0xc0) != 0x80) return false;
      c = c << 6 | static_cast<char32_t>(next & 0x3f);
    }
    if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return false;
    if (encode_utf8(c) != tag.substr(at, length)) return false;
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return false;
    at += length;
  }
  return characters <= 128;
}

snowid::SegmentAllocator& allocator() {
  static snowid::SegmentAllocator* const kAllocator = [] {
    snowid::SegmentAllocatorOptions options;
    options.auto_create_tags = true;
    options.auto_create_step = 10;
    options.max_batch = 100;
    const std::string url =
        "sqlite://" + (snowid::fuzz::scratch_directory() / "segments.db").string();
    auto opened = snowid::SegmentAllocator::open(url, options);
    if (!opened.ok()) {
      std::fprintf(stderr, "fuzz setup: %s\n", opened.error().message.c_str());
      std::abort();
    }
    return opened->release();  // lives until exit, see fuzz_support.cc
  }();
  return *kAllocator;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static std::map<std::string, snowid::fuzz::IncreasingCheck, std::less<>> issued;
  const std::string_view tag(reinterpret_cast<const char*>(data), size);
  const bool documented = documented_tag(tag);
  snowid::Status valid = snowid::validate_segment_tag(tag);
  SNOWID_FUZZ_CHECK(valid.ok() == documented);
  if (!valid.ok()) {
    SNOWID_FUZZ_CHECK(valid.error().code == snowid::ErrorCode::kInvalidArgument);
    for (char c : valid.error().message) {
      SNOWID_FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 &&
                        static_cast<unsigned char>(c) < 0x7f);
    }
  }

  auto number = allocator().next(tag);
  SNOWID_FUZZ_CHECK(number.ok() == documented);
  if (!documented) {
    SNOWID_FUZZ_CHECK(number.error().code == snowid::ErrorCode::kInvalidArgument);
    return 0;
  }
  snowid::fuzz::IncreasingCheck& check = issued[std::string(tag)];
  check.next(*number);
  std::vector<std::int64_t> batch;
  snowid::Status taken = allocator().next(tag, 1 + size % 37, batch);
  SNOWID_FUZZ_CHECK(taken.ok() && batch.size() == 1 + size % 37);
  for (std::int64_t n : batch) check.next(n);
  return 0;
}
