// snowidd's coordination options: which store gives this node its node id
// (coordinator_factory.h), the settings every store shares, and each
// store's own section. The rows that fill them are declared here too, so
// that a new store adds its section and its rows in src/coord without the
// server learning its name.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "etcd_settings.h"
#include "lease_options.h"
#include "option_rows.h"
#include "redis_settings.h"
#include "snowid/error.h"
#include "snowid/layout.h"
#include "sql_settings.h"
#include "zookeeper_settings.h"

namespace snowid {

struct CoordinatorOptions {
  // A name in the factory's table. "static" uses datacenter_id/worker_id as
  // given; a leasing store ("etcd") leases a node id, preferring them (or
  // the StatefulSet ordinal of the hostname with node_id_from_hostname).
  std::string kind = "static";
  std::string cluster = "snowid";
  bool node_id_from_hostname = false;
  // Static mode: HOST:PORT of other nodes' HTTP listeners, comma-separated,
  // asked at start for their node id and clock (src/server/peer_check.h).
  std::string peers;
  // "prefer": the configured id if free, else the lowest free one.
  // "require": only the configured id; wait (up to claim_timeout) while
  // another node holds it, then exit naming the holder.
  std::string node_id_policy = "prefer";
  std::chrono::seconds lease_ttl{10};
  std::chrono::milliseconds lease_safety_margin{1000};
  std::chrono::milliseconds max_peer_clock_offset{10000};
  bool share_id_space = false;  // LeaseOptions::share_id_space
  std::chrono::milliseconds claim_timeout{30000};
  // Deadline of each request to the store (each endpoint tried gets its own).
  std::chrono::milliseconds store_request_timeout{2000};

  // Each store's own section.
  EtcdSettings etcd;
  RedisSettings redis;
  ZooKeeperSettings zookeeper;
  PostgresSettings postgres;
  MysqlSettings mysql;
};

// The coordination rows of snowidd's option table, in table order.
OptionRows<CoordinatorOptions> coordinator_option_rows();

// "" if the coordinator keeps a fixed node id (no lease, so the node keeps
// its own state file); else where that holds (`coordinator = "static"`).
std::string outside_fixed_node_id(const CoordinatorOptions& options);

// The node id this node uses (a fixed id) or asks for (a leased one): the
// StatefulSet ordinal of the hostname with node_id_from_hostname, else
// datacenter_id << worker_bits | worker_id. Reads the hostname once.
// kInvalidArgument if the hostname names no ordinal of the layout, or if a
// fixed id would come from the hostname and datacenter_id or worker_id is set too.
Result<std::uint64_t> configured_node_id(const CoordinatorOptions& options, const Layout& layout,
                                         std::uint64_t datacenter_id, std::uint64_t worker_id);

// Everything a coordinator is made from (make_coordinator()).
struct CoordinatorSetup {
  CoordinatorOptions options;
  Layout layout;
  std::uint64_t node_id = 0;  // configured_node_id()
  // The addresses this node serves on, published with a leased claim.
  std::vector<std::string> advertised_addresses;
};

// The options every leasing store shares, from `setup`.
LeaseOptions lease_options(const CoordinatorSetup& setup);
// What validate() checks for every leasing store: the lease's TTL and margin.
Status check_lease_setup(const CoordinatorSetup& setup);

// A warning for a lease whose store requests may take longer than a third
// of it (the renewal period): a renewal that waits that long on one store
// member that stopped answering can leave too little of the lease to try
// another, so the node loses its claim to a single slow member. None when
// the timeout fits.
std::optional<std::string> lease_timing_warning(const CoordinatorOptions& options);

}  // namespace snowid
