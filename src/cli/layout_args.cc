#include "layout_args.h"

#include <optional>

#include "epoch_zone.h"
#include "snowid/decode.h"
#include "time_text.h"

namespace snowid::cli {

void LayoutArgs::add_to(CLI::App& app) {
  app.add_option("--preset", preset,
                 "Layout preset: twitter, discord, sonyflake, baidu, js-safe (epochs in UTC)")
      ->default_str("twitter");
  app.add_option("--timestamp-bits", timestamp_bits, "Bits of the timestamp field");
  app.add_option("--datacenter-bits", datacenter_bits, "Bits of the datacenter field (0 allowed)");
  app.add_option("--worker-bits", worker_bits, "Bits of the worker field (0 allowed)");
  app.add_option("--sequence-bits", sequence_bits, "Bits of the sequence field");
  app.add_option("--time-unit-ms", time_unit_ms, "Length of one timestamp step in ms");
  app.add_option("--epoch", epoch, "Epoch: Unix ms or ISO 8601 (2014-09-01T00:00:00Z)");
  app.add_option("--sequence-position", sequence_position,
                 "Sequence below (low) or above (high) the node fields");
  app.add_option("--epoch-zone", epoch_zone,
                 "Time zone the epoch's date is read in: the preset's, or an --epoch without 'Z' "
                 "or offset (Asia/Shanghai for uid-generator on a JVM in China)")
      ->default_str("UTC");
}

Result<Layout> LayoutArgs::resolve_layout() const {
  LayoutSpec spec;
  spec.preset = preset;
  std::optional<Error> error;
  auto bits = [&error](const std::string& text, std::string_view option) -> std::optional<int> {
    if (text.empty() || error) return std::nullopt;
    auto n = parse_unsigned(text, 64, option);
    if (!n.ok()) {
      error = n.error();
      return std::nullopt;
    }
    return static_cast<int>(*n);
  };
  spec.timestamp_bits = bits(timestamp_bits, "--timestamp-bits");
  spec.datacenter_bits = bits(datacenter_bits, "--datacenter-bits");
  spec.worker_bits = bits(worker_bits, "--worker-bits");
  spec.sequence_bits = bits(sequence_bits, "--sequence-bits");
  if (error) return *error;
  if (!time_unit_ms.empty()) {
    auto unit = parse_unsigned(time_unit_ms, 86'400'000, "--time-unit-ms");
    if (!unit.ok()) return unit.error();
    spec.time_unit = std::chrono::milliseconds{static_cast<long long>(*unit)};
  }
  if (!epoch.empty()) {
    auto time = parse_time(epoch);
    if (!time.ok()) return time.error();
    spec.epoch = *time;
  }
  if (!sequence_position.empty()) {
    auto position = parse_sequence_position(sequence_position);
    if (!position.ok()) return position.error();
    spec.sequence_position = *position;
  }
  const bool epoch_names_zone = !epoch.empty() && time_text_names_zone(epoch);
  if (Status zoned = apply_epoch_zone(spec, epoch_zone, epoch_names_zone); !zoned.ok()) {
    return zoned.error();
  }
  return resolve(spec);
}

}  // namespace snowid::cli
