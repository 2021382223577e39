// `snowid check`: reads IDs that clients received (and snowidd's audit logs)
// and reports duplicates, per-source order violations, IDs from the future,
// IDs the audit logs do not cover, a state file behind the audit logs (a
// restored state directory), and a summary per node. The checks
// themselves are src/check/id_checker.h; this file reads the inputs and
// prints the report (text, or JSON with --json).
//
//   snowid check [FILE|-]... [--audit FILE]... [--state-file FILE] [--max-drift
//   1s]
//                [--now TIME] [--json] [--progress|--no-progress] [layout
//                options]
//
// Exit codes: 0 nothing found; 1 a finding (duplicate, order violation,
// future ID, ID missing from the audit logs, overlapping audit records) or
// an input that cannot be read; 2 bad input (a line that is not an ID, a
// missing file, a bad option), one line on stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "layout_args.h"
#include "progress_bar.h"
#include "subcommand.h"

namespace snowid::cli {

class CheckCommand : public Subcommand {
 public:
  // Adds the `check` subcommand to `app`; its layout options are bound to `layout_args`.
  CheckCommand(CLI::App& app, LayoutArgs& layout_args);

  bool parsed() const override;
  // Runs the check; returns the exit code.
  int run() const override;

 private:
  CLI::App* check_ = nullptr;
  const LayoutArgs& layout_args_;
  std::vector<std::string> inputs_;
  std::vector<std::string> audit_logs_;
  std::string max_drift_ = "1s";
  std::string now_;
  std::string state_file_;
  bool json_ = false;
  ProgressFlags progress_;
};

}  // namespace snowid::cli
