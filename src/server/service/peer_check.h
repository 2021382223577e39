// The static-mode guard against two nodes with one node id (option peers):
// at start, before it listens, a node asks each listed peer's GET /v1/info
// and refuses to start if a peer that answers reports the same datacenter
// and worker, or a clock more than max_peer_clock_offset_ms away from ours
// (as the original Twitter service checked its peers at start).
//
// Best effort, and said so: it catches a fleet started one node at a time
// with a copied configuration, while the peers it lists are up. It cannot
// catch nodes started at the same instant (neither is serving yet), peers
// left out of the list, peers that are down (a warning, not a refusal), or
// a node id changed later by a restart with another configuration. Peers
// are asked over plain HTTP with this node's bearer token; cluster mode
// (etcd) is the guard that does not depend on timing.
#pragma once

#include <cstdint>

#include "service_config.h"
#include "snowid/error.h"

namespace snowid::server {

// Ok if no peer that answers within 2 s clashes; kUnavailable naming the
// peer and the clash otherwise. Unreachable peers are logged as warnings.
Status check_static_peers(const ServiceConfig& config, std::uint64_t datacenter_id,
                          std::uint64_t worker_id);

}  // namespace snowid::server
