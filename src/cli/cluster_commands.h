// `snowid cluster list|release`: look at and repair the node-id claims of a
// cluster-mode snowid deployment in any store that leases node ids (etcd,
// Redis, ZooKeeper): the stores, their flags (--<name>) and how to reach
// them come from the coordinator table (coordinator_factory.h).
// `snowid cluster confirm-loss --state-dir DIR`: confirm a store loss the
// node using DIR reported (src/coord/lease_options.h, kConfirmStoreLossFile).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "coordinator_factory.h"
#include "lease_options.h"
#include "snowid/error.h"
#include "subcommand.h"

namespace snowid::cli {

class ClusterCommands final : public Subcommand {
 public:
  // Adds the `cluster` subcommand and its own subcommands to `app`.
  explicit ClusterCommands(CLI::App& app);

  bool parsed() const override;
  // Its exit code (0 done, 1 failed, 2 bad input; errors are one line on stderr).
  int run() const override;

 private:
  int list() const;
  int release() const;
  int confirm_loss() const;
  // The store the flags name (--etcd, --redis, ...) and how to reach it, or
  // the error that the flags name none or more than one, or are bad.
  Result<std::pair<const LeasingStore*, coord::StoreAccess>> chosen_store() const;

  CLI::App* cluster_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* release_ = nullptr;
  CLI::App* confirm_loss_ = nullptr;
  std::string state_dir_;
  std::vector<LeasingStore> stores_ = leasing_stores();
  std::vector<std::string> endpoints_ = std::vector<std::string>(stores_.size());  // per store
  std::string cluster_name_, user_, password_, node_id_;
  std::string timeout_ms_ = "2000";
  bool force_ = false;
};

}  // namespace snowid::cli
