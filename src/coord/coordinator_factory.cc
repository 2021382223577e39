// The table of coordinators: one row per store, naming how to check and
// make it. The server knows none of them by name; it reads a store's name,
// info and metrics from CoordinatorStats.
#include "coordinator_factory.h"

#include <fmt/format.h>

#include "etcd_settings.h"
#include "node_id.h"
#include "redis_settings.h"
#include "zookeeper_settings.h"

namespace snowid {
namespace {

Status no_checks(const CoordinatorSetup&) { return {}; }

Result<std::unique_ptr<Coordinator>> make_fixed(const CoordinatorSetup& setup) {
  const NodeIdParts node = split_node_id(setup.layout, setup.node_id);
  return make_static_coordinator(setup.layout, node.datacenter_id, node.worker_id);
}

struct CoordinatorKind {
  const char* name;
  bool leases;  // see coordinator_leases()
  Status (*check)(const CoordinatorSetup&);
  Result<std::unique_ptr<Coordinator>> (*make)(const CoordinatorSetup&);
};

const CoordinatorKind kCoordinators[] = {
    {"static", false, no_checks, make_fixed},
    {"etcd", true, check_etcd_setup, make_etcd_coordinator},
    {"redis", true, check_redis_setup, make_redis_coordinator},
    {"zookeeper", true, check_zookeeper_setup, make_zookeeper_coordinator},
};

const CoordinatorKind* find(const std::string& name) {
  for (const CoordinatorKind& kind : kCoordinators) {
    if (name == kind.name) return &kind;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> coordinator_names() {
  std::vector<std::string> names;
  for (const CoordinatorKind& kind : kCoordinators) names.emplace_back(kind.name);
  return names;
}

bool coordinator_leases(const std::string& name) {
  const CoordinatorKind* kind = find(name);
  return kind != nullptr && kind->leases;
}

Status check_coordinator(const CoordinatorSetup& setup) {
  const CoordinatorKind* kind = find(setup.options.kind);
  return kind == nullptr ? Status{} : kind->check(setup);
}

Result<std::unique_ptr<Coordinator>> make_coordinator(const CoordinatorSetup& setup) {
  const CoordinatorKind* kind = find(setup.options.kind);
  if (kind == nullptr) {
    return invalid_argument(fmt::format("unknown coordinator '{}'", setup.options.kind));
  }
  return kind->make(setup);
}

}  // namespace snowid
