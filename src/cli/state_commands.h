// `snowid state show|lower`: look at a generator's persisted high-water mark,
// say what a restart will do with it, and lower it to what an audit log
// proves was the last issued ID, when the operator confirms with --yes.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "layout_args.h"
#include "subcommand.h"

namespace snowid::cli {

class StateCommands : public Subcommand {
 public:
  // Adds the `state` subcommand and its own subcommands to `app`; the layout
  // options are `layout_args`, shared with the other subcommands.
  StateCommands(CLI::App& app, LayoutArgs& layout_args);

  bool parsed() const override;
  // Runs `state show` or `state lower`; returns the exit code (0 done,
  // 1 failed, 2 bad input; errors are one line on stderr).
  int run() const override;

 private:
  int show() const;
  int lower() const;
  std::string state_file() const;

  const LayoutArgs& layout_args_;
  CLI::App* state_ = nullptr;
  CLI::App* show_ = nullptr;
  CLI::App* lower_ = nullptr;
  std::string state_dir_ = "./.snowid";
  std::string state_file_;
  std::vector<std::string> audit_logs_;
  std::string node_;
  bool yes_ = false;
};

}  // namespace snowid::cli
