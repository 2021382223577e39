// A cluster-mode node's own marks and the store incarnation it served
// (src/server/cluster_marks.h), on a temporary state directory: what a store
// that lost its data can and cannot make the node do.
#include "cluster_marks.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace snowid::server {
namespace {

using std::chrono::milliseconds;

class ClusterMarksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "marks-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  ClusterMarks marks() const { return ClusterMarks(dir_, "redis", "c", "test layout"); }

  static Claim claim(std::uint64_t node_id, milliseconds floor, milliseconds ceiling,
                     milliseconds created, bool created_now = false) {
    Claim c;
    c.node_id = node_id;
    c.floor = floor;
    c.ceiling = ceiling;
    c.store_created = created;
    c.store_created_now = created_now;
    return c;
  }

  std::filesystem::path dir_;
};

TEST_F(ClusterMarksTest, ARestartStartsAboveItsOwnMarkWhateverTheStoreSays) {
  {
    ClusterMarks first = marks();
    auto start = first.prepare(claim(0, milliseconds{1000}, milliseconds{5000}, milliseconds{7}));
    ASSERT_TRUE(start.ok()) << start.error().message;
    EXPECT_EQ(start->above, milliseconds{1000});
    ASSERT_TRUE(first.cover(0, milliseconds{9000}).ok());
  }
  // The store lost H: it offers a floor below what this node issued.
  ClusterMarks second = marks();
  auto start = second.prepare(claim(0, milliseconds{0}, milliseconds{4000}, milliseconds{7}));
  ASSERT_TRUE(start.ok()) << start.error().message;
  EXPECT_EQ(start->above, milliseconds{9000});
  EXPECT_NE(start->source.find("own mark"), std::string::npos) << start->source;
}

TEST_F(ClusterMarksTest, ACleanStopLowersTheMarkToTheLastIssuedUnit) {
  {
    ClusterMarks first = marks();
    ASSERT_TRUE(
        first.prepare(claim(2, milliseconds{1000}, milliseconds{5000}, milliseconds{7})).ok());
    ASSERT_TRUE(first.cover(2, milliseconds{9000}).ok());
    ASSERT_TRUE(first.lower(2, milliseconds{6000}).ok());
  }
  auto start = marks().prepare(claim(2, milliseconds{0}, milliseconds{4000}, milliseconds{7}));
  ASSERT_TRUE(start.ok()) << start.error().message;
  EXPECT_EQ(start->above, milliseconds{6000});
}

TEST_F(ClusterMarksTest, AReclaimOfTheSameIdReusesTheOpenMark) {
  ClusterMarks node = marks();
  ASSERT_TRUE(node.prepare(claim(1, milliseconds{1000}, milliseconds{5000}, milliseconds{7})).ok());
  ASSERT_TRUE(node.cover(1, milliseconds{8000}).ok());
  auto again = node.prepare(claim(1, milliseconds{2000}, milliseconds{9000}, milliseconds{7}));
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->above, milliseconds{8000});  // the old generator issued up to its ceiling
}

TEST_F(ClusterMarksTest, AnotherCreatedMarkerIsALossUntilAnOperatorConfirms) {
  ASSERT_TRUE(marks().prepare(claim(0, milliseconds{0}, milliseconds{5000}, milliseconds{7})).ok());
  {
    ClusterMarks node = marks();
    ASSERT_TRUE(node.prepare(claim(0, milliseconds{0}, milliseconds{6000}, milliseconds{8})).ok());
    ASSERT_TRUE(node.loss().has_value());
    EXPECT_NE(node.loss()->find("reads 8"), std::string::npos) << *node.loss();
    EXPECT_NE(node.loss()->find("when it read 7"), std::string::npos) << *node.loss();
    EXPECT_EQ(node.losses(), 1u);
    node.poll_confirmation();
    EXPECT_TRUE(node.loss().has_value());
    std::ofstream(dir_ / kConfirmStoreLossFile) << "yes\n";
    node.poll_confirmation();
    EXPECT_FALSE(node.loss().has_value());
    EXPECT_FALSE(std::filesystem::exists(dir_ / kConfirmStoreLossFile));
  }
  // The new incarnation is the one served now.
  ClusterMarks node = marks();
  ASSERT_TRUE(node.prepare(claim(0, milliseconds{0}, milliseconds{7000}, milliseconds{8})).ok());
  EXPECT_FALSE(node.loss().has_value());
}

TEST_F(ClusterMarksTest, AnUnconfirmedLossIsReportedAgainAfterARestart) {
  ASSERT_TRUE(marks().prepare(claim(0, milliseconds{0}, milliseconds{5000}, milliseconds{7})).ok());
  ASSERT_TRUE(marks().prepare(claim(0, milliseconds{0}, milliseconds{6000}, milliseconds{8})).ok());
  ClusterMarks restarted = marks();
  ASSERT_TRUE(
      restarted.prepare(claim(0, milliseconds{0}, milliseconds{7000}, milliseconds{8})).ok());
  EXPECT_TRUE(restarted.loss().has_value());
}

TEST_F(ClusterMarksTest, AMarkerTheClaimWroteForAClusterServedBeforeIsALoss) {
  ASSERT_TRUE(marks().prepare(claim(3, milliseconds{0}, milliseconds{5000}, milliseconds{7})).ok());
  // A node from before the incarnation record: its marks alone say it served.
  std::filesystem::remove(dir_ / "cluster-redis-c.created");
  ClusterMarks node = marks();
  ASSERT_TRUE(
      node.prepare(claim(3, milliseconds{0}, milliseconds{6000}, milliseconds{9}, true)).ok());
  ASSERT_TRUE(node.loss().has_value());
  EXPECT_NE(node.loss()->find("no trace of cluster 'c'"), std::string::npos) << *node.loss();
}

TEST_F(ClusterMarksTest, AFirstClaimOnAFreshStateDirectoryIsNoLoss) {
  ClusterMarks node = marks();
  ASSERT_TRUE(
      node.prepare(claim(0, milliseconds{0}, milliseconds{5000}, milliseconds{9}, true)).ok());
  EXPECT_FALSE(node.loss().has_value());
  EXPECT_EQ(node.losses(), 0u);
}

}  // namespace
}  // namespace snowid::server
