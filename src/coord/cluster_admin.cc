#include "cluster_admin.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "leased_claim.h"

namespace snowid::coord {

void set_claimed_by(ClusterNode& node, std::string_view value) {
  node.claimed = true;
  auto record = ClaimRecord::parse(value);
  if (!record.ok()) {
    node.holder = "(unreadable claim value)";
    return;
  }
  node.holder = record->holder();
  node.addresses = fmt::format("{}", fmt::join(record->addresses, ","));
  node.started = record->started;
  node.published_wall_time = record->wall_time;
}

std::vector<ClusterNode> cluster_rows(std::map<std::uint64_t, ClusterNode> nodes) {
  std::vector<ClusterNode> rows;
  rows.reserve(nodes.size());
  for (auto& [id, node] : nodes) rows.push_back(std::move(node));
  return rows;
}

Error claim_is_alive(std::uint64_t node_id, std::string_view value, std::string_view lease) {
  return Error{ErrorCode::kUnavailable,
               fmt::format("node id {} is claimed by {} and its {} is alive; stop that "
                           "node, or pass --force to take the id away from it",
                           node_id, describe_claim_value(value), lease)};
}

}  // namespace snowid::coord
