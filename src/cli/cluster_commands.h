// `snowid cluster list|release`: look at and repair the node-id claims of a
// cluster-mode snowid deployment in etcd, Redis or ZooKeeper.
// `snowid cluster confirm-loss --state-dir DIR`: confirm a store loss the
// node using DIR reported (src/coord/lease_options.h, kConfirmStoreLossFile).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "etcd_coordinator.h"
#include "lease_options.h"
#include "snowid/error.h"

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
  int confirm_loss() const;
  // `act` applied to the options of the store the flags name (--etcd or
  // --redis or --zookeeper), or the error that the flags name none, more
  // than one, or are bad.
  template <typename Act>
  auto with_store(Act act) const -> decltype(act(EtcdOptions{}));

  CLI::App* cluster_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* release_ = nullptr;
  CLI::App* confirm_loss_ = nullptr;
  std::string state_dir_;
  std::string endpoints_, redis_endpoints_, zookeeper_endpoints_, cluster_name_, user_, password_,
      node_id_;
  std::string timeout_ms_ = "2000";
  bool force_ = false;
};

}  // namespace snowid::cli
