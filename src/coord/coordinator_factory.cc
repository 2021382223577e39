// The table of coordinators: one row per store, naming how to check and
// make it, and (for a store that leases node ids) how `snowid cluster`
// lists and releases its claims. Neither the server nor the CLI knows a
// store by name; the server reads a store's name, info and metrics from
// CoordinatorStats.
#include "coordinator_factory.h"

#include <fmt/format.h>

#include <span>

#include "disposable_coordinator.h"
#include "etcd_settings.h"
#include "node_id.h"
#include "redis_settings.h"
#include "sql_settings.h"
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
  Status (*check)(const CoordinatorSetup&);
  Result<std::unique_ptr<Coordinator>> (*make)(const CoordinatorSetup&);
  // `snowid cluster`'s view; a store with one leases node ids (see
  // coordinator_leases()).
  coord::ClusterTool cluster{};
};

const CoordinatorKind kCoordinators[] = {
    {"static", no_checks, make_fixed},
    {"etcd", check_etcd_setup, make_etcd_coordinator,
     coord::cluster_tool<EtcdOptions, parse_etcd_endpoints>(
         "etcd", "etcd endpoints: HOST:PORT[,HOST:PORT...]", "etcd ACL user")},
    {"redis", check_redis_setup, make_redis_coordinator,
     coord::cluster_tool<RedisOptions, parse_redis_endpoints>(
         "Redis", "Redis servers: HOST:PORT[,HOST:PORT...]", "Redis ACL user")},
    {"zookeeper", check_zookeeper_setup, make_zookeeper_coordinator,
     coord::cluster_tool<ZooKeeperOptions, parse_zookeeper_endpoints>(
         "ZooKeeper", "ZooKeeper servers: HOST:PORT[,HOST:PORT...]", "ZooKeeper digest user")},
    {"postgres", check_postgres_setup, make_postgres_coordinator,
     coord::cluster_tool<PostgresOptions, parse_postgres_endpoints>(
         "PostgreSQL", "PostgreSQL: URL or HOST:PORT[,HOST:PORT...]", "PostgreSQL user")},
    {"mysql", check_mysql_setup, make_mysql_coordinator,
     coord::cluster_tool<MysqlOptions, parse_mysql_endpoints>(
         "MySQL", "MariaDB/MySQL: URL or HOST:PORT[,HOST:PORT...]", "MySQL user")},
};

// node_id_policy = "disposable": the stores that give a new node id at
// every start (disposable_coordinator.h), one line each.
const CoordinatorKind kDisposable[] = {
    {"postgres", check_postgres_disposable, make_postgres_disposable},
    {"mysql", check_mysql_disposable, make_mysql_disposable},
};

bool leases(const CoordinatorKind& kind) { return kind.cluster.list != nullptr; }

const CoordinatorKind* find(std::span<const CoordinatorKind> table, const std::string& name) {
  for (const CoordinatorKind& kind : table) {
    if (name == kind.name) return &kind;
  }
  return nullptr;
}

const CoordinatorKind* find(const std::string& name) { return find(kCoordinators, name); }

// The row of `options`' store in the table its node_id_policy picks;
// kInvalidArgument if that table has none.
Result<const CoordinatorKind*> find(const CoordinatorOptions& options) {
  if (options.node_id_policy != kDisposablePolicy) return find(options.kind);
  const CoordinatorKind* kind = find(kDisposable, options.kind);
  if (kind != nullptr) return kind;
  std::string names;
  for (const CoordinatorKind& store : kDisposable) {
    names += fmt::format("{}\"{}\"", names.empty() ? "" : " or ", store.name);
  }
  return invalid_argument(fmt::format(
      "node_id_policy = \"disposable\" needs coordinator = {} (not \"{}\")", names, options.kind));
}

}  // namespace

std::vector<std::string> coordinator_names() {
  std::vector<std::string> names;
  for (const CoordinatorKind& kind : kCoordinators) names.emplace_back(kind.name);
  return names;
}

bool coordinator_leases(const std::string& name) {
  const CoordinatorKind* kind = find(name);
  return kind != nullptr && leases(*kind);
}

std::vector<LeasingStore> leasing_stores() {
  std::vector<LeasingStore> stores;
  for (const CoordinatorKind& kind : kCoordinators) {
    if (leases(kind)) stores.push_back({kind.name, kind.cluster});
  }
  return stores;
}

Status check_coordinator(const CoordinatorSetup& setup) {
  auto kind = find(setup.options);
  if (!kind.ok()) return kind.error();
  return *kind == nullptr ? Status{} : (*kind)->check(setup);
}

Result<std::unique_ptr<Coordinator>> make_coordinator(const CoordinatorSetup& setup) {
  auto kind = find(setup.options);
  if (!kind.ok()) return kind.error();
  if (*kind == nullptr) {
    return invalid_argument(fmt::format("unknown coordinator '{}'", setup.options.kind));
  }
  return (*kind)->make(setup);
}

}  // namespace snowid
