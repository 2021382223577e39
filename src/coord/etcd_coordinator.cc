// The etcd coordinator: a NodeClaim (etcd_claim.cc) driven by the leased
// coordinator (leased_coordinator.cc), and `snowid cluster`'s view of etcd.
#include "etcd_coordinator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <map>

#include "etcd_claim.h"
#include "etcd_client.h"
#include "leased_coordinator.h"

namespace snowid {

using std::chrono::milliseconds;

namespace {

Result<std::unique_ptr<coord::EtcdClient>> connect_checked(const EtcdOptions& options) {
  Status valid = check_lease_options(options);
  if (!valid.ok()) return valid.error();
  return coord::EtcdClient::connect(options);
}

}  // namespace

Result<std::unique_ptr<Coordinator>> make_etcd_coordinator(const EtcdOptions& options) {
  auto client = connect_checked(options);
  if (!client.ok()) return client.error();
  return coord::make_leased_coordinator(
      std::make_unique<coord::NodeClaim>(std::move(*client), options),
      coord::leased_store("etcd", options, options.endpoints, options.endpoints_text));
}

Result<std::vector<ClusterNode>> list_cluster(const EtcdOptions& options) {
  auto client = connect_checked(options);
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
      node.claimed = true;
      auto record = coord::ClaimRecord::parse(kv.value());
      if (record.ok()) {
        node.holder = record->holder();
        node.addresses = fmt::format("{}", fmt::join(record->addresses, ","));
        node.started = record->started;
        node.published_wall_time = record->wall_time;
      } else {
        node.holder = "(unreadable claim value)";
      }
      if (kv.lease() != 0) {
        auto ttl = (*client)->lease_time_to_live(kv.lease());
        if (ttl.ok() && ttl->ttl() >= 0) node.lease_time_left = std::chrono::seconds{ttl->ttl()};
      }
    }
  }
  std::vector<ClusterNode> rows;
  for (auto& [id, node] : nodes) rows.push_back(std::move(node));
  return rows;
}

Status release_node_id(const EtcdOptions& options, std::uint64_t node_id, bool force) {
  auto client = connect_checked(options);
  if (!client.ok()) return client.error();
  const std::string key = coord::claim_key(options.cluster, node_id);
  etcdserverpb::RangeRequest request;
  request.set_key(key);
  auto found = (*client)->range(request);
  if (!found.ok()) return found.error();
  if (found->kvs_size() == 0) return {};
  const auto& kv = found->kvs(0);
  if (!force) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("node id {} is claimed by {} and its lease is alive; stop that "
                             "node, or pass --force to take the id away from it",
                             node_id, coord::describe_claim_value(kv.value()))};
  }
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
