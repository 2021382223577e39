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

// Leaf's 10-bit workerId of datacenter 2, worker 7 under the Twitter layout.
TEST(JoinNodeId, IsTheDatacenterAboveTheWorkerAndUndoesTheSplit) {
  const Layout twitter;
  EXPECT_EQ(join_node_id(twitter, {.datacenter_id = 2, .worker_id = 7}), 71u);
  Layout narrow;
  narrow.worker_bits = 3;
  EXPECT_EQ(join_node_id(narrow, {.datacenter_id = 2, .worker_id = 7}), 23u);
  for (std::uint64_t node_id : {0u, 1u, 31u, 32u, 1023u}) {
    EXPECT_EQ(join_node_id(twitter, split_node_id(twitter, node_id)), node_id);
  }
}

}  // namespace
}  // namespace snowid
