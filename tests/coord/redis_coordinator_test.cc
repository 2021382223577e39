// The Redis coordinator against a real redis-server started by the test
// program (one for the program; the tests that stop or hang Redis start their
// own): claims, races, take-over above the old reservation, a lost claim that
// cannot raise the reservation, the self-fence, release, a store that lost
// its data, the peer clock check, AUTH and failover between endpoints; and
// the primary found through Redis Sentinel (a primary, two replicas and three
// Sentinels per test): claims and renewals there, a failover followed, a
// Sentinel naming a server that is no primary not used.
// Leases are 2 s so that every test is short.
#include "redis_coordinator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <set>
#include <thread>
#include <utility>

#include "leased_store_contract.h"
#include "redis_claim.h"
#include "redis_client.h"
#include "redis_process.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

using test::eventually;
using test::small_layout;
using test::wall_now;

test::RedisServer& shared_redis() {
  static test::RedisServer server;
  return server;
}

// `o` with the lease every test here uses: 2 s, a 500 ms margin and store
// requests, the small layout, and `preferred` as the node id to ask for.
RedisOptions with_test_lease(RedisOptions o, std::optional<std::uint64_t> preferred) {
  o.layout = small_layout();
  o.preferred_node_id = preferred;
  o.lease_ttl = seconds{2};
  o.safety_margin = milliseconds{500};
  o.request_timeout = milliseconds{500};
  o.advertised_addresses = {"127.0.0.1:8080"};
  return o;
}

class RedisTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(redis().started()) << redis().why(); }

  virtual test::RedisServer& redis() { return shared_redis(); }

  RedisOptions options(std::optional<std::uint64_t> preferred = std::nullopt) {
    RedisOptions o;
    o.endpoints = {redis().endpoint()};
    o.cluster = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    o.share_id_space = true;  // a cluster per test, one layout, one store
    return with_test_lease(std::move(o), preferred);
  }

  // This store for the bodies every leasing store shares.
  test::LeasedStoreUnderTest store() {
    auto store = test::describe_store<RedisOptions>(
        "redis", "--redis", redis().endpoint(),
        [this](std::optional<std::uint64_t> p) { return options(p); }, &make_redis_coordinator,
        [this](std::uint64_t id) { return stored_reservation(id); },
        [this](std::uint64_t id) { return claim_exists(id); }, "no redis endpoint answered",
        "--etcd");
    store.mark_new_cluster = [this] {
      cli({"SET", coord::redis_created_key(options().cluster), "0"});
    };
    store.lose_data = [this] {
      // As FLUSHALL would, for this cluster's keys alone.
      cli({"EVAL", "for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end",
           "0", coord::redis_prefix(options().cluster) + "*"});
    };
    store.make_claim = [this](std::uint64_t preferred) {
      return std::unique_ptr<coord::LeasedClaim>(raw_claim(preferred));
    };
    store.back_up = [this] {
      // A copy of the server's append-only files; the restore kills the
      // server, puts the copy back and starts it again on its port. The
      // whole server goes back: the other tests' clusters too, which none
      // of them minds.
      auto backup = std::make_shared<test::TempDir>();
      const std::string copy = backup->file("appendonlydir");
      EXPECT_EQ(redis().back_up(copy), "");
      return std::function<void()>(
          [this, backup, copy] { ASSERT_TRUE(redis().restore(copy)) << redis().log(); });
    };
    return store;
  }

  std::unique_ptr<Coordinator> make(std::optional<std::uint64_t> preferred) {
    auto made = make_redis_coordinator(options(preferred));
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error().message);
    return made.ok() ? std::move(*made) : nullptr;
  }

  std::unique_ptr<coord::RedisClaim> raw_claim(std::optional<std::uint64_t> preferred) {
    auto client = coord::RedisClient::connect(options(preferred));
    EXPECT_TRUE(client.ok());
    return std::make_unique<coord::RedisClaim>(std::move(*client), options(preferred));
  }

  std::string cli(const std::vector<std::string>& arguments) {
    std::string out = redis().cli(arguments);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  }

  // The reservation stored for `node_id`, 0 if none.
  milliseconds stored_reservation(std::uint64_t node_id) {
    const std::string value =
        cli({"GET", coord::redis_reservation_key(options().cluster, node_id)});
    return value.empty() ? milliseconds{0} : milliseconds{std::stoll(value)};
  }

  bool claim_exists(std::uint64_t node_id) {
    return cli({"EXISTS", coord::redis_claim_key(options().cluster, node_id)}) == "1";
  }
};

SNOWID_LEASED_STORE_TESTS(RedisTest)

TEST_F(RedisTest, ClaimsThePreferredIdAndStartsAboveANewClustersFirstReservation) {
  // lease_ttl + reserve_ahead ahead of the clock.
  auto coordinator = test::claims_the_preferred_id_of_a_new_cluster(store(), milliseconds{5000});
  ASSERT_TRUE(coordinator->stats().lease_time_left.has_value());
  EXPECT_GT(*coordinator->stats().lease_time_left, milliseconds{1000});
  // The claim's TTL is the lease.
  const long long ttl = std::stoll(cli({"PTTL", coord::redis_claim_key(options().cluster, 2)}));
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, 2000);
}

// An id first used an hour after the cluster began: no reservation, an old
// created marker. It might be a record restored from before a live holder
// took it, so it starts above the takeover floor, by Redis's clock.
TEST_F(RedisTest, AnIdFirstUsedLongAfterTheClusterBeganStartsAtTheTakeoverFloor) {
  cli({"SET", coord::redis_created_key(options().cluster),
       std::to_string((wall_now() - milliseconds{3'600'000}).count())});
  const milliseconds before = wall_now();
  auto claim = make(1)->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_GE(claim->floor, before + milliseconds{5000});  // lease_ttl + reserve_ahead
  EXPECT_LE(claim->floor, wall_now() + milliseconds{5000});
  EXPECT_NE(claim->floor_source.find("takeover floor"), std::string::npos);
}

// A claimer whose clock is an hour behind Redis's is refused, saying so;
// with the check off (max_peer_clock_offset 0) it writes the created key of a
// cluster that the store lost (or never had), and Redis's own clock (TIME)
// keeps the floor up.
TEST_F(RedisTest, AClaimerWhoseClockIsBehindDoesNotLowerTheFloorOfALostCluster) {
  ManualClock behind(wall_now() - milliseconds{3'600'000});
  RedisOptions o = options(1);
  o.clock = &behind;
  const milliseconds before = wall_now();
  coord::RedisClaim refused(std::move(*coord::RedisClient::connect(o)), o);
  auto refusal = refused.claim(std::nullopt);
  ASSERT_FALSE(refusal.ok());
  EXPECT_NE(refusal.error().message.find("s behind Redis's clock"), std::string::npos)
      << refusal.error().message;

  o.max_peer_clock_offset = milliseconds{0};
  coord::RedisClaim holder(std::move(*coord::RedisClient::connect(o)), o);
  auto claim = holder.claim(std::nullopt);
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_GE(claim->store_created, before);
  EXPECT_GE(claim->floor, before + milliseconds{5000});  // lease_ttl + reserve_ahead
}

TEST_F(RedisTest, ManyRacingClaimersGetDistinctIds) {
  test::racing_claimers_get_distinct_ids(5, [this](int round) {
    auto o = options(3);
    o.cluster += std::to_string(round);
    test::Racers racers;
    for (int i = 0; i < 4; ++i) {
      auto claim =
          std::make_shared<coord::RedisClaim>(std::move(*coord::RedisClient::connect(o)), o);
      racers.push_back([claim] { return claim->claim(3); });
    }
    return racers;
  });
}

TEST_F(RedisTest, TakeOverStartsStrictlyAboveTheOldReservation) {
  // The old holder's claim ends (deleted here, as an expiry would) while its
  // reservation stays.
  auto old_holder = raw_claim(1);
  ASSERT_TRUE(old_holder->claim(std::nullopt).ok());
  test::a_take_over_starts_above_the_old_reservation(store(), *old_holder, [this] {
    cli({"DEL", coord::redis_claim_key(options().cluster, 1)});
  });
}

TEST_F(RedisTest, ReservationExtensionFailsOnceTheLeaseExpires) {
  auto holder = raw_claim(0);
  ASSERT_TRUE(holder->claim(std::nullopt).ok());
  const milliseconds reservation = holder->reservation();
  // No renewals: the 2 s TTL runs out and Redis deletes the claim.
  ASSERT_TRUE(eventually([&] { return !claim_exists(0); }, milliseconds{5000}));
  EXPECT_EQ(holder->extend_reservation(/*force=*/true).outcome, coord::StepOutcome::kClaimLost);
  EXPECT_EQ(stored_reservation(0), reservation);
}

TEST_F(RedisTest, ARenewedClaimOutlivesItsTtl) {
  test::a_renewed_claim_outlives_its_ttl(store(), milliseconds{3500});
}

TEST_F(RedisTest, AStoreThatLostItsDataDoesNotStartTheNextHolderAtZero) {
  // A holder in a long-running cluster reserves reserve_ahead past its clock.
  cli({"SET", coord::redis_created_key(options().cluster), "0"});
  auto holder = raw_claim(2);
  ASSERT_TRUE(holder->claim(std::nullopt).ok());
  const milliseconds reservation = holder->reservation();
  // Everything of the cluster is gone, as after a restart without persistence.
  for (const char* kind : {"claim:2", "reservation:2", "created"}) {
    cli({"DEL", coord::redis_prefix(options().cluster) + kind});
  }
  auto successor = make(2);
  auto claim = successor->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_GE(claim->floor, reservation);
  EXPECT_EQ(holder->extend_reservation(true, milliseconds{0}).outcome,
            coord::StepOutcome::kClaimLost);
}

TEST_F(RedisTest, RefusesToStartWhenTheClockIsFarFromThePeers) {
  for (std::uint64_t id : {0u, 1u}) {
    coord::ClaimRecord peer;
    peer.host = "peer";
    peer.instance = "peer" + std::to_string(id);
    peer.wall_time = wall_now() + milliseconds{60'000};
    const std::string key = coord::redis_claim_key(options().cluster, id);
    cli({"HSET", key, "token", peer.instance, "record", peer.to_json()});
    cli({"PEXPIRE", key, "10000"});
  }
  auto refused = make(std::nullopt)->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("s behind the mean of the 2 live peers"),
            std::string::npos)
      << refused.error().message;

  RedisOptions tolerant = options();
  tolerant.max_peer_clock_offset = milliseconds{120'000};
  auto accepted = (*make_redis_coordinator(tolerant))->claim();
  ASSERT_TRUE(accepted.ok()) << accepted.error().message;
  EXPECT_EQ(accepted->node_id, 2u);
}

TEST_F(RedisTest, AGarbledReservationMakesTheIdUnusable) {
  cli({"SET", coord::redis_reservation_key(options().cluster, 0), "soon"});
  RedisOptions o = options(0);
  o.require_preferred_node_id = true;
  auto refused = (*make_redis_coordinator(o))->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("not a Unix-ms timestamp"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(claim_exists(0)) << "a refused claim must not keep the id";
}

TEST_F(RedisTest, BadOptionsAreRefusedBeforeConnecting) {
  EXPECT_FALSE(parse_redis_endpoints("localhost").ok());
  EXPECT_FALSE(parse_redis_endpoints("127.0.0.1:0").ok());
  EXPECT_FALSE(parse_redis_endpoints("127.0.0.1:6379,").ok());
  EXPECT_TRUE(parse_redis_endpoints("redis://127.0.0.1:6379,[::1]:6380").ok());
  RedisOptions o = options();
  o.cluster = "a b";
  EXPECT_FALSE(make_redis_coordinator(o).ok());
}

TEST_F(RedisTest, AuthenticatesWithAnAclUser) {
  const std::string prefix = coord::redis_prefix(options().cluster);
  ASSERT_EQ(cli({"ACL", "SETUSER", "snowid-test", "on", ">s3cret", "~" + prefix + "*",
                 "~snowid:~id-spaces", "+@all"}),
            "OK");
  RedisOptions o = options(0);
  o.user = "snowid-test";
  o.password = "s3cret";
  auto claim = (*make_redis_coordinator(o))->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;

  o.password = "wrong";
  auto refused = (*make_redis_coordinator(o))->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("AUTH refused"), std::string::npos)
      << refused.error().message;
}

// Tests that stop or hang Redis, on a server of their own.
class RedisFaultTest : public RedisTest {
 protected:
  test::RedisServer& redis() override { return own_; }
  test::RedisServer own_;
};

TEST_F(RedisFaultTest, SelfFencesBeforeTheLeaseCanExpireAndReclaimsAfter) {
  auto coordinator = make(2);
  ASSERT_TRUE(coordinator->claim().ok());
  ASSERT_TRUE(eventually([&] { return coordinator->stats().store_requests >= 4; },
                         milliseconds{3000}));  // a renewal went through
  own_.pause();                                 // Redis hangs: renewals time out
  const auto paused = steady_clock::now();
  // Deadline = send time of the last acknowledged renewal + 2 s TTL - 0.5 s margin.
  ASSERT_TRUE(eventually([&] { return !coordinator->may_issue(); }, milliseconds{3000}));
  EXPECT_LT(steady_clock::now() - paused, milliseconds{1600});
  ASSERT_TRUE(
      eventually([&] { return coordinator->stats().fencing_events == 1; }, milliseconds{3000}));
  EXPECT_EQ(coordinator->stats().state, ClaimState::kReclaiming);

  own_.resume();
  ASSERT_TRUE(eventually([&] { return coordinator->may_issue(); }, milliseconds{10000}))
      << "no re-claim after Redis came back";
  EXPECT_EQ(coordinator->claim_generation(), 2u);
  auto claim = coordinator->current_claim();
  ASSERT_TRUE(claim.has_value());
  // The first reservation is the floor, less the store clock's grain.
  EXPECT_GE(*claim->ceiling + milliseconds{1000}, claim->floor);
}

TEST_F(RedisFaultTest, KilledAndRestartedStoreKeepsTheReservations) {
  auto coordinator = make(1);
  auto first = coordinator->claim();
  ASSERT_TRUE(first.ok());
  const milliseconds reservation = coordinator->reservation();
  own_.kill();
  ASSERT_TRUE(eventually([&] { return !coordinator->may_issue(); }, milliseconds{3000}));
  ASSERT_TRUE(own_.restart()) << own_.log();
  // The append-only file kept the reservation: the re-claim starts above it.
  ASSERT_TRUE(eventually([&] { return coordinator->may_issue(); }, milliseconds{10000}));
  auto claim = coordinator->current_claim();
  ASSERT_TRUE(claim.has_value());
  EXPECT_EQ(claim->node_id, 1u) << "the claim it could not free is its own to take again";
  EXPECT_GE(claim->floor, reservation);
}

// A primary with a replica: a reservation counts only once the replica
// confirmed it (WAIT), so a failover to the replica cannot hand the id over
// below what the holder issues. A hung replica stops the reservation from
// rising; the holder keeps issuing below the last confirmed one.
TEST_F(RedisFaultTest, AReservationCountsOnlyOnceEveryReplicaHasIt) {
  test::RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(own_.port())});
  ASSERT_TRUE(replica.started()) << replica.why();
  ASSERT_TRUE(eventually(
      [&] {
        return cli({"INFO", "replication"}).find("state=online") != std::string::npos;
      },
      milliseconds{10000}))
      << cli({"INFO", "replication"});
  auto holder = raw_claim(0);
  auto claimed = holder->claim(std::nullopt);
  ASSERT_TRUE(claimed.ok()) << claimed.error().message;
  const milliseconds confirmed = holder->reservation();
  EXPECT_EQ(replica.cli({"GET", coord::redis_reservation_key(options().cluster, 0)}),
            std::to_string(confirmed.count()) + "\n");

  replica.pause();
  const coord::StepResult unconfirmed = holder->extend_reservation(true, wall_now() + seconds{1});
  EXPECT_EQ(unconfirmed.outcome, coord::StepOutcome::kStoreFailed);
  EXPECT_NE(unconfirmed.message.find("0 of 1 Redis replicas confirmed"), std::string::npos)
      << unconfirmed.message;
  EXPECT_EQ(holder->reservation(), confirmed);

  replica.resume();
  ASSERT_TRUE(eventually(
      [&] {
        return holder->extend_reservation(true, wall_now() + seconds{1}).outcome ==
               coord::StepOutcome::kDone;
      },
      milliseconds{5000}));
  EXPECT_GT(holder->reservation(), confirmed);
}

// The primary that Redis Sentinel names, a set of its own per test.
class RedisSentinelTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(set_.started()) << set_.why(); }

  RedisOptions options(std::optional<std::uint64_t> preferred = std::nullopt) {
    RedisOptions o;
    o.sentinels = set_.sentinel_endpoints();
    o.sentinel_master = test::RedisSentinelSet::kMaster;
    o.cluster = "sentinel";
    return with_test_lease(std::move(o), preferred);
  }

  static std::string trimmed(std::string out) {
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  }
  // `arguments` on the current primary.
  std::string on_primary(const std::vector<std::string>& arguments) {
    return trimmed(set_.primary().cli(arguments));
  }

  test::RedisSentinelSet set_;
};

TEST_F(RedisSentinelTest, ClaimsAndRenewsOnThePrimaryTheSentinelsName) {
  auto made = make_redis_coordinator(options(1));
  ASSERT_TRUE(made.ok()) << made.error().message;
  auto& coordinator = *made;
  auto claim = coordinator->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_EQ(claim->node_id, 1u);
  EXPECT_EQ(coordinator->stats().endpoints,
            std::string("sentinel:snowid@") + set_.sentinels_text());
  // Renewals keep the claim past its TTL.
  std::this_thread::sleep_for(milliseconds{3000});
  EXPECT_TRUE(coordinator->may_issue());
  EXPECT_EQ(on_primary({"EXISTS", coord::redis_claim_key("sentinel", 1)}), "1");
  EXPECT_EQ(coordinator->claim_generation(), 1u) << "the claim was lost and taken again";
  EXPECT_EQ(coordinator->stats().fencing_events, 0u);
  // Every replica confirmed the reservation (WAIT) before it counted.
  const std::string reservation = on_primary({"GET", coord::redis_reservation_key("sentinel", 1)});
  ASSERT_FALSE(reservation.empty());
  EXPECT_GE(milliseconds{std::stoll(reservation)}, coordinator->reservation());
}

// The primary dies (SIGKILL); the Sentinels promote a replica; the holder
// finds it through them, and the promoted server holds its claim and a
// reservation at least as high as the last one the holder counted.
TEST_F(RedisSentinelTest, FollowsAFailoverToThePromotedReplica) {
  auto made = make_redis_coordinator(options(2));
  ASSERT_TRUE(made.ok()) << made.error().message;
  auto& coordinator = *made;
  ASSERT_TRUE(coordinator->claim().ok());
  const milliseconds counted = coordinator->reservation();
  const auto killed = steady_clock::now();
  const std::string old = set_.kill_primary();
  const std::string promoted = set_.wait_for_new_primary(old, milliseconds{20000});
  ASSERT_NE(promoted, "") << set_.logs();
  const auto promoted_at = steady_clock::now();
  // The next renewal reaches it, or, past the lease, the re-claim (a renewal
  // period later at most) above the reservation and the takeover floor.
  ASSERT_TRUE(eventually(
      [&] {
        return coordinator->may_issue() &&
               on_primary({"EXISTS", coord::redis_claim_key("sentinel", 2)}) == "1";
      },
      milliseconds{12000}))
      << "no claim on the promoted server " << promoted << set_.logs();
  std::cout << "promotion " << (promoted_at - killed) / milliseconds{1} << " ms after the kill; "
            << "serving again " << (steady_clock::now() - killed) / milliseconds{1}
            << " ms after it\n";
  EXPECT_GE(
      milliseconds{std::stoll(on_primary({"GET", coord::redis_reservation_key("sentinel", 2)}))},
      counted)
      << "the promoted server lacks a reservation the holder counted";
  const auto current = coordinator->current_claim();
  ASSERT_TRUE(current.has_value());
  EXPECT_EQ(current->node_id, 2u);
  EXPECT_GT(coordinator->stats().store_errors, 0u) << "the holder never met the failover";
}

// A Sentinel of another set names, under the same master name, a replica
// whose primary holds other data: the client takes only a server whose ROLE
// is master, so it reads and claims on the primary the other Sentinels name.
TEST_F(RedisSentinelTest, ASentinelNamingAServerThatIsNoPrimaryIsNotUsed) {
  test::RedisServer other;
  ASSERT_TRUE(other.started()) << other.why();
  test::RedisServer demoted({"--replicaof", "127.0.0.1", std::to_string(other.port())});
  ASSERT_TRUE(demoted.started()) << demoted.why();
  test::RedisServer stale(
      test::RedisServer::Sentinel{test::RedisSentinelSet::kMaster, demoted.port(), 1});
  ASSERT_TRUE(stale.started()) << stale.why();
  ASSERT_EQ(trimmed(other.cli({"SET", "which", "not the primary"})), "OK");
  ASSERT_EQ(on_primary({"SET", "which", "the primary"}), "OK");
  ASSERT_TRUE(eventually(
      [&] {
        return trimmed(demoted.cli({"GET", "which"})) == "not the primary";
      },
      milliseconds{10000}));
  ASSERT_TRUE(eventually(
      [&] {
        const std::string named = trimmed(
            stale.cli({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", test::RedisSentinelSet::kMaster}));
        return named == "127.0.0.1\n" + std::to_string(demoted.port());
      },
      milliseconds{5000}));

  RedisOptions o = options(3);
  o.sentinels.insert(o.sentinels.begin(), stale.endpoint());  // asked first
  auto client = coord::RedisClient::connect(o);
  ASSERT_TRUE(client.ok()) << client.error().message;
  auto which = (*client)->command({"GET", "which"});
  ASSERT_TRUE(which.ok()) << which.error().message;
  EXPECT_EQ(which->text, "the primary");
  EXPECT_EQ((*client)->counters().errors.load(), 1u) << "one try on the server that is no primary";

  auto made = make_redis_coordinator(o);
  ASSERT_TRUE(made.ok()) << made.error().message;
  auto claim = (*made)->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_EQ(on_primary({"EXISTS", coord::redis_claim_key("sentinel", 3)}), "1");
  EXPECT_EQ(trimmed(other.cli({"EXISTS", coord::redis_claim_key("sentinel", 3)})), "0");
}

}  // namespace
}  // namespace snowid
