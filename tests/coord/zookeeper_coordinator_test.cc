// The ZooKeeper coordinator against a real ZooKeeper started by the test
// program (one server for the program; the tests that stop or hang
// ZooKeeper start their own): claims, races, take-over above the old
// reservation, a lost claim that cannot raise the reservation, the
// self-fence, release, an ensemble that lost its data, the peer clock check,
// digest auth, failover between servers of an ensemble. Leases are 3 s.
#include "zookeeper_coordinator.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <atomic>
#include <memory>
#include <set>
#include <thread>

#include "leased_store_contract.h"
#include "zookeeper_claim.h"
#include "zookeeper_process.h"
#include "zookeeper_session.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

using test::eventually;
using test::small_layout;
using test::wall_now;

test::ZooKeeperEnsemble& shared_zookeeper() {
  static test::ZooKeeperEnsemble ensemble;
  return ensemble;
}

class ZooKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(zookeeper().started()) << zookeeper().why();
    open_admin_session();
  }

  // The session the fixture reads and writes znodes with, as an operator.
  void open_admin_session() {
    auto session = coord::ZooKeeperSession::open(options(), counters_);
    ASSERT_TRUE(session.ok()) << session.error().message;
    admin_ = std::move(*session);
  }

  virtual test::ZooKeeperEnsemble& zookeeper() { return shared_zookeeper(); }

  ZooKeeperOptions options(std::optional<std::uint64_t> preferred = std::nullopt) {
    ZooKeeperOptions o;
    o.endpoints = zookeeper().endpoints();
    o.cluster = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    o.share_id_space = true;  // a cluster per test, one layout, one store
    o.layout = small_layout();
    o.preferred_node_id = preferred;
    o.lease_ttl = seconds{3};
    o.safety_margin = milliseconds{500};
    o.request_timeout = milliseconds{1000};
    o.tick_time = test::ZooKeeperEnsemble::kTickTime;
    o.advertised_addresses = {"127.0.0.1:8080"};
    return o;
  }

  // This store for the bodies every leasing store shares.
  test::LeasedStoreUnderTest store() {
    auto store = test::describe_store<ZooKeeperOptions>(
        "zookeeper", "--zookeeper", zookeeper().endpoint(0),
        [this](std::optional<std::uint64_t> p) { return options(p); }, &make_zookeeper_coordinator,
        [this](std::uint64_t id) { return stored_reservation(id); },
        [this](std::uint64_t id) { return claim_exists(id); }, "no ZooKeeper server of", "--redis");
    store.mark_new_cluster = [this] { make_cluster(milliseconds{0}); };
    store.lose_data = [this] { remove_tree(coord::zookeeper_cluster_path(options().cluster)); };
    store.make_claim = [this](std::uint64_t preferred) {
      return std::unique_ptr<coord::LeasedClaim>(raw_claim(preferred));
    };
    store.back_up = [this] {
      // A copy of the server's data directory; the restore kills the
      // server, puts the copy back and starts it again on its ports. The
      // whole server goes back: the other tests' clusters too, which none
      // of them minds. The server refuses the sessions that saw writes made
      // after the copy (until its zxid passes theirs): the fixture's is
      // opened again, the holders' stay cut off.
      auto backup = std::make_shared<test::TempDir>();
      const std::string copy = backup->file("data");
      EXPECT_EQ(zookeeper().back_up(0, copy), "");
      return std::function<void()>([this, backup, copy] {
        ASSERT_TRUE(zookeeper().restore(0, copy)) << zookeeper().log(0);
        open_admin_session();
      });
    };
    return store;
  }

  // Deletes `path` and everything below it, as a wiped data directory would.
  void remove_tree(const std::string& path) {
    std::vector<std::string> children;
    if (admin_->children(path, &children).ok()) {
      for (const std::string& child : children) remove_tree(path + "/" + child);
    }
    admin_->remove(path, -1);
  }

  std::unique_ptr<Coordinator> make(std::optional<std::uint64_t> preferred) {
    auto made = make_zookeeper_coordinator(options(preferred));
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error().message);
    return made.ok() ? std::move(*made) : nullptr;
  }

  std::unique_ptr<coord::ZooKeeperClaim> raw_claim(std::optional<std::uint64_t> preferred) {
    return std::make_unique<coord::ZooKeeperClaim>(options(preferred));
  }

  // The reservation stored for `node_id`, 0 if none.
  milliseconds stored_reservation(std::uint64_t node_id) {
    coord::Znode node;
    if (!admin_->get(coord::zookeeper_reservation_path(options().cluster, node_id), &node).ok()) {
      return milliseconds{0};
    }
    return milliseconds{std::stoll(node.data)};
  }

  bool claim_exists(std::uint64_t node_id) {
    coord::ZnodeStat stat;
    return admin_->exists(coord::zookeeper_claim_path(options().cluster, node_id), &stat).ok();
  }

  void remove_claim(std::uint64_t node_id) {
    ASSERT_TRUE(admin_->remove(coord::zookeeper_claim_path(options().cluster, node_id), -1).ok());
  }

  // The cluster's znodes, created as a first claim would, with `created`.
  void make_cluster(milliseconds created) {
    const std::string cluster = options().cluster;
    for (const std::string& path :
         {std::string("/snowid"), coord::zookeeper_cluster_path(cluster),
          coord::zookeeper_claims_path(cluster), coord::zookeeper_reservations_path(cluster)}) {
      admin_->create(path, "", false);
    }
    const std::string path = coord::zookeeper_created_path(cluster);
    if (admin_->create(path, std::to_string(created.count()), false).code == ZNODEEXISTS) {
      ASSERT_TRUE(admin_
                      ->multi({{coord::ZnodeOp::Kind::kSet, path, std::to_string(created.count()),
                                -1, false}},
                              nullptr)
                      .ok());
    }
  }

  coord::StoreCounters counters_;
  std::unique_ptr<coord::ZooKeeperSession> admin_;
};

SNOWID_LEASED_STORE_TESTS(ZooKeeperTest)

TEST_F(ZooKeeperTest, ClaimsThePreferredIdAndStartsAboveANewClustersFirstReservation) {
  // lease_ttl + reserve_ahead ahead of the clock.
  auto coordinator = test::claims_the_preferred_id_of_a_new_cluster(store(), milliseconds{6000});
  const CoordinatorStats stats = coordinator->stats();
  ASSERT_TRUE(stats.lease_time_left.has_value());
  // The fence: 3 s from the session's creation, less the 0.5 s margin.
  EXPECT_GT(*stats.lease_time_left, milliseconds{1500});
  EXPECT_LE(*stats.lease_time_left, milliseconds{2500});
  // The claim is an ephemeral znode: it lives by the holder's session.
  coord::ZnodeStat claim_stat;
  ASSERT_TRUE(admin_->exists(coord::zookeeper_claim_path(options().cluster, 2), &claim_stat).ok());
  EXPECT_NE(claim_stat.ephemeral_owner, 0);
  EXPECT_NE(claim_stat.ephemeral_owner, admin_->id());
}

// `created` written by a claimer whose clock was an hour behind (it wrote
// the marker after a loss): the leader's clock, the znode's ctime, keeps the
// floor up. For an id first used long after the cluster began, both lie in
// the past and the floor costs nothing (as for Redis).
TEST_F(ZooKeeperTest, ACreatedMarkerFromAClockBehindDoesNotLowerTheFloor) {
  const milliseconds before = wall_now();
  make_cluster(before - milliseconds{3'600'000});
  auto claim = make(1)->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_GE(claim->floor, before + milliseconds{6000});  // lease_ttl + reserve_ahead
  EXPECT_GE(claim->store_created, before);
}

// The same with the claimer's clock an hour behind when it writes the marker
// itself: refused with the clock check on, saying so; with it off, the
// leader's clock keeps the floor up.
TEST_F(ZooKeeperTest, AClaimerWhoseClockIsBehindDoesNotLowerTheFloorOfALostCluster) {
  ManualClock behind(wall_now() - milliseconds{3'600'000});
  ZooKeeperOptions o = options(1);
  o.clock = &behind;
  const milliseconds before = wall_now();
  coord::ZooKeeperClaim refused(o);
  auto refusal = refused.claim(std::nullopt);
  ASSERT_FALSE(refusal.ok());
  EXPECT_NE(refusal.error().message.find("behind ZooKeeper's clock"), std::string::npos)
      << refusal.error().message;
  o.max_peer_clock_offset = milliseconds{0};
  coord::ZooKeeperClaim holder(o);
  auto claim = holder.claim(std::nullopt);
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_GE(claim->store_created, before);
  EXPECT_GE(claim->floor, before + milliseconds{6000});  // lease_ttl + reserve_ahead
}

TEST_F(ZooKeeperTest, ManyRacingClaimersGetDistinctIds) {
  test::racing_claimers_get_distinct_ids(3, [this](int round) {
    auto o = options(3);
    o.cluster += std::to_string(round);
    test::Racers racers;
    for (int i = 0; i < 4; ++i) {
      auto claim = std::make_shared<coord::ZooKeeperClaim>(o);
      racers.push_back([claim] { return claim->claim(3); });
    }
    return racers;
  });
}

TEST_F(ZooKeeperTest, TakeOverStartsStrictlyAboveTheOldReservation) {
  // The old holder's claim ends (deleted here, as an expiry would) while its
  // reservation stays.
  auto old_holder = raw_claim(1);
  ASSERT_TRUE(old_holder->claim(std::nullopt).ok());
  test::a_take_over_starts_above_the_old_reservation(store(), *old_holder,
                                                     [this] { remove_claim(1); });
}

// The former holder writes its reservation between the new holder's read and
// write: the new holder's write names a stale version, fails, and it reads
// again, starting above what the former holder wrote last.
TEST_F(ZooKeeperTest, AFormerHoldersLastWriteIsSeenByTheNextHolder) {
  auto old_holder = raw_claim(0);
  ASSERT_TRUE(old_holder->claim(std::nullopt).ok());
  remove_claim(0);
  const std::string path = coord::zookeeper_reservation_path(options().cluster, 0);
  // What the old holder's last write would have left: H raised, version moved.
  const milliseconds raised = old_holder->reservation() + seconds{7};
  ASSERT_TRUE(
      admin_
          ->multi({{coord::ZnodeOp::Kind::kSet, path, std::to_string(raised.count()), -1, false}},
                  nullptr)
          .ok());
  auto claim = make(0)->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_EQ(claim->floor, raised);
  EXPECT_EQ(old_holder->extend_reservation(true, wall_now() + seconds{60}).outcome ==
                coord::StepOutcome::kDone,
            false);
}

// A holder that reads back a reservation it did not see written (its own
// write without an answer, or, after a forced release, the next holder's)
// does not issue below it until a write checked against its token succeeds.
TEST_F(ZooKeeperTest, AReservationReadBackCountsOnlyOnceWritten) {
  auto holder = raw_claim(0);
  ASSERT_TRUE(holder->claim(std::nullopt).ok());
  const milliseconds own = holder->reservation();
  const std::string path = coord::zookeeper_reservation_path(options().cluster, 0);
  const milliseconds foreign = own + seconds{30};
  ASSERT_TRUE(
      admin_
          ->multi({{coord::ZnodeOp::Kind::kSet, path, std::to_string(foreign.count()), -1, false}},
                  nullptr)
          .ok());
  EXPECT_EQ(holder->extend_reservation(true, milliseconds{0}).outcome,
            coord::StepOutcome::kStoreFailed);  // the version moved
  EXPECT_EQ(holder->extend_reservation(false, milliseconds{0}).outcome, coord::StepOutcome::kDone);
  EXPECT_EQ(holder->reservation(), own) << "a value only read was taken as written";
  EXPECT_EQ(holder->extend_reservation(true, milliseconds{0}).outcome, coord::StepOutcome::kDone);
  EXPECT_EQ(holder->reservation(), foreign);  // written now, under the token
  EXPECT_EQ(stored_reservation(0), foreign);
}

// An operator deletes the reservation and the claim of a live holder: the
// next holder still starts above the holder's reservation (its copy in
// holders/<id>), and the holder learns it lost the id.
TEST_F(ZooKeeperTest, ADeletedReservationIsNotForgotten) {
  make_cluster(milliseconds{0});  // so that only the copy can keep the floor up
  auto holder = raw_claim(1);
  ASSERT_TRUE(holder->claim(std::nullopt).ok());
  const milliseconds reservation = holder->reservation();
  ASSERT_TRUE(admin_->remove(coord::zookeeper_reservation_path(options().cluster, 1), -1).ok());
  remove_claim(1);
  auto claim = make(1)->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_EQ(claim->node_id, 1u);
  EXPECT_GE(claim->floor, reservation);
  EXPECT_EQ(holder->extend_reservation(true, milliseconds{0}).outcome,
            coord::StepOutcome::kClaimLost);
}

// Both copies gone too: the id was used before, so the next holder starts
// lease_ttl + reserve_ahead above the clock rather than at `created`.
TEST_F(ZooKeeperTest, AnIdUsedBeforeWithoutAnyReservationStartsAheadOfTheClock) {
  make_cluster(milliseconds{0});
  auto holder = raw_claim(1);
  ASSERT_TRUE(holder->claim(std::nullopt).ok());
  const std::string cluster = options().cluster;
  ASSERT_TRUE(admin_->remove(coord::zookeeper_reservation_path(cluster, 1), -1).ok());
  ASSERT_TRUE(admin_
                  ->multi({{coord::ZnodeOp::Kind::kSet, coord::zookeeper_holders_path(cluster, 1),
                            "", -1, false}},
                          nullptr)
                  .ok());
  remove_claim(1);
  const milliseconds before = wall_now();
  auto claim = make(1)->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_GE(claim->floor, before + milliseconds{6000});
}

// The whole reservations/ directory deleted under a live holder: its next
// writes create it again instead of failing for good.
TEST_F(ZooKeeperTest, ADeletedReservationsDirectoryIsCreatedAgain) {
  auto holder = raw_claim(2);
  ASSERT_TRUE(holder->claim(std::nullopt).ok());
  const std::string cluster = options().cluster;
  ASSERT_TRUE(admin_->remove(coord::zookeeper_reservation_path(cluster, 2), -1).ok());
  ASSERT_TRUE(admin_->remove(coord::zookeeper_reservations_path(cluster), -1).ok());
  EXPECT_EQ(holder->extend_reservation(true, milliseconds{0}).outcome,
            coord::StepOutcome::kStoreFailed);
  EXPECT_EQ(holder->extend_reservation(true, milliseconds{0}).outcome, coord::StepOutcome::kDone);
  EXPECT_EQ(stored_reservation(2), holder->reservation());
}

TEST_F(ZooKeeperTest, ReservationExtensionFailsOnceTheClaimIsGone) {
  auto holder = raw_claim(0);
  ASSERT_TRUE(holder->claim(std::nullopt).ok());
  const milliseconds reservation = holder->reservation();
  remove_claim(0);  // as `snowid cluster release --force` does
  EXPECT_EQ(holder->extend_reservation(/*force=*/true).outcome, coord::StepOutcome::kClaimLost);
  EXPECT_EQ(stored_reservation(0), reservation);
}

TEST_F(ZooKeeperTest, ARenewedClaimOutlivesItsTtl) {
  test::a_renewed_claim_outlives_its_ttl(store(), milliseconds{4500});
}

TEST_F(ZooKeeperTest, AnEnsembleThatLostItsDataDoesNotStartTheNextHolderAtZero) {
  make_cluster(milliseconds{0});  // a long-running cluster
  auto holder = raw_claim(2);
  ASSERT_TRUE(holder->claim(std::nullopt).ok());
  const milliseconds reservation = holder->reservation();
  // Everything of the cluster is gone, as after a wiped data directory.
  const std::string cluster = options().cluster;
  remove_claim(2);
  ASSERT_TRUE(admin_->remove(coord::zookeeper_reservation_path(cluster, 2), -1).ok());
  ASSERT_TRUE(admin_->remove(coord::zookeeper_created_path(cluster), -1).ok());
  auto successor = make(2);
  auto claim = successor->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_GE(claim->floor, reservation);
  EXPECT_NE(holder->extend_reservation(true, milliseconds{0}).outcome, coord::StepOutcome::kDone);
  EXPECT_EQ(holder->keep_alive().outcome, coord::StepOutcome::kClaimLost);
}

TEST_F(ZooKeeperTest, RefusesToStartWhenTheClockIsFarFromThePeers) {
  make_cluster(milliseconds{0});
  for (std::uint64_t id : {0u, 1u}) {
    coord::ClaimRecord peer;
    peer.host = "peer";
    peer.instance = "peer" + std::to_string(id);
    peer.wall_time = wall_now() + milliseconds{60'000};
    ASSERT_TRUE(admin_
                    ->create(coord::zookeeper_claim_path(options().cluster, id), peer.to_json(),
                             /*ephemeral=*/true)
                    .ok());
  }
  auto refused = make(std::nullopt)->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("s behind the mean of the 2 live peers"),
            std::string::npos)
      << refused.error().message;

  ZooKeeperOptions tolerant = options();
  tolerant.max_peer_clock_offset = milliseconds{120'000};
  auto accepted = (*make_zookeeper_coordinator(tolerant))->claim();
  ASSERT_TRUE(accepted.ok()) << accepted.error().message;
  EXPECT_EQ(accepted->node_id, 2u);
}

TEST_F(ZooKeeperTest, AGarbledReservationMakesTheIdUnusable) {
  make_cluster(milliseconds{0});
  ASSERT_TRUE(
      admin_->create(coord::zookeeper_reservation_path(options().cluster, 0), "soon", false).ok());
  ZooKeeperOptions o = options(0);
  o.require_preferred_node_id = true;
  auto refused = (*make_zookeeper_coordinator(o))->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("not a Unix-ms timestamp"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(claim_exists(0)) << "a refused claim must not keep the id";
}

TEST_F(ZooKeeperTest, AShorterGrantedSessionIsRefused) {
  ZooKeeperOptions o = options(1);
  o.lease_ttl = seconds{120};  // the servers grant at most 60 s
  auto refused = (*make_zookeeper_coordinator(o))->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("granted a session timeout of 60000 ms"),
            std::string::npos)
      << refused.error().message;
}

TEST_F(ZooKeeperTest, BadOptionsAreRefusedBeforeConnecting) {
  EXPECT_FALSE(parse_zookeeper_endpoints("localhost").ok());
  EXPECT_FALSE(parse_zookeeper_endpoints("127.0.0.1:0").ok());
  EXPECT_FALSE(parse_zookeeper_endpoints("127.0.0.1:2181,").ok());
  EXPECT_TRUE(parse_zookeeper_endpoints("zk://127.0.0.1:2181,127.0.0.2:2181").ok());
  ZooKeeperOptions o = options();
  o.cluster = "a b";
  EXPECT_FALSE(make_zookeeper_coordinator(o).ok());
  // tickTime / 2 + margin must leave room before each renewal (lease_ttl / 3).
  o = options();
  o.tick_time = milliseconds{2000};
  auto refused = make_zookeeper_coordinator(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("raise lease_ttl_s"), std::string::npos)
      << refused.error().message;
}

TEST_F(ZooKeeperTest, AuthenticatesWithDigestAndKeepsOthersOut) {
  ZooKeeperOptions o = options(0);
  o.user = "snowid";
  o.password = "s3cret";
  auto holder = make_zookeeper_coordinator(o);
  ASSERT_TRUE(holder.ok());
  auto claim = (*holder)->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_GE((*holder)->stats().store_requests, 1u);

  // The cluster's znodes belong to that user: neither a wrong password nor
  // no user can claim, read or release them.
  o.password = "wrong";
  auto refused = (*make_zookeeper_coordinator(o))->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("ZooKeeper refused access"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(list_cluster(options()).ok());
  EXPECT_FALSE(release_node_id(options(), 0, /*force=*/true).ok());
  EXPECT_TRUE((*holder)->may_issue());
}

// Tests that stop or hang ZooKeeper, on an ensemble of their own.
class ZooKeeperFaultTest : public ZooKeeperTest {
 protected:
  test::ZooKeeperEnsemble& zookeeper() override { return own_; }
  test::ZooKeeperEnsemble own_;
};

TEST_F(ZooKeeperFaultTest, SelfFencesBeforeTheLeaseCanExpireAndReclaimsAfter) {
  admin_.reset();
  auto coordinator = make(2);
  ASSERT_TRUE(coordinator->claim().ok());
  ASSERT_TRUE(eventually([&] { return coordinator->stats().store_requests >= 12; },
                         milliseconds{4000}));  // a renewal went through
  own_.pause(0);                                // ZooKeeper hangs: renewals time out
  const auto paused = steady_clock::now();
  // Deadline = send time of a write acknowledged before the last one + 3 s
  // - 0.5 s margin.
  ASSERT_TRUE(eventually([&] { return !coordinator->may_issue(); }, milliseconds{4000}));
  EXPECT_LT(steady_clock::now() - paused, milliseconds{2600});
  ASSERT_TRUE(
      eventually([&] { return coordinator->stats().fencing_events == 1; }, milliseconds{3000}));
  EXPECT_EQ(coordinator->stats().state, ClaimState::kReclaiming);

  // Back after the session timeout: the server expires the session and the
  // node claims again under a new one, above its old reservation.
  std::this_thread::sleep_for(milliseconds{3500});
  own_.resume(0);
  ASSERT_TRUE(eventually([&] { return coordinator->may_issue(); }, milliseconds{15000}))
      << "no re-claim after ZooKeeper came back";
  EXPECT_EQ(coordinator->claim_generation(), 2u);
  auto claim = coordinator->current_claim();
  ASSERT_TRUE(claim.has_value());
  // The first reservation is the floor, less the store clock's grain.
  EXPECT_GE(*claim->ceiling + milliseconds{1000}, claim->floor);
}

TEST_F(ZooKeeperFaultTest, KilledAndRestartedStoreKeepsTheReservations) {
  admin_.reset();
  auto coordinator = make(1);
  auto first = coordinator->claim();
  ASSERT_TRUE(first.ok());
  const milliseconds reservation = coordinator->reservation();
  own_.kill(0);
  ASSERT_TRUE(eventually([&] { return !coordinator->may_issue(); }, milliseconds{3000}));
  ASSERT_TRUE(own_.restart(0)) << own_.log(0);
  // The transaction log kept the reservation: the re-claim starts above it.
  ASSERT_TRUE(eventually([&] { return coordinator->may_issue(); }, milliseconds{15000}));
  auto claim = coordinator->current_claim();
  ASSERT_TRUE(claim.has_value());
  EXPECT_EQ(claim->node_id, 1u);
  EXPECT_GE(claim->floor, reservation);
}

// A session the server expired: libzookeeper_mt 3.8's zoo_amulti, given a
// multi of two ops or more on it, frees a path it never set (a double free
// that can abort the process) and answers ZMARSHALLINGERROR. The session
// refuses the multi without calling the library: ZINVALIDSTATE, which a
// claim takes for a lost one.
TEST_F(ZooKeeperFaultTest, AMultiOnAnExpiredSessionIsRefused) {
  make_cluster(milliseconds{0});             // writes the admin session saw
  ASSERT_TRUE(own_.wipe(0)) << own_.log(0);  // the server forgets the session
  // It refuses the session until its zxid passes the one the session saw;
  // another session's writes get it there, and the session learns it expired.
  auto other = coord::ZooKeeperSession::open(options(), counters_);
  ASSERT_TRUE(other.ok()) << other.error().message;
  ASSERT_TRUE(eventually(
      [&] {
        (*other)->create("/filler", "", false);
        (*other)->remove("/filler", -1);
        return !admin_->usable();
      },
      milliseconds{15000}))
      << "the admin session never learned that it expired";
  const std::string path = coord::zookeeper_cluster_path(options().cluster);
  std::size_t failed = 0;
  const coord::ZnodeAnswer answer =
      admin_->multi({{coord::ZnodeOp::Kind::kCheck, path, "", -1, false},
                     {coord::ZnodeOp::Kind::kCheck, path + "/claims", "", -1, false}},
                    nullptr, &failed);
  EXPECT_EQ(answer.code, ZINVALIDSTATE);
  EXPECT_EQ(failed, 2u);  // no op failed: the session did
}

// A three-server ensemble: the node keeps its claim, without a pause in
// issuing, while one server after another is killed and started again (the
// client moves its session to another server).
TEST(ZooKeeperEnsembleTest, KeepsTheClaimWhileServersStopOneAtATime) {
  test::ZooKeeperEnsemble ensemble(3);
  ASSERT_TRUE(ensemble.started()) << ensemble.why();
  ZooKeeperOptions o;
  o.endpoints = ensemble.endpoints();
  o.cluster = "ensemble";
  o.layout = small_layout();
  o.lease_ttl = seconds{6};
  o.safety_margin = milliseconds{500};
  o.request_timeout = milliseconds{1000};
  o.tick_time = test::ZooKeeperEnsemble::kTickTime;
  auto coordinator = std::move(*make_zookeeper_coordinator(o));
  ASSERT_TRUE(eventually([&] { return coordinator->claim().ok(); }, milliseconds{10000}));
  for (int server = 0; server < 3; ++server) {
    ensemble.kill(server);
    const auto stopped = steady_clock::now();
    while (steady_clock::now() - stopped < milliseconds{2500}) {
      EXPECT_TRUE(coordinator->may_issue()) << "with server " << server << " down";
      std::this_thread::sleep_for(milliseconds{50});
    }
    ASSERT_TRUE(ensemble.restart(server)) << ensemble.log(server);
  }
  const CoordinatorStats stats = coordinator->stats();
  EXPECT_EQ(stats.fencing_events, 0u);
  EXPECT_EQ(stats.lost_claims, 0u);
  // Renewed all along: the 6 s lease fences 3.4 s after the last renewal.
  EXPECT_EQ(coordinator->claim_generation(), 1u);
  EXPECT_TRUE(coordinator->release(std::nullopt).ok());
}

}  // namespace
}  // namespace snowid
