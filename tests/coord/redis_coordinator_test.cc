// The Redis coordinator against a real redis-server started by the test
// program (one for the program; the tests that stop or hang Redis start their
// own): claims, races, take-over above the old reservation, a lost claim that
// cannot raise the reservation, the self-fence, release, a store that lost
// its data, the peer clock check, AUTH and failover between endpoints.
// Leases are 2 s so that every test is short.
#include "snowid/redis_coordinator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <thread>

#include "redis_claim.h"
#include "redis_client.h"
#include "redis_process.h"
#include "snowid/generator.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

// Four node ids (2 worker bits), so "all taken" is cheap to reach.
Layout small_layout() {
  Layout layout;
  layout.datacenter_bits = 0;
  layout.worker_bits = 2;
  return layout;
}

milliseconds wall_now() { return SystemClock::instance().now_fresh(); }

template <typename Condition>
bool eventually(Condition condition, milliseconds limit) {
  const auto deadline = steady_clock::now() + limit;
  while (steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(milliseconds{20});
  }
  return condition();
}

test::RedisServer& shared_redis() {
  static test::RedisServer server;
  return server;
}

class RedisTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(redis().started()) << redis().why(); }

  virtual test::RedisServer& redis() { return shared_redis(); }

  RedisOptions options(std::optional<std::uint64_t> preferred = std::nullopt) {
    RedisOptions o;
    o.endpoints = {redis().endpoint()};
    o.cluster = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    o.layout = small_layout();
    o.preferred_node_id = preferred;
    o.lease_ttl = seconds{2};
    o.safety_margin = milliseconds{500};
    o.request_timeout = milliseconds{500};
    o.advertised_addresses = {"127.0.0.1:8080"};
    return o;
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

TEST_F(RedisTest, ClaimsThePreferredIdAndStartsAboveANewClustersFirstReservation) {
  const milliseconds before = wall_now();
  auto coordinator = make(2);
  auto claim = coordinator->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_EQ(claim->node_id, 2u);
  EXPECT_EQ(claim->worker_id, 2u);
  // A cluster new to this store cannot tell "never used" from "lost with the
  // store's data": it starts lease_ttl + reserve_ahead (2 + 3 s) above the
  // first claim.
  EXPECT_GE(claim->floor, before + milliseconds{5000});
  EXPECT_LE(claim->floor, wall_now() + milliseconds{5000});
  ASSERT_TRUE(claim->ceiling.has_value());
  EXPECT_GE(*claim->ceiling, claim->floor + milliseconds{3000});
  EXPECT_EQ(stored_reservation(2), *claim->ceiling);
  EXPECT_TRUE(coordinator->may_issue());
  const CoordinatorStats stats = coordinator->stats();
  EXPECT_EQ(stats.store, "redis");
  EXPECT_EQ(stats.state, ClaimState::kHeld);
  EXPECT_EQ(stats.node_id, 2u);
  ASSERT_TRUE(stats.lease_time_left.has_value());
  EXPECT_GT(*stats.lease_time_left, milliseconds{1000});
  EXPECT_GT(stats.store_requests, 0u);
  // The claim's TTL is the lease.
  const long long ttl = std::stoll(cli({"PTTL", coord::redis_claim_key(options().cluster, 2)}));
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, 2000);
}

TEST_F(RedisTest, AnIdFirstUsedLongAfterTheClusterBeganStartsAtTheClock) {
  cli({"SET", coord::redis_created_key(options().cluster),
       std::to_string((wall_now() - milliseconds{3'600'000}).count())});
  auto claim = make(1)->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_LT(claim->floor, wall_now());
}

TEST_F(RedisTest, TakesTheLowestFreeIdWhenThePreferredIsTaken) {
  auto first = make(1), second = make(1), third = make(1);
  EXPECT_EQ(first->claim()->node_id, 1u);
  EXPECT_EQ(second->claim()->node_id, 0u);
  EXPECT_EQ(third->claim()->node_id, 2u);
}

TEST_F(RedisTest, AllIdsTakenIsAClearError) {
  std::vector<std::unique_ptr<Coordinator>> holders;
  for (int i = 0; i < 4; ++i) {
    holders.push_back(make(std::nullopt));
    ASSERT_TRUE(holders.back()->claim().ok());
  }
  auto late = make(std::nullopt);
  auto refused = late->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(refused.error().message.find("all 4 node ids of cluster"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE(late->may_issue());
}

TEST_F(RedisTest, RequiredIdHeldElsewhereNamesTheHolder) {
  auto holder = make(3);
  ASSERT_TRUE(holder->claim().ok());
  RedisOptions o = options(3);
  o.require_preferred_node_id = true;
  auto refused = (*make_redis_coordinator(o))->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kAlreadyExists);
  EXPECT_NE(refused.error().message.find("node id 3 of cluster"), std::string::npos);
  EXPECT_NE(refused.error().message.find("serving 127.0.0.1:8080"), std::string::npos)
      << refused.error().message;
}

TEST_F(RedisTest, ManyRacingClaimersGetDistinctIds) {
  for (int round = 0; round < 5; ++round) {
    std::vector<std::unique_ptr<coord::RedisClaim>> claims;
    std::vector<Result<Claim>> results(4, invalid_argument("not run"));
    RedisOptions o = options(3);
    o.cluster += std::to_string(round);
    for (int i = 0; i < 4; ++i) {
      claims.push_back(
          std::make_unique<coord::RedisClaim>(std::move(*coord::RedisClient::connect(o)), o));
    }
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&, i] {
        ready.fetch_add(1);
        while (ready.load() < 4) {
        }
        results[static_cast<std::size_t>(i)] = claims[static_cast<std::size_t>(i)]->claim(3);
      });
    }
    for (auto& t : threads) t.join();
    std::set<std::uint64_t> ids;
    for (const auto& r : results) {
      ASSERT_TRUE(r.ok()) << r.error().message;
      ids.insert(r->node_id);
    }
    EXPECT_EQ(ids.size(), 4u) << "round " << round;
  }
}

TEST_F(RedisTest, TakeOverStartsStrictlyAboveTheOldReservation) {
  // The old holder vanishes without a word; its claim ends (deleted here, as
  // an expiry would) while its reservation stays.
  auto old_holder = raw_claim(1);
  ASSERT_TRUE(old_holder->claim(std::nullopt).ok());
  ASSERT_EQ(old_holder->extend_reservation(/*force=*/true).outcome, coord::StepOutcome::kDone);
  const milliseconds old_reservation = old_holder->reservation();
  cli({"DEL", coord::redis_claim_key(options().cluster, 1)});

  auto successor = make(1);
  auto claim = successor->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  ASSERT_EQ(claim->node_id, 1u);
  EXPECT_EQ(claim->floor, old_reservation);
  EXPECT_GT(*claim->ceiling, old_reservation);

  // The old holder learns nothing, and cannot raise the new holder's reservation.
  const milliseconds successor_reservation = stored_reservation(1);
  const coord::StepResult extended = old_holder->extend_reservation(true, wall_now() + seconds{60});
  EXPECT_EQ(extended.outcome, coord::StepOutcome::kClaimLost) << extended.message;
  EXPECT_EQ(old_holder->keep_alive().outcome, coord::StepOutcome::kClaimLost);
  EXPECT_EQ(stored_reservation(1), successor_reservation);
  // Nor release (or lower) it.
  EXPECT_TRUE(old_holder->release(old_reservation - seconds{10}).ok());
  EXPECT_EQ(stored_reservation(1), successor_reservation);
  EXPECT_TRUE(claim_exists(1));

  GeneratorOptions generator_options;
  generator_options.layout = small_layout();
  generator_options.worker_id = claim->worker_id;
  generator_options.start_above = claim->floor;
  generator_options.external_ceiling = claim->ceiling;
  generator_options.max_drift = milliseconds{20000};  // the old reservation is ~8 s ahead
  auto generator = Generator::create(generator_options);
  ASSERT_TRUE(generator.ok()) << generator.error().message;
  auto id = (*generator)->next();
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_GT(decode(small_layout(), *id)->timestamp, old_reservation);
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
  auto coordinator = make(0);
  ASSERT_TRUE(coordinator->claim().ok());
  std::this_thread::sleep_for(milliseconds{3500});
  EXPECT_TRUE(coordinator->may_issue());
  EXPECT_TRUE(claim_exists(0));
  EXPECT_EQ(coordinator->stats().claims, 1u);
  EXPECT_EQ(coordinator->stats().fencing_events, 0u);
}

TEST_F(RedisTest, GracefulReleaseKeepsTheReservation) {
  auto coordinator = make(3);
  auto claim = coordinator->claim();
  ASSERT_TRUE(claim.ok());
  const milliseconds reservation = coordinator->reservation();
  ASSERT_TRUE(coordinator->release(std::nullopt).ok());
  EXPECT_FALSE(coordinator->may_issue());
  EXPECT_FALSE(claim_exists(3));
  EXPECT_EQ(stored_reservation(3), reservation);

  // The next holder starts above it; releasing with the last issued unit
  // lowers the reservation to that unit, never below the floor.
  auto next = make(3);
  auto taken = next->claim();
  ASSERT_TRUE(taken.ok());
  EXPECT_EQ(taken->node_id, 3u);
  EXPECT_EQ(taken->floor, reservation);
  ASSERT_TRUE(next->release(reservation + milliseconds{10}).ok());
  EXPECT_EQ(stored_reservation(3), reservation + milliseconds{10});
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

TEST_F(RedisTest, FailsOverToTheNextEndpoint) {
  RedisOptions o = options(1);
  const int closed = test::free_loopback_ports(1)[0];
  o.endpoints = {"127.0.0.1:" + std::to_string(closed), redis().endpoint()};
  auto claim = (*make_redis_coordinator(o))->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_EQ(claim->node_id, 1u);
}

TEST_F(RedisTest, AnUnreachableStoreIsAClearError) {
  RedisOptions o = options(1);
  o.endpoints = {"127.0.0.1:" + std::to_string(test::free_loopback_ports(1)[0])};
  auto coordinator = make_redis_coordinator(o);
  ASSERT_TRUE(coordinator.ok());
  auto refused = (*coordinator)->claim();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(refused.error().message.find("no redis endpoint answered"), std::string::npos)
      << refused.error().message;
  EXPECT_FALSE((*coordinator)->may_issue());
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
  ASSERT_EQ(cli({"ACL", "SETUSER", "snowid-test", "on", ">s3cret", "~" + prefix + "*", "+@all"}),
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

TEST_F(RedisTest, ListsTheClusterForOperators) {
  auto a = make(0), b = make(2);
  ASSERT_TRUE(a->claim().ok());
  ASSERT_TRUE(b->claim().ok());
  ASSERT_TRUE(b->release(std::nullopt).ok());
  auto rows = list_cluster(options());
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].node_id, 0u);
  EXPECT_TRUE((*rows)[0].claimed);
  EXPECT_EQ((*rows)[0].addresses, "127.0.0.1:8080");
  EXPECT_GT((*rows)[0].reservation, wall_now());
  EXPECT_EQ((*rows)[1].node_id, 2u);
  EXPECT_FALSE((*rows)[1].claimed);
  EXPECT_GT((*rows)[1].reservation.count(), 0);
}

TEST_F(RedisTest, ClusterListAndReleaseFromTheCli) {
  auto coordinator = make(2);
  ASSERT_TRUE(coordinator->claim().ok());
  const std::string cluster = options().cluster, endpoint = redis().endpoint();
  const auto run = [](std::vector<std::string> args) {
    args.insert(args.begin(), SNOWID_CLI_PATH);
    return test::run_process(args, {}, seconds{20});
  };
  auto listed = run({"cluster", "list", "--redis", endpoint, "--cluster", cluster});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const auto lines = test::split_lines(listed.out);
  ASSERT_EQ(lines.size(), 2u) << listed.out;
  EXPECT_EQ(lines[1].rfind("2 ", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("pid=" + std::to_string(::getpid())), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("127.0.0.1:8080"), std::string::npos) << lines[1];

  auto refused = run({"cluster", "release", "2", "--redis", endpoint, "--cluster", cluster});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_TRUE(claim_exists(2));

  auto forced =
      run({"cluster", "release", "2", "--force", "--redis", endpoint, "--cluster", cluster});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  // The holder notices and stops issuing (then claims again).
  EXPECT_TRUE(
      eventually([&] { return coordinator->stats().lost_claims == 1; }, milliseconds{3000}));

  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"cluster", "list", "--redis", "no-port", "--cluster", cluster},
           {"cluster", "list", "--cluster", cluster},
           {"cluster", "list", "--redis", endpoint, "--etcd", endpoint, "--cluster", cluster},
           {"cluster", "list", "--redis", endpoint, "--cluster", "bad name"}}) {
    auto result = run(bad);
    EXPECT_EQ(result.exit_code, 2) << bad[2] << " " << result.err;
    EXPECT_EQ(test::split_lines(result.err).size(), 1u) << result.err;
  }
  auto unreachable = run(
      {"cluster", "list", "--redis", "127.0.0.1:1", "--cluster", cluster, "--timeout-ms", "300"});
  EXPECT_EQ(unreachable.exit_code, 1) << unreachable.err;
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
  EXPECT_GT(*claim->ceiling, claim->floor);
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

}  // namespace
}  // namespace snowid
