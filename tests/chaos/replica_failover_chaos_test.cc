// A failover of the store a cluster leases its node ids from, under the
// replication docs/design.md names as making a reservation durable:
// PostgreSQL streaming replication with a synchronous standby
// (synchronous_standby_names, synchronous_commit = on), MariaDB semi-sync
// replication (AFTER_SYNC, no fall-back to asynchronous), Redis with two
// replicas and three Sentinels (snowid WAITs for every replica). Three
// snowidd nodes serve under load; the primary dies (pg_ctl stop -m immediate;
// SIGKILL to mariadbd or redis-server); the replica is promoted (by hand; by
// the Sentinels for Redis); the nodes reach it by themselves (PostgreSQL: one
// libpq URL naming both servers, which snowid opens with
// target_session_attrs=read-write; MariaDB: a TCP proxy repointed at the
// promoted server, as a virtual IP moves; Redis: the Sentinels name it).
//
// Asserted: no node serves from one lease after the kill until the
// promotion; every node serves again within kServeAgainBound of the
// promotion's start, whether it fenced meanwhile or not; at every look at the nodes' /v1/info
// no two nodes with a live lease report the same node id; afterwards the
// promoted server has one live claim per node, held by that node's process,
// under the node id the node reports; every ID issued under a node id N,
// before the failover as after it, lies at or below the reservation the
// promoted server holds for N (the reservations the old primary acknowledged
// reached the replica); and the uniqueness check (snowid check) finds no ID
// twice and every source increasing.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stop_token>
#include <thread>

#include "chaos.h"
#include "fault_proxy.h"
#include "mariadb_process.h"
#include "missing.h"
#include "postgres_process.h"
#include "redis_coordinator.h"
#include "redis_process.h"
#include "server_process.h"
#include "snowid/decode.h"
#include "snowid/layout.h"
#include "sql_cluster.h"
#include "sql_coordinator.h"

namespace snowid {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using test::SteadyClock;

constexpr int kLeaseTtlSeconds = 2;
constexpr int kNodes = 3;
// The bound stated in docs/reliability.md: from the kill of the primary until
// every node serves again (the promotion itself takes about a second; a node
// that re-claims waits out its takeover floor, lease_ttl + reserve_ahead).
constexpr auto kServeAgainBound = 15s;

// An ID's node id (datacenter and worker bits together) and timestamp.
struct IdParts {
  std::uint64_t node_id;
  milliseconds timestamp;
};
IdParts parts_of(Id id) {
  static const Layout twitter = *preset("twitter");
  const auto parts = decode(twitter, id);
  return {parts->datacenter << twitter.worker_bits | parts->worker, parts->timestamp};
}

// A primary with a synchronous replica, as the scenario sees it.
struct ReplicatedStore {
  std::string store;  // "postgres", "mysql", "redis"
  std::string url;    // what the nodes are given (--STORE-url)
  // "" while every commit so far waited for the replica; what went wrong otherwise.
  std::function<std::string()> replication_problem;
  std::function<void()> kill_primary;
  // Promotes the replica and lets the nodes reach it; false (with a failure
  // reported) if that failed.
  std::function<bool()> promote_replica;
  // The claims rows of cluster "c" on the promoted server.
  std::function<std::vector<ClusterNode>()> claims;
  // If not empty, the nodes' options that reach the store instead of the url.
  std::vector<std::string> node_args = {};
};

// What the looks at the nodes' /v1/info found.
struct NodeIdLooks {
  int count = 0;
  std::string clashes;  // two nodes with a live lease on one node id, "" if never
};

// Looks at every node's /v1/info every 100 ms until `stop`.
void watch_node_ids(const std::vector<int>& ports, NodeIdLooks& looks, std::stop_token stop) {
  while (!stop.stop_requested()) {
    std::map<std::uint64_t, int> holders;
    for (int port : ports) {
      const auto info =
          nlohmann::json::parse(test::http_get(port, "/v1/info").body, nullptr, false);
      if (!info.is_object() || !info["cluster"].is_object()) continue;
      const auto& cluster = info["cluster"];
      const bool live = cluster["claim_state"] == "held" &&
                        cluster["lease_time_left_ms"].is_number() &&
                        cluster["lease_time_left_ms"].get<long long>() > 0;
      if (!live || !cluster["node_id"].is_number()) continue;
      const auto id = cluster["node_id"].get<std::uint64_t>();
      if (holders.count(id) != 0 && looks.clashes.size() < 400) {
        looks.clashes += "node id " + std::to_string(id) + " on ports " +
                         std::to_string(holders[id]) + " and " + std::to_string(port) + "; ";
      }
      holders[id] = port;
    }
    ++looks.count;
    std::this_thread::sleep_for(100ms);
  }
}

class ReplicaFailoverTest : public test::ChaosTest {
 protected:
  // A node of cluster "c" preferring node id 0, lease 2 s, margin 500 ms.
  std::unique_ptr<test::ServerProcess> start_node(const ReplicatedStore& db, int n) {
    std::vector<std::string> args = {"--coordinator", db.store};
    if (db.node_args.empty()) {
      args.insert(args.end(), {"--" + db.store + "-url", db.url});
    } else {
      args.insert(args.end(), db.node_args.begin(), db.node_args.end());
    }
    args.insert(args.end(), {"--cluster", "c", "--worker-id", "0", "--lease-ttl-s",
                             std::to_string(kLeaseTtlSeconds), "--lease-safety-margin-ms", "500",
                             "--claim-timeout-ms", "20000", "--state-dir",
                             scenario.dir.file("n" + std::to_string(n))});
    return std::make_unique<test::ServerProcess>(SNOWIDD_PATH, args);
  }

  void on_postgres(milliseconds promotion_delay);
  // A primary, two replicas and three Sentinels; the Sentinels promote.
  void on_redis_sentinel();
  // With `host_list`, the nodes' URL names both servers instead of the proxy.
  void on_mysql(milliseconds promotion_delay, bool host_list = false);
  // The primary killed under load, the replica promoted `promotion_delay` later.
  void failover(const ReplicatedStore& db, milliseconds promotion_delay);
  static std::string describe_failover(SteadyClock::duration delay, SteadyClock::duration promotion,
                                       milliseconds recovery, std::size_t refused, int looks,
                                       std::uint64_t errors);
  static std::uint64_t store_errors(const ReplicatedStore& db,
                                    const std::vector<std::unique_ptr<test::ServerProcess>>& nodes);
  // The claims on the promoted server against the nodes and every ID issued.
  // With `fenced`, every node must have claimed again since.
  void check_claims(const ReplicatedStore& db,
                    const std::vector<std::unique_ptr<test::ServerProcess>>& nodes,
                    const std::vector<test::Source>& sources, bool fenced);
};

void ReplicaFailoverTest::failover(const ReplicatedStore& db, milliseconds promotion_delay) {
  std::vector<std::unique_ptr<test::ServerProcess>> nodes;
  test::NodeAddress addresses[kNodes];
  std::vector<int> ports;
  for (int n = 0; n < kNodes; ++n) {
    nodes.push_back(start_node(db, n));
    ASSERT_TRUE(nodes.back()->started()) << nodes.back()->log();
    addresses[n].set(nodes.back()->port(), nodes.back()->grpc_port());
    ports.push_back(nodes.back()->port());
  }
  NodeIdLooks looks;  // read once `watch` is joined
  std::jthread watch([&](std::stop_token stop) { watch_node_ids(ports, looks, stop); });
  test::LoadOptions options;
  options.pause = 1ms;
  test::Load load({&addresses[0], &addresses[1], &addresses[2]}, options);
  ASSERT_TRUE(load.wait_served(std::vector<std::uint64_t>(kNodes, 0), 200, 10s));
  ASSERT_EQ(db.replication_problem(), "");

  const auto killed_at = SteadyClock::now();
  db.kill_primary();
  std::this_thread::sleep_until(killed_at + promotion_delay);
  const auto promoting_at = SteadyClock::now();
  ASSERT_TRUE(db.promote_replica());
  const auto promoted_at = SteadyClock::now();
  // Three leases on: a node that did not reach the promoted server has
  // fenced by then, and its clients wait in vain below.
  std::this_thread::sleep_until(promoted_at + 3 * std::chrono::seconds{kLeaseTtlSeconds});
  EXPECT_TRUE(load.wait_served(load.served_counts(), 200, 5s))
      << "a node does not serve three leases after the promotion: " << nodes[0]->log()
      << nodes[1]->log() << nodes[2]->log();
  load.stop();
  watch.request_stop();
  watch.join();
  const auto samples = load.samples();
  const auto recovery = test::recovery_time(samples, killed_at);
  ASSERT_TRUE(recovery) << "nothing was served after the kill";
  scenario.record.recovery_ms = recovery->count();
  EXPECT_LT(*recovery, promoting_at - killed_at + kServeAgainBound);
  // No node serves past its lease while no server could renew it.
  EXPECT_EQ(test::count_sent(samples, test::Outcome::kServed,
                             killed_at + std::chrono::seconds{kLeaseTtlSeconds}, promoting_at),
            0u)
      << "a node served after its lease could have ended";
  const std::size_t refused =
      test::count_within(samples, test::Outcome::kRefused, killed_at, SteadyClock::now());
  if (promotion_delay > std::chrono::seconds{kLeaseTtlSeconds}) {
    EXPECT_GT(refused, 0u) << "no node refused while no database answered";
  }
  scenario.record.measured =
      describe_failover(promoting_at - killed_at, promoted_at - promoting_at, *recovery, refused,
                        looks.count, store_errors(db, nodes));
  std::cout << db.store << ": " << scenario.record.measured << "\n";
  EXPECT_GT(looks.count, 0);
  EXPECT_EQ(looks.clashes, "");
  EXPECT_EQ(load.unexpected(), "");
  const auto sources = load.sources();
  check_claims(db, nodes, sources, promotion_delay > std::chrono::seconds{kLeaseTtlSeconds});
  scenario.count(load);
  scenario.check(sources);
}

std::string ReplicaFailoverTest::describe_failover(SteadyClock::duration delay,
                                                   SteadyClock::duration promotion,
                                                   milliseconds recovery, std::size_t refused,
                                                   int looks, std::uint64_t errors) {
  const auto ms = [](auto d) {
    return std::to_string(std::chrono::duration_cast<milliseconds>(d).count());
  };
  const auto after_promotion = std::max(recovery - (delay + promotion), SteadyClock::duration{0});
  return "promotion begun " + ms(delay) + " ms after the kill, took " + ms(promotion) +
         " ms; service back (first answer after the last refusal) " + ms(recovery) +
         " ms after the kill, " + ms(after_promotion) +
         " ms after the promotion (bound: promotion begun + " + ms(kServeAgainBound) + " ms); " +
         std::to_string(refused) + " answers refused (503) meanwhile; " + std::to_string(errors) +
         " failed statements on the nodes; " + std::to_string(looks) +
         " looks at /v1/info, no node id live on two nodes";
}

// The nodes' failed statements: each node met the dead primary at least once.
std::uint64_t ReplicaFailoverTest::store_errors(
    const ReplicatedStore& db, const std::vector<std::unique_ptr<test::ServerProcess>>& nodes) {
  std::uint64_t errors = 0;
  for (const auto& node : nodes) {
    const auto info = nlohmann::json::parse(test::http_get(node->port(), "/v1/info").body);
    const auto& count = info["cluster"][db.store + "_errors"];
    EXPECT_TRUE(count.is_number() && count.get<std::uint64_t>() > 0)
        << "a node never met the failover: " << info.dump();
    errors += count.is_number() ? count.get<std::uint64_t>() : 0;
  }
  return errors;
}

void ReplicaFailoverTest::check_claims(
    const ReplicatedStore& db, const std::vector<std::unique_ptr<test::ServerProcess>>& nodes,
    const std::vector<test::Source>& sources, bool fenced) {
  std::map<std::uint64_t, ClusterNode> claims;
  for (const ClusterNode& claim : db.claims()) claims[claim.node_id] = claim;
  std::set<std::uint64_t> node_ids;
  for (const auto& node : nodes) {
    const auto info = nlohmann::json::parse(test::http_get(node->port(), "/v1/info").body);
    ASSERT_TRUE(info["cluster"]["node_id"].is_number()) << info.dump();
    const auto id = info["cluster"]["node_id"].get<std::uint64_t>();
    node_ids.insert(id);
    EXPECT_TRUE(!fenced || info["cluster"]["reclaims"].get<int>() >= 1)
        << "a node fenced but never claimed again: " << info.dump();
    ASSERT_EQ(claims.count(id), 1u) << "no row for node id " << id << " on the promoted server";
    EXPECT_TRUE(claims[id].claimed) << "node id " << id;
    EXPECT_NE(claims[id].holder.find("pid=" + std::to_string(node->pid()) + " "), std::string::npos)
        << "node id " << id << " is held by " << claims[id].holder;
  }
  EXPECT_EQ(node_ids.size(), nodes.size()) << "two nodes report the same node id";
  std::size_t live = 0;
  for (const auto& [id, claim] : claims) live += claim.claimed ? 1 : 0;
  EXPECT_EQ(live, nodes.size()) << "more live claims than nodes on the promoted server";
  for (const auto& source : sources) {
    for (const test::Number number : source.ids) {
      const Id id = static_cast<Id>(number);
      const auto claim = claims.find(parts_of(id).node_id);
      ASSERT_NE(claim, claims.end()) << "ID " << id << " under a node id the server never saw";
      ASSERT_LE(parts_of(id).timestamp, claim->second.reservation)
          << "ID " << id << " (" << source.name << ") lies above the reservation the promoted "
          << "server holds for node id " << claim->first << ": a reservation was lost";
    }
  }
}

// A PostgreSQL primary with a synchronous standby, cluster "c" marked new on it.
void ReplicaFailoverTest::on_postgres(milliseconds promotion_delay) {
  if (!test::PostgresProcess::available()) SNOWID_SKIP_MISSING(test::PostgresProcess::kMissing);
  test::PostgresProcess primary;
  ASSERT_TRUE(primary.started()) << primary.error();
  test::PostgresProcess standby(primary, "standby");
  ASSERT_TRUE(standby.started()) << standby.error();
  ASSERT_TRUE(primary.require_synchronous_standby("standby")) << primary.error();
  ASSERT_TRUE(test::mark_new_sql_cluster([&](const std::string& sql) { return primary.psql(sql); },
                                         std::string(SNOWID_SOURCE_DIR) + "/sql/node_claims.sql",
                                         "c"))
      << primary.error();
  const std::string both = "postgresql://postgres@127.0.0.1:" + std::to_string(primary.port()) +
                           ",127.0.0.1:" + std::to_string(standby.port()) + "/postgres";
  failover({"postgres", both,
            [&primary] {
              std::string state;
              primary.psql("SELECT sync_state FROM pg_stat_replication", &state);
              return state == "sync\n" ? "" : "the standby is not synchronous: " + state;
            },
            [&primary] { EXPECT_TRUE(primary.stop(true)) << primary.error(); },
            [&standby] {
              EXPECT_TRUE(standby.promote()) << standby.error();
              return !::testing::Test::HasFailure();
            },
            [&standby] { return test::list_sql_cluster<PostgresOptions>(standby.url(), "c"); }},
           promotion_delay);
}

// A MariaDB primary with a semi-sync replica, cluster "c" marked new on it;
// the nodes reach it through a proxy (the virtual IP), or by a URL naming
// both servers, whose replica refuses their writes until it is promoted
// (read_only) but answers their reads.
void ReplicaFailoverTest::on_mysql(milliseconds promotion_delay, bool host_list) {
  if (!test::MariadbProcess::available()) SNOWID_SKIP_MISSING(test::MariadbProcess::kMissing);
  test::MariadbProcess primary(true);
  ASSERT_TRUE(primary.started()) << primary.error();
  test::MariadbProcess replica(primary);
  ASSERT_TRUE(replica.started()) << replica.error();
  ASSERT_TRUE(test::mark_new_sql_cluster(
      [&](const std::string& sql) { return primary.sql(sql); },
      std::string(SNOWID_SOURCE_DIR) + "/sql/node_claims.mysql.sql", "c"))
      << primary.error();
  test::FaultProxy address(primary.port());
  ASSERT_NE(address.port(), 0);
  const std::string hosts = host_list ? "127.0.0.1:" + std::to_string(primary.port()) +
                                            ",127.0.0.1:" + std::to_string(replica.port())
                                      : address.endpoint();
  const std::string url =
      std::string("mysql://snowid:") + test::MariadbProcess::kPassword + "@" + hosts + "/snowid";
  failover({"mysql", url,
            [&primary] {
              std::string status;
              primary.sql(
                  "SHOW STATUS WHERE Variable_name IN ('Rpl_semi_sync_master_status', "
                  "'Rpl_semi_sync_master_no_tx')",
                  &status);
              return status == "Rpl_semi_sync_master_no_tx\t0\nRpl_semi_sync_master_status\tON\n"
                         ? ""
                         : "a commit went without the replica's acknowledgement: " + status;
            },
            [&primary] { primary.kill(); },
            [&replica, &address] {
              EXPECT_TRUE(replica.promote()) << replica.error();
              address.retarget(replica.port());
              return !::testing::Test::HasFailure();
            },
            [&replica] { return test::list_sql_cluster<MysqlOptions>(replica.url(), "c"); }},
           promotion_delay);
}

// A Redis primary with two replicas and three Sentinels (quorum 2,
// down-after-milliseconds 1000), cluster "c" marked new on it; the nodes are
// given the Sentinels and the master name, never a server. The Sentinels
// promote a replica by themselves: "promotion" below is the wait until all
// three name a new primary whose ROLE is master and which has the other
// replica online.
void ReplicaFailoverTest::on_redis_sentinel() {
  test::RedisSentinelSet set;
  ASSERT_TRUE(set.started()) << set.why();
  ASSERT_EQ(set.primary().cli({"SET", "snowid:{c}:created", "0"}), "OK\n");
  ReplicatedStore db;
  db.store = "redis";
  db.node_args = {"--redis-sentinels", set.sentinels_text(), "--redis-sentinel-master",
                  test::RedisSentinelSet::kMaster};
  db.replication_problem = [&set] {
    const std::string info = set.primary().cli({"INFO", "replication"});
    std::size_t online = 0;
    for (std::size_t at = info.find("state=online"); at != std::string::npos;
         at = info.find("state=online", at + 1)) {
      ++online;
    }
    return online == 2 ? "" : "not both replicas are in sync: " + info;
  };
  std::string old;
  db.kill_primary = [&set, &old] { old = set.kill_primary(); };
  db.promote_replica = [&set, &old] {
    const std::string promoted = set.wait_for_new_primary(old, milliseconds{20000});
    EXPECT_NE(promoted, "") << "the Sentinels named no new primary within 20 s" << set.logs();
    return !promoted.empty();
  };
  db.claims = [&set] {
    RedisOptions options;
    options.endpoints = {set.primary().endpoint()};
    options.cluster = "c";
    options.layout = *preset("twitter");
    auto claims = list_cluster(options);
    EXPECT_TRUE(claims.ok()) << claims.error().message;
    return claims.ok() ? *claims : std::vector<ClusterNode>{};
  };
  failover(db, 0ms);
}

const char* const kExpected =
    "no node serves from one lease after the kill until the promotion; every node serves again "
    "within 15 s of the promotion (and still does three leases later); no node id live on two "
    "nodes at any look at /v1/info; one live claim per node on the promoted server, held by its "
    "process; every ID, before and after, at or below the promoted server's reservation for its "
    "node id; 0 duplicates";

TEST_F(ReplicaFailoverTest, PostgresPrimaryDiesAndTheSynchronousStandbyIsPromotedAtOnce) {
  scenario.describe(
      "postgres_failover/at_once",
      "postgres: the primary dies under load and its synchronous standby is promoted at once",
      "streaming replication (pg_basebackup -R), synchronous_standby_names = the standby, "
      "synchronous_commit = on; 3 snowidd nodes on postgresql://...@PRIMARY,STANDBY/...; "
      "pg_ctl stop -m immediate on the primary, pg_ctl promote on the standby",
      kExpected);
  on_postgres(0ms);
}

TEST_F(ReplicaFailoverTest, PostgresPrimaryDiesAndTheStandbyIsPromotedAfterTheLeasesEnd) {
  scenario.describe(
      "postgres_failover/after_3s",
      "postgres: the primary dies under load and its synchronous standby is promoted 3 s later "
      "(lease 2 s)",
      "as postgres_failover/at_once, pg_ctl promote 3 s after the kill", kExpected);
  on_postgres(3000ms);
}

TEST_F(ReplicaFailoverTest, MariadbPrimaryDiesAndTheSemiSyncReplicaIsPromotedAtOnce) {
  scenario.describe(
      "mysql_failover/at_once",
      "mysql: the MariaDB primary dies under load and its semi-sync replica is promoted at once",
      "GTID replication, rpl_semi_sync_master_wait_point = AFTER_SYNC, timeout 1 h; 3 snowidd "
      "nodes through a TCP proxy (the virtual IP); SIGKILL to the primary; the replica applies "
      "what it received, STOP SLAVE, RESET SLAVE ALL, read_only OFF; the proxy repointed",
      kExpected);
  on_mysql(0ms);
}

TEST_F(ReplicaFailoverTest, MariadbPrimaryDiesAndTheReplicaNamedInTheUrlIsPromotedAtOnce) {
  scenario.describe(
      "mysql_failover/host_list",
      "mysql: the MariaDB primary dies under load and its semi-sync replica, the second host of "
      "the nodes' URL, is promoted at once",
      "as mysql_failover/at_once, the nodes on mysql://...@PRIMARY,REPLICA/snowid (no proxy): "
      "until the promotion their statements fail on the primary and their writes on the "
      "read-only replica",
      kExpected);
  on_mysql(0ms, true);
}

TEST_F(ReplicaFailoverTest, MariadbPrimaryDiesAndTheReplicaIsPromotedAfterTheLeasesEnd) {
  scenario.describe(
      "mysql_failover/after_3s",
      "mysql: the MariaDB primary dies under load and its semi-sync replica is promoted 3 s "
      "later (lease 2 s)",
      "as mysql_failover/at_once, the promotion and the proxy's move 3 s after the kill",
      kExpected);
  on_mysql(3000ms);
}

TEST_F(ReplicaFailoverTest, RedisPrimaryDiesAndTheSentinelsPromoteAReplica) {
  scenario.describe(
      "redis_failover/sentinel",
      "redis: the primary dies under load and the Sentinels promote one of its two replicas",
      "a primary, 2 replicas (--replicaof; min-replicas-to-write 1) and 3 Sentinels (quorum 2, "
      "down-after-milliseconds 1000, failover-timeout 5000) on loopback; 3 snowidd nodes on "
      "--redis-sentinels (the 3) "
      "and --redis-sentinel-master, WAIT for every replica in sync before a reservation counts; "
      "SIGKILL to the primary, nothing done by hand after it",
      kExpected);
  on_redis_sentinel();
}

}  // namespace
}  // namespace snowid
