// `snowid cluster list|release`: look at and repair the node-id claims of a
// cluster-mode snowid deployment in etcd.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace snowid::cli {

class ClusterCommands {
 public:
  // Adds the `cluster` subcommand and its own subcommands to `app`.
  explicit ClusterCommands(CLI::App& app);

  // After parsing: nullopt if `cluster` was not given, else its exit code
  // (0 done, 1 failed, 2 bad input; errors are one line on stderr).
  std::optional<int> run() const;

 private:
  int list() const;
  int release() const;

  CLI::App* cluster_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* release_ = nullptr;
  std::string endpoints_, cluster_name_, user_, password_, node_id_;
  std::string timeout_ms_ = "2000";
  bool force_ = false;
};

}  // namespace snowid::cli
