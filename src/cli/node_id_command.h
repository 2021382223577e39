// `snowid node-id mac-pid`: which datacenter and worker id MyBatis-Plus's
// Sequence and Hutool's IdUtil take on this machine for a process, and how
// likely such ids collide (src/core/mac_pid.h).
//
//   snowid node-id mac-pid [--pid N] [--interface NAME] [--processes N] [--json]
//                          [layout options]
//
// Exit codes: 0 printed; 1 the machine's interfaces cannot be read; 2 bad
// input, one line on stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "layout_args.h"
#include "mac_pid.h"
#include "snowid/error.h"
#include "mac_pid.h"
#include "subcommand.h"

namespace snowid::cli {

class NodeIdCommand : public Subcommand {
 public:
  // Adds `node-id mac-pid` to `app`; its layout options are bound to `layout_args`.
  NodeIdCommand(CLI::App& app, LayoutArgs& layout_args);

  bool parsed() const override;
  int run() const override;

 private:
  CLI::App* node_id_ = nullptr;
  CLI::App* mac_pid_ = nullptr;
  const LayoutArgs& layout_args_;
  std::string pid_, interface_, processes_ = "10";
  bool json_ = false;
};

// The node id `snowid gen --node-id-from mac-pid` uses for this process,
// after one warning line on stderr that it can collide.
Result<MacPidNodeId> mac_pid_node_id_for_gen(const Layout& layout);

}  // namespace snowid::cli
