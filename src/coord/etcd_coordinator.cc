// The etcd coordinator: an EtcdClaim (etcd_claim.cc) driven by the leased
// coordinator (leased_coordinator.cc), and `snowid cluster`'s view of etcd.
#include "etcd_coordinator.h"

#include <cstdlib>
#include <map>

#include "cluster_admin.h"
#include "etcd_claim.h"
#include "etcd_client.h"
#include "leased_coordinator.h"

namespace snowid {

using std::chrono::milliseconds;

Result<std::unique_ptr<Coordinator>> make_etcd_coordinator(const EtcdOptions& options) {
  return coord::make_leased_coordinator<coord::EtcdClaim>(
      "etcd", options, coord::connect_checked(options, coord::EtcdClient::connect));
}

Result<std::vector<ClusterNode>> list_cluster(const EtcdOptions& options) {
  auto client = coord::connect_checked(options, coord::EtcdClient::connect);
  if (!client.ok()) return client.error();
  std::map<std::uint64_t, ClusterNode> nodes;
  for (const std::string& prefix :
       {coord::claims_prefix(options.cluster), coord::reservations_prefix(options.cluster)}) {
    etcdserverpb::RangeRequest request;
    request.set_key(prefix);
    request.set_range_end(coord::prefix_end(prefix));
    auto listed = (*client)->range(request);
    if (!listed.ok()) return listed.error();
    const bool claims = prefix == coord::claims_prefix(options.cluster);
    for (const auto& kv : listed->kvs()) {
      const auto id = coord::node_id_of_key(kv.key());
      if (!id) continue;
      ClusterNode& node = nodes[*id];
      node.node_id = *id;
      if (!claims) {
        node.reservation = milliseconds{std::strtoll(kv.value().c_str(), nullptr, 10)};
        continue;
      }
      coord::set_claimed_by(node, kv.value());
      if (kv.lease() != 0) {
        auto ttl = (*client)->lease_time_to_live(kv.lease());
        if (ttl.ok() && ttl->ttl() >= 0) node.lease_time_left = std::chrono::seconds{ttl->ttl()};
      }
    }
  }
  return coord::cluster_rows(std::move(nodes));
}

Status release_node_id(const EtcdOptions& options, std::uint64_t node_id, bool force) {
  auto client = coord::connect_checked(options, coord::EtcdClient::connect);
  if (!client.ok()) return client.error();
  const std::string key = coord::claim_key(options.cluster, node_id);
  etcdserverpb::RangeRequest request;
  request.set_key(key);
  auto found = (*client)->range(request);
  if (!found.ok()) return found.error();
  if (found->kvs_size() == 0) return {};
  const auto& kv = found->kvs(0);
  if (!force) return coord::claim_is_alive(node_id, kv.value(), "lease");
  // Delete exactly the claim we looked at, then end its lease.
  etcdserverpb::TxnRequest txn;
  auto* same = txn.add_compare();
  same->set_key(key);
  same->set_target(etcdserverpb::Compare::CREATE);
  same->set_result(etcdserverpb::Compare::EQUAL);
  same->set_create_revision(kv.create_revision());
  txn.add_success()->mutable_request_delete_range()->set_key(key);
  auto deleted = (*client)->txn(txn);
  if (!deleted.ok()) return deleted.error();
  if (kv.lease() != 0) return (*client)->lease_revoke(kv.lease());
  return {};
}

}  // namespace snowid
