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
  ClockPolicy clock_policy = ClockPolicy::kMonotonic;
  std::chrono::milliseconds max_wait{5};
  std::chrono::milliseconds max_drift{1000};
  std::chrono::milliseconds max_start_wait{10000};
  // Start on a logical clock above a mark the clock is behind (generator.h).
  bool continue_above_mark = false;
  SequenceStart sequence_start = SequenceStart::kZero;
  std::string state_dir = "./.snowid";
};

// Rows in table order: datacenter_id and worker_id; later preset ... state_dir.
OptionRows<GeneratorConfig> node_id_rows();
OptionRows<GeneratorConfig> generator_rows();

}  // namespace snowid::server
