// The ZooKeeper coordinator: a ZooKeeperClaim (zookeeper_claim.cc) driven by
// the leased coordinator (leased_coordinator.cc), and `snowid cluster`'s
// view of ZooKeeper.
#include "zookeeper_coordinator.h"

#include <fmt/format.h>
#include <zookeeper/zookeeper.h>

#include <map>

#include "cluster_admin.h"
#include "leased_coordinator.h"
#include "zookeeper_claim.h"
#include "zookeeper_session.h"

namespace snowid {

using std::chrono::milliseconds;

Result<std::vector<std::string>> parse_zookeeper_endpoints(std::string_view list) {
  return coord::parse_host_port_list(list, "ZooKeeper", {"zk://"});
}

Status check_zookeeper_options(const ZooKeeperOptions& options) {
  Status valid = check_lease_options(options);
  if (!valid.ok()) return valid;
  if (options.endpoints.empty()) return invalid_argument("no ZooKeeper endpoint is configured");
  if (options.tick_time.count() < 1)
    return invalid_argument("zookeeper_tick_ms must be at least 1");
  const milliseconds renew_every = std::chrono::duration_cast<milliseconds>(options.lease_ttl) / 3;
  if (options.tick_time / 2 + options.safety_margin >= renew_every) {
    return invalid_argument(fmt::format(
        "with ZooKeeper a renewal counts once the next one, sent tickTime / 2 after its answer, "
        "is acknowledged: tickTime / 2 + lease_safety_margin_ms ({} ms) must stay below "
        "lease_ttl_s / 3 ({} ms); raise lease_ttl_s",
        (options.tick_time / 2 + options.safety_margin).count(), renew_every.count()));
  }
  return {};
}

Result<std::unique_ptr<Coordinator>> make_zookeeper_coordinator(const ZooKeeperOptions& options) {
  Status valid = check_zookeeper_options(options);
  if (!valid.ok()) return valid.error();
  return coord::make_leased_coordinator(
      std::make_unique<coord::ZooKeeperClaim>(options),
      coord::leased_store("zookeeper", options, options.endpoints, options.endpoints_text));
}

namespace {

Result<std::unique_ptr<coord::ZooKeeperSession>> open_checked(const ZooKeeperOptions& options,
                                                              coord::StoreCounters& counters) {
  return coord::connect_checked(options, [&counters](const ZooKeeperOptions& checked) {
    return coord::ZooKeeperSession::open(checked, counters);
  });
}

Error unreadable(const coord::ZnodeAnswer& answer, const std::string& path) {
  return Error{ErrorCode::kUnavailable, "cannot read " + answer.describe(path)};
}

}  // namespace

Result<std::vector<ClusterNode>> list_cluster(const ZooKeeperOptions& options) {
  coord::StoreCounters counters;
  auto session = open_checked(options, counters);
  if (!session.ok()) return session.error();
  coord::ZooKeeperSession& zk = **session;
  std::map<std::uint64_t, ClusterNode> nodes;
  const auto each_child = [&](const std::string& dir, auto visit) -> Status {
    std::vector<std::string> names;
    coord::ZnodeAnswer listed = zk.children(dir, &names);
    if (listed.code == ZNONODE) return {};  // the cluster never claimed here
    if (!listed.ok()) return unreadable(listed, dir);
    for (const std::string& name : names) {
      const auto id = coord::zookeeper_node_id_of(name);
      if (!id) continue;
      coord::Znode node;
      coord::ZnodeAnswer read = zk.get(dir + "/" + name, &node);
      if (read.code == ZNONODE) continue;  // gone meanwhile
      if (!read.ok()) return unreadable(read, dir + "/" + name);
      ClusterNode& row = nodes[*id];
      row.node_id = *id;
      visit(row, node);
    }
    return {};
  };
  Status claims = each_child(
      coord::zookeeper_claims_path(options.cluster),
      [](ClusterNode& row, const coord::Znode& node) { coord::set_claimed_by(row, node.data); });
  if (!claims.ok()) return claims.error();
  Status reservations = each_child(coord::zookeeper_reservations_path(options.cluster),
                                   [](ClusterNode& row, const coord::Znode& node) {
                                     auto parsed = coord::parse_reservation("", node.data);
                                     if (parsed.ok()) row.reservation = *parsed;
                                   });
  if (!reservations.ok()) return reservations.error();
  return coord::cluster_rows(std::move(nodes));
}

Status release_node_id(const ZooKeeperOptions& options, std::uint64_t node_id, bool force) {
  coord::StoreCounters counters;
  auto session = open_checked(options, counters);
  if (!session.ok()) return session.error();
  const std::string path = coord::zookeeper_claim_path(options.cluster, node_id);
  coord::Znode claim;
  coord::ZnodeAnswer read = (*session)->get(path, &claim);
  if (read.code == ZNONODE) return {};
  if (!read.ok()) return unreadable(read, path);
  if (!force) return coord::claim_is_alive(node_id, claim.data, "session");
  coord::ZnodeAnswer removed = (*session)->remove(path, claim.stat.version);
  if (!removed.ok() && removed.code != ZNONODE) {
    return Error{ErrorCode::kUnavailable, "cannot delete " + removed.describe(path)};
  }
  return {};
}

}  // namespace snowid
