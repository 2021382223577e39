// What every store that leases node ids shares (etcd, Redis, ZooKeeper): the
// options of the lease and the reservation, and the rows `snowid cluster
// list` shows.
//
// Each store keeps, per node id, a claim that lives only as long as its
// holder's lease and a reservation H (Unix ms) that outlives every holder.
// A holder issues only in time units starting at or before H, writes H only
// while its claim is provably its own, and a new holder starts strictly above
// the H it read when it took the id. The stores differ only in how they make
// those writes conditional (etcd: a Txn on the claim's create_revision;
// Redis: a Lua script comparing the holder's token; ZooKeeper: a multi that
// first checks the holder's token znode).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "snowid/clock.h"
#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid {

// The file an operator creates in a node's state directory to confirm a
// store loss the node reported (`snowid cluster confirm-loss --state-dir
// DIR`): the node records the store's new incarnation and is ready again.
inline constexpr const char* kConfirmStoreLossFile = "confirm-store-loss";

struct LeaseOptions {
  std::string cluster;  // the snowid cluster name: [A-Za-z0-9_.-]+
  Layout layout;        // its node bits give the range of node ids

  // Taken if free; else the lowest free id. See node_id_from_pod_name().
  std::optional<std::uint64_t> preferred_node_id;
  // Claim only the preferred id: while another node holds it, claim() fails
  // with kAlreadyExists naming the holder (the caller retries or gives up).
  // For fleets whose node ids must match their configuration.
  bool require_preferred_node_id = false;

  // Lease time to live. The node stops issuing `safety_margin` before the
  // lease could expire, counting from when it sent the last acknowledged
  // renewal; renewals go out every lease_ttl / 3.
  std::chrono::seconds lease_ttl{10};
  std::chrono::milliseconds safety_margin{1000};
  // The reservation is raised to now + reserve_ahead when less than
  // reserve_min_left is left, from the background thread.
  std::chrono::milliseconds reserve_ahead{3000};
  std::chrono::milliseconds reserve_min_left{1000};
  // Deadline of each request to the store (each endpoint tried gets its own).
  std::chrono::milliseconds request_timeout{2000};
  // Refuse to claim if this node's clock is further than this from the mean
  // wall-clock time the live peers published. 0 disables the check.
  std::chrono::milliseconds max_peer_clock_offset{10000};

  // Another cluster in the same store whose layout (bits, unit, epoch) is
  // this one's would issue the same IDs under the node ids both use: its
  // claims are refused, naming it, unless the operator says their IDs never
  // meet (different tables, say) by setting this.
  bool share_id_space = false;

  // Addresses this node serves on, published in its claim for operators.
  std::vector<std::string> advertised_addresses;
  // Wall clock for reservations and the peer check; nullptr: SystemClock.
  Clock* clock = nullptr;
};

// kInvalidArgument naming the first option that cannot work (cluster name,
// layout, preferred id beyond it, TTL, margin, reserve window, offset).
Status check_lease_options(const LeaseOptions& options);

// What `snowid cluster list` shows: one row per node id that has a claim or
// a reservation.
struct ClusterNode {
  std::uint64_t node_id = 0;
  bool claimed = false;
  std::string holder;                    // "host pid=N instance=…", "" if unclaimed
  std::string addresses;                 // comma-separated, as published
  std::chrono::milliseconds started{0};  // the holder's start time (Unix ms)
  std::chrono::milliseconds published_wall_time{0};
  std::optional<std::chrono::seconds> lease_time_left;
  std::chrono::milliseconds reservation{0};  // 0: none
};

}  // namespace snowid
