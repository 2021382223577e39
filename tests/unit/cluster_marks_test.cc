// A cluster-mode node's own marks and the store incarnation it served
// (src/server/cluster_marks.h), on a temporary state directory: what a store
// that lost its data can and cannot make the node do.
#include "cluster_marks.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "audit_format.h"
#include "snowid/decode.h"

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
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    std::filesystem::remove(audit_path());
  }

  ClusterMarks marks() const { return ClusterMarks(dir_, "redis", "c", layout()); }
  static Layout layout() { return *preset("twitter"); }

  static inline std::uint64_t generations_ = 0;  // each claim() a new claim
  // A claim whose store still holds a reservation as high as this node ever
  // marked (`store_reservation`, the largest by default): it did not go back.
  static Claim claim(std::uint64_t node_id, milliseconds floor, milliseconds ceiling,
                     milliseconds created, bool created_now = false,
                     milliseconds store_reservation = milliseconds::max()) {
    Claim c;
    c.node_id = node_id;
    c.floor = floor;
    c.ceiling = ceiling;
    c.store_reservation = store_reservation;
    c.generation = ++generations_;
    c.store_created = created;
    c.store_created_now = created_now;
    c.datacenter_id = node_id >> layout().worker_bits;
    c.worker_id = node_id & ((std::uint64_t{1} << layout().worker_bits) - 1);
    return c;
  }

  // An audit log, beside the state directory, holding one ID of each
  // (node id, Unix ms) given.
  std::filesystem::path audit_log(
      const std::vector<std::pair<std::uint64_t, milliseconds>>& ids) const {
    std::string records;
    for (const auto& [node_id, time] : ids) {
      const Claim of = claim(node_id, {}, {}, {});
      const Id id = *compose(layout(), IdFields{time, of.datacenter_id, of.worker_id, 0});
      audit::append_record(records, {1, of.datacenter_id, of.worker_id, id, id});
    }
    std::ofstream(audit_path()) << records;
    return audit_path();
  }
  std::filesystem::path audit_path() const { return dir_.string() + ".audit"; }

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

// The store's reservation for an id below what this node reserved under it
// (a store restored from an older copy, with its created marker): a loss,
// reported until an operator confirms.
TEST_F(ClusterMarksTest, AStoreReservationBelowTheOwnMarkIsALoss) {
  ASSERT_TRUE(marks().prepare(claim(0, milliseconds{0}, milliseconds{5000}, milliseconds{7})).ok());
  ClusterMarks node = marks();
  auto start = node.prepare(
      claim(0, milliseconds{4000}, milliseconds{9000}, milliseconds{7}, false, milliseconds{3000}));
  ASSERT_TRUE(start.ok()) << start.error().message;
  EXPECT_EQ(start->above, milliseconds{5000});  // its own mark, above the store's floor
  ASSERT_TRUE(node.loss().has_value());
  EXPECT_NE(node.loss()->find("record went back"), std::string::npos) << *node.loss();
  EXPECT_EQ(node.losses(), 1u);
  std::ofstream(dir_ / kConfirmStoreLossFile) << "yes\n";
  node.poll_confirmation();
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

// Marks restored from an older copy: the audit log, kept elsewhere, holds
// a later ID of the claimed node id, and the start goes above it; IDs of
// other node ids in the log do not count, nor IDs at or below the mark.
TEST_F(ClusterMarksTest, AnAuditedIdAboveTheMarkOfTheClaimedIdRaisesTheStart) {
  const milliseconds created{7};
  const milliseconds mark{1'700'000'000'000};
  {
    ClusterMarks first = marks();
    ASSERT_TRUE(first.prepare(claim(1, milliseconds{0}, mark, created)).ok());
    ASSERT_TRUE(first.prepare(claim(2, milliseconds{0}, mark, created)).ok());
  }
  const auto log =
      audit_log({{1, mark + milliseconds{5000}}, {2, mark}, {3, mark + milliseconds{9000}}});
  ClusterMarks restored(dir_, "redis", "c", layout(), log);
  auto start = restored.prepare(claim(1, milliseconds{0}, {}, created));
  ASSERT_TRUE(start.ok()) << start.error().message;
  EXPECT_EQ(start->above, mark + milliseconds{5000});
  EXPECT_NE(start->source.find("restored from an older copy"), std::string::npos) << start->source;

  auto covered = restored.prepare(claim(2, milliseconds{0}, {}, created));
  ASSERT_TRUE(covered.ok()) << covered.error().message;
  EXPECT_EQ(covered->above, mark) << "its ID lies at its mark: " << covered->source;

  auto other = restored.prepare(claim(4, milliseconds{0}, {}, created));
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_EQ(other->above, milliseconds{0}) << "no ID of node id 4 in the log";
}

TEST_F(ClusterMarksTest, ASecondHolderOfTheStateDirectoryIsRefused) {
  ClusterMarks first = marks();
  ASSERT_TRUE(first.hold_state_directory().ok());
  // flock()s of two open files conflict within one process as across two.
  ClusterMarks second = marks();
  const Status held = second.hold_state_directory();
  ASSERT_FALSE(held.ok());
  EXPECT_EQ(held.error().code, ErrorCode::kStateLocked);
  EXPECT_NE(held.error().message.find("another snowidd holds state directory"), std::string::npos)
      << held.error().message;
}

}  // namespace
}  // namespace snowid::server
