// Splitting a node id into its datacenter and worker ids, and joining them:
// the node id is the datacenter id followed by the worker id, worker_bits
// wide, the two fields that sit beside each other in every ID of a layout
// (Meituan Leaf's 10-bit workerId under the Twitter layout). Header-only, no state,
// safe from any thread.
#pragma once

#include <cstdint>

#include "snowid/layout.h"

namespace snowid {

struct NodeIdParts {
  std::uint64_t datacenter_id = 0;
  std::uint64_t worker_id = 0;
};

// The datacenter and worker ids of `node_id` under `layout`: the bits above
// layout.worker_bits and the low worker_bits bits. Requires worker_bits < 64
// (every valid layout); a node id too wide for the layout is not checked here
// (the callers have checked it against the layout already).
inline NodeIdParts split_node_id(const Layout &layout, std::uint64_t node_id) {
  const std::uint64_t worker_mask = (std::uint64_t{1} << layout.worker_bits) - 1;
  return {.datacenter_id = node_id >> layout.worker_bits, .worker_id = node_id & worker_mask};
}

// The node id of `parts` under `layout`: datacenter_id << worker_bits |
// worker_id, the inverse of split_node_id. Requires worker_bits < 64 and
// parts that fit the layout (checked by the callers).
inline std::uint64_t join_node_id(const Layout &layout, NodeIdParts parts) {
  return parts.datacenter_id << layout.worker_bits | parts.worker_id;
}

}  // namespace snowid
