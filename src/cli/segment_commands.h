// `snowid segment ...`: manage segment-mode tags in a segment store.
//
//   snowid segment create TAG [--start N] [--step N] [--description TEXT] [--segment-store URL]
//   snowid segment list [--segment-store URL]
//   snowid segment set-step TAG N [--segment-store URL]
//
// Without --segment-store the store is sqlite://.snowid/segments.db (the
// default state directory, created if missing). Exit codes as for every
// snowid command: 0 success, 1 the store failed or refused (unknown or
// existing tag, database unreachable), 2 bad input; errors are one line on stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "subcommand.h"

namespace snowid::cli {

class SegmentCommands : public Subcommand {
 public:
  // Adds the `segment` subcommand and its subcommands to `app`.
  explicit SegmentCommands(CLI::App& app);

  bool parsed() const override;
  // Runs the parsed subcommand; returns the exit code.
  int run() const override;

 private:
  CLI::App* segment_ = nullptr;
  CLI::App* create_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* set_step_ = nullptr;
  CLI::App* ticket_init_ = nullptr;
  std::string store_url_;
  std::string tag_;
  std::string start_ = "1";
  std::string step_ = "1000";
  std::string description_;
  std::string new_step_;
  std::string increment_;
  std::string offset_;
};

}  // namespace snowid::cli
