// The layout options every snowid subcommand takes (--preset, --timestamp-bits,
// ..., --sequence-position, --epoch-zone), bound to one object that each subcommand shares:
// only one subcommand is parsed per run.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid::cli {

struct LayoutArgs {
  std::string preset = "twitter";
  std::string timestamp_bits, datacenter_bits, worker_bits, sequence_bits, time_unit_ms, epoch,
      sequence_position;
  std::string epoch_zone = "UTC";

  // Adds the layout options to `app`.
  void add_to(CLI::App& app);

  // The preset with the given overrides, validated; kInvalidArgument naming
  // the option otherwise.
  Result<Layout> resolve_layout() const;
};

}  // namespace snowid::cli
