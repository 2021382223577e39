// What `snowid cluster list|release` needs of every leasing store, and the
// pieces of a store's cluster view that every store shares. A store's row in
// the coordinator table (coordinator_factory.cc) carries its ClusterTool,
// made by cluster_tool<>() from the store's options type and endpoint
// parser; the CLI walks that table and knows no store by name.
//
// Thread-safety: the functions keep no state; each call connects anew.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "snowid/error.h"
#include "lease_options.h"

namespace snowid::coord {

// How the operator reaches a store from the command line.
struct StoreAccess {
  std::string endpoints;  // HOST:PORT[,HOST:PORT...] as given after the store's flag
  std::string cluster;
  std::string user;  // optional
  std::string password;
  std::chrono::milliseconds request_timeout{2000};
};

// `snowid cluster`'s operations on one store; all null for a store that
// leases nothing ("static").
struct ClusterTool {
  const char* title = nullptr;           // the store as prose names it: "ZooKeeper"
  const char* endpoints_help = nullptr;  // the help of the store's flag
  const char* user_help = nullptr;       // what --user names there: "ZooKeeper digest user"
  Result<std::vector<ClusterNode>> (*list)(const StoreAccess& access) = nullptr;
  Status (*release)(const StoreAccess& access, std::uint64_t node_id, bool force) = nullptr;
};

namespace cluster_tool_detail {

using ParseEndpoints = Result<std::vector<std::string>> (*)(std::string_view);

template <typename Options, ParseEndpoints parse_endpoints>
Result<Options> options_of(const StoreAccess& access) {
  auto endpoints = parse_endpoints(access.endpoints);
  if (!endpoints.ok()) return endpoints.error();
  Options options;
  options.endpoints = std::move(*endpoints);
  options.cluster = access.cluster;
  options.user = access.user;
  options.password = access.password;
  options.request_timeout = access.request_timeout;
  return options;
}

template <typename Options, ParseEndpoints parse_endpoints>
Result<std::vector<ClusterNode>> list(const StoreAccess& access) {
  auto options = options_of<Options, parse_endpoints>(access);
  if (!options.ok()) return options.error();
  return list_cluster(*options);
}

template <typename Options, ParseEndpoints parse_endpoints>
Status release(const StoreAccess& access, std::uint64_t node_id, bool force) {
  auto options = options_of<Options, parse_endpoints>(access);
  if (!options.ok()) return options.error();
  return release_node_id(*options, node_id, force);
}

}  // namespace cluster_tool_detail

// The ClusterTool of the store whose options are `Options`: its endpoints
// parsed by `parse_endpoints`, then list_cluster() and release_node_id()
// for those options (declared beside the store's coordinator).
template <typename Options, cluster_tool_detail::ParseEndpoints parse_endpoints>
constexpr ClusterTool cluster_tool(const char* title, const char* endpoints_help,
                                   const char* user_help) {
  return {title, endpoints_help, user_help, &cluster_tool_detail::list<Options, parse_endpoints>,
          &cluster_tool_detail::release<Options, parse_endpoints>};
}

// `connect(options)` once `options` pass check_lease_options(), else why not.
template <typename Options, typename Connect>
auto connect_checked(const Options& options, Connect connect) -> decltype(connect(options)) {
  Status valid = check_lease_options(options);
  if (!valid.ok()) return valid.error();
  return connect(options);
}

// Marks `node` claimed by the holder the claim value `value` names (holder,
// addresses, start and published wall time), or by "(unreadable claim
// value)" if it does not parse.
void set_claimed_by(ClusterNode& node, std::string_view value);

// The rows of `nodes`, in node id order.
std::vector<ClusterNode> cluster_rows(std::map<std::uint64_t, ClusterNode> nodes);

// kUnavailable: `node_id` is claimed by the holder `value` names and its
// `lease` ("lease", "session") is alive; --force takes it away.
Error claim_is_alive(std::uint64_t node_id, std::string_view value, std::string_view lease);

}  // namespace snowid::coord
