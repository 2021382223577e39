// Fuzz target: segment tag names as they arrive from outside (the {tag} of
// /v1/segment/{tag} and /api/segment/get/{tag}, NextSegmentIds.tag, the
// arguments of `snowid segment`).
//   validate_segment_tag        against the documented rule
//   SegmentAllocator::next      one number and a batch, on a SQLite store in
//                               the scratch directory that creates a valid
//                               tag on its first request (segment_auto_create)
//
// Input: the tag's bytes. Checks beyond "no crash, no sanitizer report": a
// tag is accepted exactly when it matches [a-zA-Z][a-zA-Z0-9_.-]{0,63}; a bad
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

bool letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool documented_tag(std::string_view tag) {
  if (tag.empty() || tag.size() > 64 || !letter(tag.front())) return false;
  for (char c : tag) {
    if (!letter(c) && !(c >= '0' && c <= '9') && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
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
