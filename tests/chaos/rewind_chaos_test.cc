// A store whose record goes back while a node serves: real snowidd nodes, a
// real PostgreSQL, MariaDB or Redis, a load that keeps every ID, and the
// uniqueness check over all of them (docs/design.md, "A node never trusts a
// store's record to be current").
//
// - The claims table restored from a dump (pg_dump, mariadb-dump) taken
//   while node A served node id 0, and node C started for id 0 at once with
//   its clock 3 s behind (within the peer tolerance): C starts above the
//   takeover floor, A stops saying its claim is gone.
// - uid-generator's WORKER_NODE restored (disposable node ids): a later
//   start gets the id of a node that still runs; that node stops once its
//   row is gone, and the start begins above the takeover floor.
// - A node whose clock runs 20 s ahead of Redis's is refused, saying so.
// - etcd behind a proxy that carries gRPC but not HTTP/1.1 (its clock cannot
//   be read), its data wiped after node A served: node B, 20 s behind,
//   refuses to claim, saying why; with the clock readable it is refused for
//   being behind; A's own restart issues above what A issued.
// - Two clusters with one layout in one claims table: the second is
//   refused, naming the first, unless share_id_space says their IDs never
//   meet.
// Leases are 2 s so that each scenario takes seconds.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "chaos.h"
#include "etcd_process.h"
#include "fault_proxy.h"
#include "faketime.h"
#include "mariadb_process.h"
#include "missing.h"
#include "postgres_process.h"
#include "redis_process.h"
#include "server_process.h"
#include "sql_cluster.h"
#include "subprocess.h"

namespace snowid {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using test::ServerProcess;

// A SQL store as the scenarios see it: how a node leases from it, how an
// operator marks cluster "c" new to it, and its real backup and restore.
struct RewindStore {
  std::string name;
  std::vector<std::string> node_args;  // --coordinator ... --lease-ttl-s 2
  std::function<bool(const std::string&)> sql;
  std::string schema;  // the claims table's file in sql/
  std::function<bool(const std::string& file)> dump;
  std::function<bool(const std::string& file)> restore;
};

RewindStore postgres_store(test::PostgresProcess& postgres) {
  return {"postgres",
          {"--coordinator", "postgres", "--postgres-url", postgres.url(), "--lease-ttl-s", "2"},
          [&postgres](const std::string& sql) { return postgres.psql(sql); },
          "node_claims.sql",
          [&postgres](const std::string& file) { return postgres.dump(file); },
          [&postgres](const std::string& file) { return postgres.restore(file); }};
}

RewindStore mysql_store(test::MariadbProcess& mariadb) {
  return {"mysql",
          {"--coordinator", "mysql", "--mysql-url", mariadb.url(), "--lease-ttl-s", "2"},
          [&mariadb](const std::string& sql) { return mariadb.sql(sql); },
          "node_claims.mysql.sql",
          [&mariadb](const std::string& file) { return mariadb.dump("snowid", file); },
          [&mariadb](const std::string& file) { return mariadb.restore("snowid", file); }};
}

// libfaketime's environment for a clock `offset` from the real one; without
// libfaketime the scenario runs with every clock right, and fails under CI,
// which must run all of it.
std::map<std::string, std::string> clock_offset(milliseconds offset) {
  if (!test::faketime_library().empty()) return test::faketime_fixed_env(offset);
  if (test::running_in_ci()) ADD_FAILURE() << test::kFaketimeMissing << " (CI=true)";
  return {};
}

class RewindChaos : public test::ChaosTest {
 protected:
  // A node of `cluster` asking for node id 0, its state in `name`.
  std::unique_ptr<ServerProcess> start_node(const std::vector<std::string>& store_args,
                                            const std::string& name,
                                            std::vector<std::string> extra = {},
                                            const std::map<std::string, std::string>& env = {},
                                            const std::string& cluster = "c") {
    std::vector<std::string> args = store_args;
    args.insert(args.end(), {"--cluster", cluster, "--worker-id", "0", "--lease-safety-margin-ms",
                             "500", "--state-dir", scenario.dir.file(name)});
    if (std::find(extra.begin(), extra.end(), "--claim-timeout-ms") == extra.end()) {
      args.insert(args.end(), {"--claim-timeout-ms", "20000"});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<ServerProcess>(SNOWIDD_PATH, args, env);
  }

  static test::LoadOptions load_options() {
    return test::batches_across_restarts();
  }

  void claims_restored_under_a_node(const RewindStore& store);
};

// A serves id 0 (require); a dump; 3 s later (A's lease in the dump has
// ended) A is paused so that it cannot take the id back first, the dump is
// restored, and C (require, clock 3 s behind) starts for id 0. Under the old
// rule C started above the restored reservation, below A's last IDs.
void RewindChaos::claims_restored_under_a_node(const RewindStore& store) {
  scenario.describe(
      "rewind/" + store.name + "_claims_restored_from_a_dump_under_a_node",
      "the claims table put back from a dump taken while node A served node id 0",
      "dump under load on A; 3 s later A paused, the dump restored, node C started for id 0 "
      "with its clock 3 s behind; A resumed",
      "C starts above the takeover floor (the database's clock + lease_ttl + reserve_ahead); "
      "A stops, logging the lost claim at warning level; 0 duplicates");
  ASSERT_TRUE(test::mark_new_sql_cluster(
      store.sql, std::string(SNOWID_SOURCE_DIR) + "/sql/" + store.schema, "c"));
  test::NodeAddress a_address, c_address;
  test::Load load({&a_address, &c_address}, load_options());
  auto a = start_node(store.node_args, "a", {"--node-id-policy", "require"});
  ASSERT_TRUE(a->started()) << a->log();
  a_address.set(a->port(), a->grpc_port());
  ASSERT_TRUE(test::wait_until([&] { return load.served(0) >= 20; }, 20000ms)) << a->log();

  const std::string dump = scenario.dir.file("claims.sql");
  ASSERT_TRUE(store.dump(dump));
  std::this_thread::sleep_for(3s);
  ASSERT_TRUE(test::wait_until([&] { return load.served(0) >= 40; }, 10000ms)) << a->log();
  a->signal(SIGSTOP);
  ASSERT_TRUE(store.restore(dump));
  auto c = start_node(store.node_args, "c", {"--node-id-policy", "require"}, clock_offset(-3000ms));
  a->signal(SIGCONT);
  ASSERT_TRUE(c->started()) << c->log();
  c_address.set(c->port(), c->grpc_port());
  ASSERT_TRUE(test::wait_until([&] { return load.served(1) >= 20; }, 20000ms)) << c->log();
  // A, resumed past its lease, fences at its next tick and says so.
  EXPECT_TRUE(test::wait_until(
      [&] { return a->log().find("warning lost the claim on node id 0") != std::string::npos; },
      5000ms))
      << a->log();
  load.stop();
  EXPECT_NE(c->log().find("takeover floor"), std::string::npos) << c->log();
  EXPECT_EQ(load.unexpected(), "");
  scenario.count(load);
  scenario.check(load.sources());
}

TEST_F(RewindChaos, PostgresClaimsRestoredFromADumpUnderANode) {
  if (!test::PostgresProcess::available()) SNOWID_SKIP_MISSING(test::PostgresProcess::kMissing);
  test::PostgresProcess postgres;
  ASSERT_TRUE(postgres.started()) << postgres.error();
  claims_restored_under_a_node(postgres_store(postgres));
}

TEST_F(RewindChaos, MysqlClaimsRestoredFromADumpUnderANode) {
  if (!test::MariadbProcess::available()) SNOWID_SKIP_MISSING(test::MariadbProcess::kMissing);
  test::MariadbProcess mariadb;
  ASSERT_TRUE(mariadb.started()) << mariadb.error();
  claims_restored_under_a_node(mysql_store(mariadb));
}

// The node id a node took, from /v1/info.
std::optional<std::uint64_t> node_id_of(const ServerProcess& node) {
  const auto info =
      nlohmann::json::parse(test::http_get(node.port(), "/v1/info").body, nullptr, false);
  const auto& id = info["cluster"]["node_id"];
  if (!id.is_number_unsigned()) return std::nullopt;
  return id.get<std::uint64_t>();
}

// N1 starts; a dump; N2 starts and serves; N1 stops; the dump is restored,
// with WORKER_NODE's counter; N3 (clock 3 s behind) gets N2's id again.
TEST_F(RewindChaos, DisposableWorkerNodeRestoredUnderANode) {
  scenario.describe(
      "rewind/disposable_worker_node_restored_under_a_node",
      "uid-generator's WORKER_NODE put back from a dump while node N2 serves the id it took",
      "N1 started, pg_dump, N2 started under load, N1 stopped, the dump restored, N3 started "
      "with its clock 3 s behind",
      "N3 gets N2's node id again and starts above the takeover floor; N2 stops once its row is "
      "gone, saying so; 0 duplicates");
  if (!test::PostgresProcess::available()) SNOWID_SKIP_MISSING(test::PostgresProcess::kMissing);
  test::PostgresProcess postgres;
  ASSERT_TRUE(postgres.started()) << postgres.error();
  const std::vector<std::string> store = {"--coordinator",   "postgres",   "--postgres-url",
                                          postgres.url(),    "--node-id-policy", "disposable",
                                          "--lease-ttl-s", "2"};
  auto n1 = start_node(store, "n1");
  ASSERT_TRUE(n1->started()) << n1->log();
  const std::string dump = scenario.dir.file("worker_node.sql");
  ASSERT_TRUE(postgres.dump(dump)) << postgres.error();

  test::NodeAddress n2_address, n3_address;
  test::Load load({&n2_address, &n3_address}, load_options());
  auto n2 = start_node(store, "n2");
  ASSERT_TRUE(n2->started()) << n2->log();
  n2_address.set(n2->port(), n2->grpc_port());
  ASSERT_TRUE(test::wait_until([&] { return load.served(0) >= 20; }, 20000ms)) << n2->log();
  n1->signal(SIGTERM);
  EXPECT_EQ(n1->wait(), 0) << n1->log();
  ASSERT_TRUE(postgres.restore(dump)) << postgres.error();
  auto n3 = start_node(store, "n3", {}, clock_offset(-3000ms));
  ASSERT_TRUE(n3->started()) << n3->log();
  n3_address.set(n3->port(), n3->grpc_port());
  ASSERT_TRUE(test::wait_until([&] { return load.served(1) >= 20; }, 20000ms)) << n3->log();
  EXPECT_TRUE(test::wait_until(
      [&] { return n2->log().find("WORKER_NODE row of node id") != std::string::npos; }, 5000ms))
      << n2->log();
  load.stop();
  EXPECT_EQ(node_id_of(*n3), node_id_of(*n2)) << "the restore gave N3 another id: not exercised";
  EXPECT_NE(n3->log().find("takeover floor"), std::string::npos) << n3->log();
  EXPECT_EQ(test::http_get(n2->port(), "/readyz").status, 503);
  EXPECT_EQ(load.unexpected(), "");
  scenario.count(load);
  scenario.check(load.sources());
}

// A node 20 s ahead of Redis's clock neither claims nor issues: it retries
// until claim_timeout_ms and exits 1, naming Redis's clock.
TEST_F(RewindChaos, ANodeWhoseClockRunsAheadOfItsStoreIsRefused) {
  if (test::faketime_library().empty()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  test::RedisServer redis;
  ASSERT_TRUE(redis.started()) << redis.why();
  const std::vector<std::string> store = {"--coordinator", "redis", "--redis-endpoints",
                                          redis.endpoint(), "--lease-ttl-s", "2"};
  auto ahead = start_node(store, "ahead", {"--claim-timeout-ms", "3000"},
                          test::faketime_fixed_env(20000ms));
  EXPECT_FALSE(ahead->started()) << ahead->log();
  EXPECT_EQ(ahead->wait(30s), 1) << ahead->log();
  EXPECT_NE(ahead->log().find("ahead of Redis's clock"), std::string::npos) << ahead->log();
  EXPECT_EQ(redis.cli({"EXISTS", "snowid:{c}:claim:0"}), "0\n");
}

// Scenario 3 of docs/design.md's rule: a claim after the store lost its data
// never rests on the claimer's clock alone. A serves through etcd's own
// address and stops; etcd's data directory is wiped; B, 20 s behind, comes
// through a proxy that carries gRPC only, so that etcd's HTTP Date cannot be
// read: B refuses every claim and exits at claim_timeout_ms, naming etcd's
// clock. Through etcd's own address B is refused for being behind. A's
// restart with the right clock issues above every ID it issued before.
TEST_F(RewindChaos, EtcdWhoseClockCannotBeReadAfterALossRefusesAClaim) {
  if (test::faketime_library().empty()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  scenario.describe(
      "rewind/etcd_clock_unreadable_after_a_loss",
      "etcd wiped after node A served; node B 20 s behind reaches etcd through a proxy that "
      "carries gRPC but not HTTP/1.1, so etcd's clock cannot be read",
      "A serves and stops; etcd's data wiped; B (clock -20 s, fresh state) started through the "
      "gRPC-only proxy, then directly; A restarted",
      "B claims nothing either way and says why at warning level; A's restart issues above its "
      "earlier IDs; 0 duplicates");
  test::EtcdCluster etcd;
  ASSERT_TRUE(etcd.started()) << etcd.why();
  test::FaultProxy grpc_only(std::stoi(etcd.endpoint(0).substr(etcd.endpoint(0).rfind(':') + 1)));
  ASSERT_NE(grpc_only.port(), 0);
  grpc_only.http2_only();
  const auto through = [](const std::string& endpoint) {
    return std::vector<std::string>{"--coordinator", "etcd", "--etcd-endpoints", endpoint,
                                    "--lease-ttl-s", "2"};
  };
  test::NodeAddress a_address, b_address;
  test::Load load({&a_address, &b_address}, load_options());
  auto a = start_node(through(etcd.endpoint(0)), "a", {"--node-id-policy", "require"});
  ASSERT_TRUE(a->started()) << a->log();
  a_address.set(a->port(), a->grpc_port());
  ASSERT_TRUE(test::wait_until([&] { return load.served(0) >= 40; }, 20000ms)) << a->log();
  a->signal(SIGTERM);
  EXPECT_EQ(a->wait(20s), 0) << a->log();
  ASSERT_TRUE(etcd.wipe(0)) << etcd.log(0);

  auto b = start_node(through(grpc_only.endpoint()), "b", {"--claim-timeout-ms", "4000"},
                      test::faketime_fixed_env(-20000ms));
  EXPECT_FALSE(b->started()) << b->log();
  EXPECT_EQ(b->wait(30s), 1) << b->log();
  EXPECT_NE(b->log().find("cannot read etcd's clock"), std::string::npos) << b->log();
  EXPECT_NE(b->log().find("the store lost this cluster's data"), std::string::npos) << b->log();
  EXPECT_GT(grpc_only.stats().resets, 0u) << "no GET /version met the proxy";

  auto b_direct = start_node(through(etcd.endpoint(0)), "b-direct", {"--claim-timeout-ms", "4000"},
                             test::faketime_fixed_env(-20000ms));
  EXPECT_FALSE(b_direct->started()) << b_direct->log();
  EXPECT_EQ(b_direct->wait(30s), 1) << b_direct->log();
  EXPECT_NE(b_direct->log().find("behind etcd's clock"), std::string::npos) << b_direct->log();

  auto a_again = start_node(through(etcd.endpoint(0)), "a", {"--node-id-policy", "require"});
  ASSERT_TRUE(a_again->started()) << a_again->log();
  b_address.set(a_again->port(), a_again->grpc_port());
  ASSERT_TRUE(test::wait_until([&] { return load.served(1) >= 40; }, 20000ms)) << a_again->log();
  load.stop();
  EXPECT_EQ(load.unexpected(), "");
  // A's restart (load node 1) issues above every ID A issued before (node 0).
  test::Number before_max = 0, after_min = std::numeric_limits<test::Number>::max();
  for (const test::Source& source : load.sources()) {
    for (const test::Number id : source.ids) {
      if (source.node == 0) before_max = std::max(before_max, id);
      if (source.node == 1) after_min = std::min(after_min, id);
    }
  }
  EXPECT_GT(after_min, before_max) << "A's restart issued below its earlier IDs";
  scenario.count(load);
  scenario.check(load.sources());
}

// A store that stops answering while a node waits out its takeover floor:
// the claim is lost and taken again, and the start follows the claim held
// now (it used to wait on the lost claim's reservation, which never moves,
// until claim_timeout_ms).
TEST_F(RewindChaos, AClaimLostWhileTheStartWaitsIsFollowed) {
  test::RedisServer redis;
  ASSERT_TRUE(redis.started()) << redis.why();
  const std::vector<std::string> store = {"--coordinator", "redis", "--redis-endpoints",
                                          redis.endpoint(), "--lease-ttl-s", "2"};
  std::atomic<bool> paused{false};
  std::thread pauser([&] {
    // Once the claim is in Redis (the node then waits some 4 s), Redis
    // stops for longer than the lease.
    // The cluster's ID space is published last in a claim: the claim is
    // whole then, and the node waits out its floor.
    if (!test::wait_until(
            [&] { return redis.cli({"HEXISTS", "snowid:~id-spaces", "c"}) == "1\n"; }, 20000ms)) {
      return;
    }
    redis.pause();
    paused = true;
    std::this_thread::sleep_for(3500ms);
    redis.resume();
  });
  auto node = start_node(store, "n", {"--claim-timeout-ms", "30000"});
  pauser.join();
  ASSERT_TRUE(paused) << "the claim never reached Redis: " << node->log();
  ASSERT_TRUE(node->started()) << node->log();
  EXPECT_NE(node->log().find("the claim was lost while the start waited"), std::string::npos)
      << node->log();
  EXPECT_EQ(test::http_get(node->port(), "/v1/id").status, 200) << node->log();
}

// Clusters "one" and "two" in one PostgreSQL claims table, both with the
// default layout: the second is refused at start (exit 2, naming "one"),
// and starts once share_id_space says their IDs never meet.
TEST_F(RewindChaos, TwoClustersWithOneLayoutInOneTableAreRefused) {
  if (!test::PostgresProcess::available()) SNOWID_SKIP_MISSING(test::PostgresProcess::kMissing);
  test::PostgresProcess postgres;
  ASSERT_TRUE(postgres.started()) << postgres.error();
  const RewindStore sql = postgres_store(postgres);
  auto one = start_node(sql.node_args, "one", {}, {}, "one");
  ASSERT_TRUE(one->started()) << one->log();
  auto two = start_node(sql.node_args, "two", {}, {}, "two");
  EXPECT_FALSE(two->started()) << two->log();
  EXPECT_EQ(two->wait(30s), 2) << two->log();
  EXPECT_NE(two->log().find("cluster 'one'"), std::string::npos) << two->log();
  auto shared = start_node(sql.node_args, "shared", {"--share-id-space", "true"}, {}, "two");
  EXPECT_TRUE(shared->started()) << shared->log();
}

}  // namespace
}  // namespace snowid
