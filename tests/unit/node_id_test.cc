// Splitting a node id into datacenter and worker ids (src/common/node_id.h).
#include "node_id.h"

#include <gtest/gtest.h>

namespace snowid {
namespace {

struct SplitCase {
  int worker_bits;
  std::uint64_t node_id;
  std::uint64_t datacenter_id;
  std::uint64_t worker_id;
};

TEST(SplitNodeId, HighBitsAreTheDatacenterLowWorkerBitsTheWorker) {
  const SplitCase cases[] = {
      {5, (3u << 5) | 17u, 3, 17},  // the default layout's 5 worker bits
      {0, 9, 9, 0},                 // no worker bits: the whole id is the datacenter
      {10, 1023, 0, 1023},          // every worker bit kept
      {10, 1024, 1, 0},             // the first datacenter bit
      {5, 0, 0, 0},
  };
  for (const SplitCase& c : cases) {
    Layout layout;
    layout.worker_bits = c.worker_bits;
    const NodeIdParts parts = split_node_id(layout, c.node_id);
    EXPECT_EQ(parts.datacenter_id, c.datacenter_id) << c.worker_bits << " " << c.node_id;
    EXPECT_EQ(parts.worker_id, c.worker_id) << c.worker_bits << " " << c.node_id;
  }
}

}  // namespace
}  // namespace snowid
