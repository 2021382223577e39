// The MAC + PID node id against vectors computed by the Java code that
// MyBatis-Plus's Sequence and Hutool's IdUtil run (java.lang.String.hashCode
// and the byte arithmetic on a real JVM), and its collision odds.
#include "mac_pid.h"

#include <gtest/gtest.h>

#include <array>

namespace snowid {
namespace {

TEST(MacPid, DatacenterIdFromTheLastTwoMacBytesMatchesTheJavaLibraries) {
  const std::array<std::uint8_t, 6> local{0x02, 0xfc, 0x00, 0x00, 0x00, 0x01};
  const std::array<std::uint8_t, 6> vendor{0x00, 0x1a, 0x2b, 0x3c, 0xd4, 0xe5};
  const std::array<std::uint8_t, 6> all_ones{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(mac_datacenter_id(local, 31), 4u);
  EXPECT_EQ(mac_datacenter_id(vendor, 31), 23u);
  EXPECT_EQ(mac_datacenter_id(all_ones, 31), 31u);
  EXPECT_EQ(mac_datacenter_id(all_ones, 0), 0u);  // a layout without datacenter bits
}

TEST(MacPid, WorkerIdFromTheJavaHashOfDatacenterAndPidMatchesTheJavaLibraries) {
  EXPECT_EQ(pid_worker_id(0, 1234, 31), 18u);
  EXPECT_EQ(pid_worker_id(4, 4242, 31), 16u);
  EXPECT_EQ(pid_worker_id(31, 4194304, 31), 1u);
  EXPECT_EQ(pid_worker_id(17, 1, 31), 11u);
}

TEST(MacPid, ThisMachinesPairIsWithinTheLayout) {
  Layout layout;  // twitter: 5 + 5 bits
  auto id = mac_pid_node_id(layout, 1234, std::nullopt);
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_LE(id->datacenter_id, 31u);
  EXPECT_EQ(id->worker_id, pid_worker_id(id->datacenter_id, 1234, 31));
  EXPECT_FALSE(id->how.empty());
  auto missing = mac_pid_node_id(layout, 1, std::string("no-such-interface0"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidArgument);
}

TEST(MacPid, CollisionOddsAreTheBirthdayBound) {
  Layout layout;
  EXPECT_DOUBLE_EQ(mac_pid_collision_odds(layout, 1, false), 0.0);
  EXPECT_NEAR(mac_pid_collision_odds(layout, 2, false), 1.0 / 1024, 1e-12);
  EXPECT_NEAR(mac_pid_collision_odds(layout, 2, true), 1.0 / 32, 1e-12);
  EXPECT_NEAR(mac_pid_collision_odds(layout, 38, false), 0.5, 0.02);
  EXPECT_NEAR(mac_pid_collision_odds(layout, 7, true), 0.5, 0.03);
  EXPECT_DOUBLE_EQ(mac_pid_collision_odds(layout, 33, true), 1.0);  // pigeonhole
}

}  // namespace
}  // namespace snowid
