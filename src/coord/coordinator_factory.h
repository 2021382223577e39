// Picks the coordinator a configuration names, and tells `snowid cluster`
// which stores lease node ids and how to reach them. The table of stores
// lives in coordinator_factory.cc: a new store is its files in src/coord,
// its section in CoordinatorOptions with its rows, and one line in that
// table (docs/design.md, "Adding a store").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cluster_admin.h"
#include "coordinator_options.h"
#include "snowid/coordinator.h"

namespace snowid {

// The names of the stores, in table order ("static", "etcd", ...).
std::vector<std::string> coordinator_names();

// True if `name` leases node ids from a store (a ceiling, no state file);
// false for a fixed node id or an unknown name.
bool coordinator_leases(const std::string& name);

// A store that leases node ids as `snowid cluster` reaches it: --<name>.
struct LeasingStore {
  std::string name;
  coord::ClusterTool tool;
};
// Every store for which coordinator_leases() holds, in table order.
std::vector<LeasingStore> leasing_stores();

// The store's own checks of a setup, beyond each option's syntax (for
// validate()). Ok for an unknown name: the option row refuses those.
Status check_coordinator(const CoordinatorSetup& setup);

// The coordinator `setup.options.kind` names, not yet claimed.
Result<std::unique_ptr<Coordinator>> make_coordinator(const CoordinatorSetup& setup);

}  // namespace snowid
