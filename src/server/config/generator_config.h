// snowidd's generator options (snowid/generator.h): the layout, the node id
// as configured, the clock policy and the state directory, with their rows
// in the option table.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "option_rows.h"
#include "snowid/generator.h"
#include "snowid/layout.h"

namespace snowid::server {

struct GeneratorConfig {
  std::uint64_t datacenter_id = 0;
  std::uint64_t worker_id = 0;
  LayoutSpec layout;
  // The zone the epoch's date and time are read in (epoch_zone.h): the
  // preset's epoch, or layout.epoch when its text named no zone
  // (epoch_names_zone false).
  std::string epoch_zone = "UTC";
  bool epoch_names_zone = false;
  ClockPolicy clock_policy = ClockPolicy::kMonotonic;
  std::chrono::milliseconds max_wait{5};
  std::chrono::milliseconds max_drift{1000};
  std::chrono::milliseconds max_start_wait{10000};
  // Start on a logical clock above a mark the clock is behind (generator.h).
  bool continue_above_mark = false;
  SequenceStart sequence_start = SequenceStart::kZero;
  std::string state_dir = "./.snowid";
};

// Rows in table order: datacenter_id and worker_id; later preset ...
// sequence_position, epoch_zone, clock_policy ... state_dir.
OptionRows<GeneratorConfig> node_id_rows();
OptionRows<GeneratorConfig> generator_rows();

// The layout `config` names, its epoch read in its epoch zone, validated.
Result<Layout> resolve_layout(const GeneratorConfig& config);

}  // namespace snowid::server
