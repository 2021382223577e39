// Fuzz target: IDs, counts and times as they arrive from outside.
//   parse_id        the {id} of GET /v1/decode/{id}, `snowid decode` arguments
//   parse_unsigned  every numeric flag, option and environment variable
//   parse_target    the request target of every HTTP route
//   parse_count     ?count= of /v1/ids and /v1/segment/{tag}
//   parse_time      --epoch, --timestamp-ms, the epoch option
//   decode_id       ?encoding= text of the opaque routes, `snowid decode --encoding`
// and decode, compose and decoded_id_json of every ID that parses, under
// every preset.
//
// Input: one argument's text. Checks beyond "no crash, no sanitizer report":
// parse_id and parse_unsigned accept exactly the decimal numbers in range
// (against an independent check) and print back to the same digits; a count
// lies in 1..max_batch; compose undoes decode; format_time and parse_time
// undo each other for years 0000 to 9999; text decode_id accepts has the
// encoding's fixed width and encodes back to text that reads as the same ID.
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "http_target.h"
#include "id_json.h"
#include "snowid/decode.h"
#include "snowid/id_encoding.h"
#include "snowid/layout.h"
#include "time_text.h"

namespace {

using std::chrono::milliseconds;

// True if `text` is a decimal number no greater than `max`, judged on the
// digits alone (no conversion that could overflow).
bool decimal_at_most(std::string_view text, std::uint64_t max) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  while (text.size() > 1 && text.front() == '0') text.remove_prefix(1);
  const std::string limit = std::to_string(max);
  if (text.size() != limit.size()) return text.size() < limit.size();
  return text <= limit;
}

std::string_view without_leading_zeros(std::string_view digits) {
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  return digits;
}

void check_unsigned(std::string_view text, std::uint64_t max) {
  auto value = snowid::parse_unsigned(text, max, "value");
  SNOWID_FUZZ_CHECK(value.ok() == decimal_at_most(text, max));
  if (value.ok()) {
    SNOWID_FUZZ_CHECK(*value <= max);
    SNOWID_FUZZ_CHECK(std::to_string(*value) == without_leading_zeros(text));
  } else {
    SNOWID_FUZZ_CHECK(!value.error().message.empty());
  }
}

void check_id(std::string_view text) {
  constexpr auto kMaxId = static_cast<std::uint64_t>(std::numeric_limits<snowid::Id>::max());
  auto id = snowid::parse_id(text);
  SNOWID_FUZZ_CHECK(id.ok() == decimal_at_most(text, kMaxId));
  if (!id.ok()) return;
  SNOWID_FUZZ_CHECK(std::to_string(*id) == without_leading_zeros(text));
  for (std::string_view name : snowid::preset_names()) {
    const snowid::Layout layout = *snowid::preset(name);
    auto fields = snowid::decode(layout, *id);
    const auto facts = snowid::layout_facts(layout, milliseconds{0});
    SNOWID_FUZZ_CHECK(fields.ok() == (*id <= facts.max_id));
    if (!fields.ok()) continue;
    auto back = snowid::compose(layout, *fields);
    SNOWID_FUZZ_CHECK(back.ok() && *back == *id);
    SNOWID_FUZZ_CHECK(snowid::decoded_id_json(*id, *fields)["id"] == std::to_string(*id));
  }
}

void check_count(std::string_view text) {
  auto target = snowid::server::parse_target(text);
  if (!target.ok()) return;
  SNOWID_FUZZ_CHECK(text.find(target->path) != std::string_view::npos || target->path == "/");
  auto count = snowid::server::parse_count(*target);
  if (!count.ok() || !count->has_value()) return;
  // A count is the decimal number written, nothing else.
  const std::string& written = target->query.at("count");
  SNOWID_FUZZ_CHECK(!written.empty() &&
                    written.find_first_not_of("0123456789") == std::string::npos);
  const auto digits = written.find_first_not_of('0');
  SNOWID_FUZZ_CHECK(std::to_string(**count) ==
                    (digits == std::string::npos ? "0" : written.substr(digits)));
}

void check_time(std::string_view text) {
  auto time = snowid::parse_time(text);
  if (!time.ok()) return;
  // 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
  constexpr milliseconds kFirst{-62'167'219'200'000};
  constexpr milliseconds kLast{253'402'300'799'999};
  if (*time < kFirst || *time > kLast) return;
  const std::string printed = snowid::format_time(*time);
  auto again = snowid::parse_time(printed);
  SNOWID_FUZZ_CHECK(again.ok() && *again == *time);
}

void check_encoded_id(std::string_view text) {
  for (auto encoding : {snowid::IdEncoding::kHex, snowid::IdEncoding::kBase32,
                        snowid::IdEncoding::kBase58, snowid::IdEncoding::kBase62}) {
    auto id = snowid::decode_id(text, encoding);
    if (!id.ok()) {
      SNOWID_FUZZ_CHECK(!id.error().message.empty());
      continue;
    }
    SNOWID_FUZZ_CHECK(*id >= 0 && text.size() == snowid::encoded_id_width(encoding));
    const std::string canonical = snowid::encode_id(*id, encoding);
    auto again = snowid::decode_id(canonical, encoding);
    SNOWID_FUZZ_CHECK(again.ok() && *again == *id);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (std::uint64_t max :
       {std::uint64_t{0}, std::uint64_t{64}, std::uint64_t{65535}, std::uint64_t{86'400'000},
        std::uint64_t{0xffffffff}, std::numeric_limits<std::uint64_t>::max()}) {
    check_unsigned(text, max);
  }
  check_id(text);
  check_count(text);
  check_time(text);
  check_encoded_id(text);
  return 0;
}
