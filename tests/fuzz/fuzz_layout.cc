// Fuzz target: ID layouts as users give them, and everything derived from a
// layout that validates.
//
// Input: text lines. Normally "option=value", the layout options of
// snowidd's configuration and of the CLI's flags (preset, timestamp_bits,
// datacenter_bits, worker_bits, sequence_bits, time_unit_ms, epoch,
// sequence_position), applied with server::apply_option, then resolve(); plus
// "now=<Unix ms>" (1970 to 9999) for layout_facts and "id=<n>" for IDs to decode. If the
// first line is "raw", the next seven are the Layout fields as integers
// (the three bit widths, sequence bits, time unit ms, epoch ms, position 0/1),
// set directly as a library user could, then validate().
//
// For a layout accepted either way: describe, layout_facts, layout_json,
// draw_layout (`snowid layout`), decode and compose. Checks beyond "no
// crash, no sanitizer report": validate() keeps every derived computation
// free of overflow; max_id has total_bits bits; the largest ID decodes and
// the next does not; compose undoes decode; the last time unit composes and
// the overflow moment does not.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config.h"
#include "fuzz_support.h"
#include "id_json.h"
#include "layout_drawing.h"
#include "snowid/decode.h"
#include "snowid/layout.h"

namespace {

using std::chrono::milliseconds;

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    lines.push_back(text.substr(0, newline));
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
  }
  return lines;
}

template <typename T>
T integer(std::string_view text) {
  T value{};
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

void check_id(const snowid::Layout& layout, const snowid::LayoutFacts& facts, snowid::Id id) {
  auto fields = snowid::decode(layout, id);
  SNOWID_FUZZ_CHECK(fields.ok() == (id >= 0 && id <= facts.max_id));
  if (!fields.ok()) return;
  auto back = snowid::compose(layout, *fields);
  SNOWID_FUZZ_CHECK(back.ok() && *back == id);
  (void)snowid::decoded_id_json(id, *fields).dump();
}

void check_layout(const snowid::Layout& layout, milliseconds now,
                  const std::vector<snowid::Id>& ids) {
  SNOWID_FUZZ_CHECK(snowid::validate(layout).ok());
  const snowid::LayoutFacts facts = snowid::layout_facts(layout, now);
  SNOWID_FUZZ_CHECK(facts.total_bits >= 2 && facts.total_bits <= snowid::kMaxLayoutBits);
  SNOWID_FUZZ_CHECK(static_cast<std::uint64_t>(facts.max_id) ==
                    (std::uint64_t{1} << facts.total_bits) - 1);
  (void)snowid::describe(layout);
  (void)snowid::layout_json(layout, now).dump();
  (void)snowid::cli::draw_layout(layout);

  check_id(layout, facts, 0);
  check_id(layout, facts, facts.max_id);
  if (facts.max_id < INT64_MAX) check_id(layout, facts, facts.max_id + 1);
  for (snowid::Id id : ids) check_id(layout, facts, id);

  const milliseconds last = facts.overflow_at - layout.time_unit;
  SNOWID_FUZZ_CHECK(snowid::compose(layout, snowid::IdFields{last, 0, 0, 0}).ok());
  SNOWID_FUZZ_CHECK(!snowid::compose(layout, snowid::IdFields{facts.overflow_at, 0, 0, 0}).ok());
  SNOWID_FUZZ_CHECK(
      !snowid::compose(layout, snowid::IdFields{layout.epoch - milliseconds{1}, 0, 0, 0}).ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto lines = lines_of(std::string_view(reinterpret_cast<const char*>(data), size));
  milliseconds now{1'700'000'000'000};
  std::vector<snowid::Id> ids;

  if (!lines.empty() && lines[0] == "raw") {
    auto field = [&](std::size_t i) { return i < lines.size() ? lines[i] : std::string_view{}; };
    snowid::Layout layout;
    layout.timestamp_bits = integer<int>(field(1));
    layout.datacenter_bits = integer<int>(field(2));
    layout.worker_bits = integer<int>(field(3));
    layout.sequence_bits = integer<int>(field(4));
    layout.time_unit = milliseconds{integer<std::int64_t>(field(5))};
    layout.epoch = milliseconds{integer<std::int64_t>(field(6))};
    layout.sequence_position = integer<int>(field(7)) == 0 ? snowid::SequencePosition::kLow
                                                           : snowid::SequencePosition::kHigh;
    for (std::size_t i = 8; i < lines.size(); ++i) ids.push_back(integer<snowid::Id>(lines[i]));
    if (snowid::validate(layout).ok()) check_layout(layout, now, ids);
    return 0;
  }

  snowid::server::ServerConfig config;
  for (std::string_view line : lines) {
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string name(line.substr(0, eq));
    const std::string value(line.substr(eq + 1));
    if (name == "now") {
      // The wall clock, as the CLI and the server pass it: 1970 to 9999.
      now = std::clamp(milliseconds{integer<std::int64_t>(value)}, milliseconds{0},
                       milliseconds{253'402'300'799'999});
    } else if (name == "id") {
      ids.push_back(integer<snowid::Id>(value));
    } else {
      (void)snowid::server::apply_option(config, name, value, "fuzz");
    }
  }
  auto layout = snowid::resolve(config.generator.layout);
  if (!layout.ok()) {
    SNOWID_FUZZ_CHECK(!layout.error().message.empty());
    return 0;
  }
  check_layout(*layout, now, ids);
  return 0;
}
