// A leasing store that loses its data, alone or with a node restarting with
// its clock behind: real snowidd nodes, a real etcd, Redis or ZooKeeper, a
// load that keeps every ID, and the uniqueness check over all of them.
//
// - etcd emptied (`del --prefix /snowid/`, or its data directory wiped)
//   while node A serves node id 0, and node B started for id 0 at once: B
//   starts above everything A could issue, A stops at its next renewal and
//   says so at warning level.
// - The store loses its data while a node is stopped (Redis FLUSHALL,
//   ZooKeeper's or etcd's data directory wiped), and the node restarts on
//   the same state directory with its clock behind (libfaketime): it refuses
//   to start, saying that its clock is behind the store's (or its mark),
//   or, less than max_peer_clock_offset behind, waits, and once its clock is
//   right starts above its own earlier IDs; it reports the store loss in
//   its log, /readyz, /metrics and /v1/info until an operator confirms with
//   `snowid cluster confirm-loss`.
// - A leased node's SQLite segment store put back from an older copy: the
//   node refuses the stale ranges (its range memory, as a fixed node's); a
//   second snowidd on its state directory is refused at start.
// - A leased node's state directory lost together with the store's data: its
//   audit log, kept elsewhere, keeps it above its earlier IDs.
// Leases are 2-3 s so that each scenario takes seconds.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "chaos.h"
#include "etcd_process.h"
#include "faketime.h"
#include "mariadb_process.h"
#include "missing.h"
#include "postgres_process.h"
#include "redis_process.h"
#include "server_process.h"
#include "snowid/decode.h"
#include "sql_cluster.h"
#include "subprocess.h"
#include "zookeeper_claim.h"
#include "zookeeper_coordinator.h"
#include "zookeeper_process.h"
#include "zookeeper_session.h"

namespace snowid {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using test::ServerProcess;

// A store as the scenarios see it: how a node leases from it, how an
// operator marks cluster "c" new to it, and how it loses its data.
struct LossStore {
  std::string name;
  std::vector<std::string> node_args;  // --coordinator ... --lease-ttl-s ...
  std::function<void()> mark_new_cluster;
  std::function<bool()> lose_data;
};

LossStore etcd_store(test::EtcdCluster& etcd, bool wipe) {
  return {"etcd",
          {"--coordinator", "etcd", "--etcd-endpoints", etcd.endpoint(0), "--lease-ttl-s", "2"},
          [&etcd] { ASSERT_EQ(etcd.mark_new_cluster("c"), ""); },
          [&etcd, wipe] { return wipe ? etcd.wipe(0) : etcd.delete_snowid_keys().empty(); }};
}

LossStore redis_store(test::RedisServer& redis) {
  return {"redis",
          {"--coordinator", "redis", "--redis-endpoints", redis.endpoint(), "--lease-ttl-s", "2"},
          [&redis] {
            redis.cli({"SET", "snowid:{c}:created", "0"});
          },
          [&redis] { return redis.cli({"FLUSHALL"}).find("OK") != std::string::npos; }};
}

LossStore zookeeper_store(test::ZooKeeperEnsemble& zookeeper) {
  return {"zookeeper",
          {"--coordinator", "zookeeper", "--zookeeper-endpoints", zookeeper.endpoints_text(),
           "--zookeeper-tick-ms", std::to_string(test::ZooKeeperEnsemble::kTickTime.count()),
           "--lease-ttl-s", "3"},
          [&zookeeper] {
            ZooKeeperOptions options;
            options.endpoints = zookeeper.endpoints();
            options.cluster = "c";
            options.layout = *preset("twitter");
            options.tick_time = test::ZooKeeperEnsemble::kTickTime;
            options.lease_ttl = 3s;
            coord::StoreCounters counters;
            auto session = coord::ZooKeeperSession::open(options, counters);
            ASSERT_TRUE(session.ok()) << session.error().message;
            for (const std::string& path :
                 {std::string("/snowid"), coord::zookeeper_cluster_path("c")}) {
              (*session)->create(path, "", false);
            }
            ASSERT_TRUE((*session)->create(coord::zookeeper_created_path("c"), "0", false).ok());
          },
          [&zookeeper] { return zookeeper.wipe(0); }};
}

// PostgreSQL and MariaDB: the claims table dropped, as by an operator's
// mistake or a restore of a database taken before it existed; the next node
// makes it again on first use, with no created row.
LossStore sql_store(const std::string& name, const std::string& url, const std::string& schema,
                    std::function<bool(const std::string&)> sql) {
  return {name,
          {"--coordinator", name, "--" + name + "-url", url, "--lease-ttl-s", "2"},
          [sql, schema] {
            ASSERT_TRUE(test::mark_new_sql_cluster(
                sql, std::string(SNOWID_SOURCE_DIR) + "/sql/" + schema, "c"));
          },
          [sql] { return sql("DROP TABLE snowid_node_claims"); }};
}

class StoreLossChaos : public test::ChaosTest {
 protected:
  // A node of cluster "c" preferring node id 0, its state in `name`.
  std::unique_ptr<ServerProcess> start_node(const LossStore& store, const std::string& name,
                                            std::vector<std::string> extra = {},
                                            const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> args = store.node_args;
    args.insert(args.end(), {"--cluster", "c", "--worker-id", "0", "--lease-safety-margin-ms",
                             "500", "--state-dir", scenario.dir.file(name)});
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<ServerProcess>(SNOWIDD_PATH, args, env);
  }

  // Two HTTP clients and a gRPC client per node; nodes stop and start.
  static test::LoadOptions load_options() {
    return test::batches_across_restarts();
  }

  // Two faults: the store loses its data while its only node is stopped,
  // and the node restarts with its clock `behind` (then once more with its
  // clock right).
  void loss_then_restart_behind(const LossStore& store, milliseconds behind, bool waits);
  // The restart with the clock `behind`. It must exit 1 naming the mark its
  // clock is behind (claim_timeout_ms 3000), or, with `waits` (claim_timeout_ms
  // 20000), start once its clock passed its own mark or the store's floor,
  // above it, and serve.
  void restart_behind(const LossStore& store, test::NodeAddress& address, test::Load& load,
                      milliseconds behind, bool waits);
};

// Not ready with the loss, then ready once an operator confirmed it.
void expect_loss_reported_until_confirmed(const ServerProcess& node, const std::string& state_dir,
                                          const std::string& store) {
  const test::HttpReply ready = test::http_get(node.port(), "/readyz");
  EXPECT_EQ(ready.status, 503) << ready.body;
  EXPECT_NE(ready.body.find("lost its data"), std::string::npos) << ready.body;
  EXPECT_GE(test::metric(node.port(), "snowid_cluster_store_losses_total"), 1);
  const auto info =
      nlohmann::json::parse(test::http_get(node.port(), "/v1/info").body, nullptr, false);
  EXPECT_TRUE(info["cluster"]["store_loss_unconfirmed"].is_string()) << info.dump();
  EXPECT_NE(node.log().find("warning store loss detected: the " + store), std::string::npos)
      << node.log();

  const auto confirmed =
      test::run_process({SNOWID_CLI_PATH, "cluster", "confirm-loss", "--state-dir", state_dir});
  EXPECT_EQ(confirmed.exit_code, 0) << confirmed.out << confirmed.err;
  EXPECT_TRUE(test::wait_until([&] { return test::http_get(node.port(), "/readyz").status == 200; },
                               5000ms))
      << test::http_get(node.port(), "/readyz").body;
  EXPECT_EQ(test::metric(node.port(), "snowid_cluster_store_loss_unconfirmed"), 0);
}

void StoreLossChaos::restart_behind(const LossStore& store, test::NodeAddress& address,
                                    test::Load& load, milliseconds behind, bool waits) {
  auto late = start_node(store, "node", {"--claim-timeout-ms", waits ? "20000" : "3000"},
                         test::faketime_fixed_env(behind));
  if (!waits) {
    EXPECT_FALSE(late->started()) << "started with its clock behind its earlier IDs: "
                                  << late->log();
    EXPECT_EQ(late->wait(30s), 1) << late->log();
    // Behind the store's own clock by more than max_peer_clock_offset (it
    // is checked first), or behind its own mark.
    const std::string log = late->log();
    EXPECT_TRUE(log.find("s clock (") != std::string::npos ||
                log.find("behind the high-water mark") != std::string::npos)
        << log;
    EXPECT_NE(log.find(" behind "), std::string::npos) << log;
    return;
  }
  ASSERT_TRUE(late->started()) << late->log();
  // Above its own mark, or above the takeover floor where the store's clock
  // put that floor higher.
  const bool above_a_mark = late->log().find("from this node's own mark") != std::string::npos ||
                            late->log().find("from the takeover floor") != std::string::npos;
  EXPECT_TRUE(above_a_mark) << late->log();
  address.set(late->port(), late->grpc_port());
  ASSERT_TRUE(load.wait_served(load.served_counts(), 20, 15s)) << late->log();
  address.retire();
  late->signal(SIGTERM);
  EXPECT_EQ(late->wait(), 0) << late->log();
}

void StoreLossChaos::loss_then_restart_behind(const LossStore& store, milliseconds behind,
                                              bool waits) {
  if (test::faketime_library().empty()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  const std::string seconds_behind = std::to_string(-behind.count() / 1000);
  scenario.describe(
      "store_loss/" + store.name + "_lost_then_restart_clock_behind_" + seconds_behind + "s",
      store.name +
          " loses its data while its only node is stopped; the node restarts on the same state "
          "directory with its clock " +
          seconds_behind + " s behind",
      "SIGTERM after 3 s of load; " +
          std::string(store.name == "redis"                               ? "FLUSHALL"
                      : store.name == "postgres" || store.name == "mysql" ? "claims table dropped"
                                                                          : "data directory wiped") +
          "; libfaketime FAKETIME=" + test::faketime_offset(behind) + ", claim_timeout_ms " +
          (waits ? "20000" : "3000") + "; then a start with the clock right",
      std::string(waits ? "the start with the clock behind waits until its clock passes its own "
                          "mark and issues above it"
                        : "the start with the clock behind exits 1 naming the mark its clock is "
                          "behind") +
          "; the next start issues above every earlier ID and reports the store loss until "
          "confirmed");
  store.mark_new_cluster();
  test::NodeAddress address;
  test::Load load({&address}, load_options());
  auto node = start_node(store, "node");
  ASSERT_TRUE(node->started()) << node->log();
  address.set(node->port(), node->grpc_port());
  ASSERT_TRUE(load.wait_served(load.served_counts(), 1, 15s)) << node->log();
  std::this_thread::sleep_for(3s);
  address.retire();
  node->signal(SIGTERM);
  ASSERT_EQ(node->wait(), 0) << node->log();
  ASSERT_TRUE(store.lose_data());

  restart_behind(store, address, load, behind, waits);

  const auto restarted_at = test::SteadyClock::now();
  auto right = start_node(store, "node");
  ASSERT_TRUE(right->started()) << right->log();
  address.set(right->port(), right->grpc_port());
  ASSERT_TRUE(load.wait_served(load.served_counts(), 20, 30s)) << right->log();
  scenario.record.recovery_ms =
      std::chrono::duration_cast<milliseconds>(test::SteadyClock::now() - restarted_at).count();
  load.stop();
  expect_loss_reported_until_confirmed(*right, scenario.dir.file("node"), store.name);
  EXPECT_EQ(load.unexpected(), "");
  scenario.count(load);
  scenario.check(load.sources(), /*histories=*/true);
}

TEST_F(StoreLossChaos, RedisFlushedThenRestartWithTheClock20sBehind) {
  test::RedisServer redis;
  ASSERT_TRUE(redis.started()) << redis.why();
  loss_then_restart_behind(redis_store(redis), -20000ms, /*waits=*/false);
}

TEST_F(StoreLossChaos, ZooKeeperWipedThenRestartWithTheClock20sBehind) {
  test::ZooKeeperEnsemble zookeeper(1);
  ASSERT_TRUE(zookeeper.started()) << zookeeper.why();
  loss_then_restart_behind(zookeeper_store(zookeeper), -20000ms, /*waits=*/false);
}

TEST_F(StoreLossChaos, PostgresClaimsDroppedThenRestartWithTheClock20sBehind) {
  if (!test::PostgresProcess::available()) SNOWID_SKIP_MISSING(test::PostgresProcess::kMissing);
  test::PostgresProcess postgres;
  ASSERT_TRUE(postgres.started()) << postgres.error();
  loss_then_restart_behind(
      sql_store("postgres", postgres.url(), "node_claims.sql",
                [&postgres](const std::string& sql) { return postgres.psql(sql); }),
      -20000ms, /*waits=*/false);
}

TEST_F(StoreLossChaos, MysqlClaimsDroppedThenRestartWithTheClock20sBehind) {
  if (!test::MariadbProcess::available()) SNOWID_SKIP_MISSING(test::MariadbProcess::kMissing);
  test::MariadbProcess mariadb;
  ASSERT_TRUE(mariadb.started()) << mariadb.error();
  loss_then_restart_behind(
      sql_store("mysql", mariadb.url(), "node_claims.mysql.sql",
                [&mariadb](const std::string& sql) { return mariadb.sql(sql); }),
      -20000ms, /*waits=*/false);
}

// The floor after the loss rests on etcd's time (its HTTP Date) and the
// node's own mark, whichever is higher; the node's clock, 8 s behind, waits
// until it passes it.
TEST_F(StoreLossChaos, EtcdWipedThenRestartWithTheClock8sBehind) {
  test::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  loss_then_restart_behind(etcd_store(etcd, /*wipe=*/true), -8000ms, /*waits=*/true);
}

class EtcdEmptiedUnderANode : public StoreLossChaos, public ::testing::WithParamInterface<bool> {};

// The node id an ID (twitter layout, the nodes' default) was issued under.
std::uint64_t node_id_of(test::Number id) {
  const auto fields = decode(*preset("twitter"), static_cast<Id>(id));
  EXPECT_TRUE(fields.ok()) << id;
  return fields.ok() ? fields->datacenter << preset("twitter")->worker_bits | fields->worker
                     : ~std::uint64_t{0};
}

// A serves id 0; etcd is emptied; B starts preferring id 0 at once. After
// `del` B gets it (A's lease lives on, its key is gone); after a wipe A may
// notice first and take it back. Either way, whoever issues under id 0 next
// starts above A's earlier IDs.
TEST_P(EtcdEmptiedUnderANode, ASecondNodeForItsIdStartsAboveIt) {
  const bool wipe = GetParam();
  test::EtcdCluster etcd(1);
  const std::string how = wipe ? "data directory wiped" : "etcdctl del --prefix /snowid/";
  scenario.describe(
      std::string("store_loss/etcd_emptied_under_a_node_") + (wipe ? "wiped" : "del_prefix"),
      "etcd loses every snowid key while node A serves node id 0; node B is started preferring "
      "node id 0 at once",
      how + " under load on A; B preferring node id 0 (A, re-claiming, or B gets it)",
      "whoever issues under id 0 after the loss issues above every ID A issued before it; A stops "
      "at its next renewal and logs the lost claim at warning level; both serve; 0 duplicates");
  ASSERT_TRUE(etcd.started()) << etcd.why();
  const LossStore store = etcd_store(etcd, wipe);
  store.mark_new_cluster();
  test::NodeAddress a_address, b_address;
  test::Load load({&a_address, &b_address}, load_options());
  auto a = start_node(store, "a");
  ASSERT_TRUE(a->started()) << a->log();
  a_address.set(a->port(), a->grpc_port());
  ASSERT_TRUE(test::wait_until([&] { return load.served(0) >= 20; }, 15000ms)) << a->log();
  // The load paused, one more ID from A lies above every ID A issued before
  // it (one generator): the mark every ID under id 0 issued after the loss
  // must pass. A's connections from here on belong to its next incarnation
  // number, so that its sources split at the mark.
  load.pause(true);
  std::this_thread::sleep_for(200ms);  // a request under way finishes
  const test::HttpReply mark_reply = test::http_get(a->port(), "/v1/ids?count=1&format=text");
  ASSERT_EQ(mark_reply.status, 200) << mark_reply.body;
  const test::Number a_mark = std::stoll(mark_reply.body);
  a_address.retire();
  a_address.set(a->port(), a->grpc_port());
  const std::uint64_t a_incarnation_after_mark = a_address.get().incarnation;
  load.pause(false);

  ASSERT_TRUE(store.lose_data());
  const auto lost_at = test::SteadyClock::now();
  auto b = start_node(store, "b", {"--claim-timeout-ms", "20000"});
  ASSERT_TRUE(b->started()) << b->log();
  b_address.set(b->port(), b->grpc_port());
  ASSERT_TRUE(test::wait_until([&] { return load.served(1) >= 20; }, 25000ms)) << b->log();
  scenario.record.recovery_ms =
      std::chrono::duration_cast<milliseconds>(test::SteadyClock::now() - lost_at).count();
  const std::uint64_t a_served = load.served(0);  // A serves again, re-claimed
  EXPECT_TRUE(test::wait_until([&] { return load.served(0) >= a_served + 20; }, 20000ms))
      << a->log();
  load.stop();
  EXPECT_NE(a->log().find("warning lost the claim on node id 0"), std::string::npos) << a->log();
  EXPECT_EQ(load.unexpected(), "");
  // Every ID under id 0 from after the mark, A's or B's, lies above it.
  std::uint64_t after_mark = 0, not_above = 0;
  std::string first_not_above;
  for (const test::Source& source : load.sources()) {
    if (source.node == 0 && source.incarnation < a_incarnation_after_mark) continue;
    for (const test::Number id : source.ids) {
      if (node_id_of(id) != 0) continue;
      ++after_mark;
      if (id > a_mark) continue;
      if (not_above++ == 0) first_not_above = std::to_string(id) + " (" + source.name + ")";
    }
  }
  EXPECT_GT(after_mark, 0u) << "no ID under node id 0 after the loss";
  EXPECT_EQ(not_above, 0u) << not_above << " IDs under node id 0 issued after the loss lie at or "
                           << "below A's last ID before it, " << a_mark << ", the first "
                           << first_not_above;
  scenario.record.measured = std::to_string(after_mark) + " IDs under node id 0 after the loss, " +
                             (not_above == 0 ? "all" : std::to_string(not_above) + " not") +
                             " above A's last ID before it";
  scenario.count(load);
  scenario.check(load.sources());
}

INSTANTIATE_TEST_SUITE_P(Ways, EtcdEmptiedUnderANode, ::testing::Values(false, true),
                         [](const auto& param) {
                           return std::string(param.param ? "DataDirectoryWiped" : "DelPrefix");
                         });

// A leased node's state directory: a Redis store with cluster "c" marked new
// in it, so that its first node need not start ahead.
class LeasedStateDirectoryChaos : public StoreLossChaos {
 protected:
  void SetUp() override {
    ASSERT_TRUE(redis.started()) << redis.why();
    store.mark_new_cluster();
  }

  test::RedisServer redis;
  const LossStore store = redis_store(redis);
};

// Copies the SQLite database `from` (with its WAL files, if any) over `to`.
void copy_sqlite(const std::string& from, const std::string& to) {
  for (const std::string suffix : {"", "-wal", "-shm"}) {
    std::filesystem::remove(to + suffix);
    if (std::filesystem::exists(from + suffix)) {
      std::filesystem::copy_file(from + suffix, to + suffix);
    }
  }
}

// Up to `requests` requests of 10 numbers of `tag` from `node`, until one is
// refused (503); the numbers served go to `source`. Returns the refusals.
int draw_segment(const ServerProcess& node, const std::string& tag, int requests,
                 test::Source& source) {
  for (int i = 0; i < requests; ++i) {
    const auto reply = test::http_get(node.port(), "/v1/segment/" + tag + "?count=10&format=text");
    if (reply.status == 503) return 1;
    EXPECT_EQ(reply.status, 200) << reply.body;
    std::istringstream numbers(reply.body);
    for (test::Number number = 0; numbers >> number;) source.ids.push_back(number);
  }
  return 0;
}

// `requests` requests of 20 IDs from `node`; the IDs go to `source`.
void draw_ids(const ServerProcess& node, int requests, test::Source& source) {
  for (int i = 0; i < requests; ++i) {
    const auto reply = test::http_get(node.port(), "/v1/ids?count=20&format=text");
    ASSERT_EQ(reply.status, 200) << reply.body;
    std::istringstream ids(reply.body);
    for (test::Number id = 0; ids >> id;) source.ids.push_back(id);
  }
}

// A leased node's state directory lost together with the store's data
// (Redis FLUSHALL): with an audit log kept elsewhere, the node never starts
// below the IDs it recorded under the node id it claims; with its clock
// 20 s behind it refuses, with its clock right it starts above them, and
// both times it says why at error level.
TEST_F(LeasedStateDirectoryChaos, LostWithTheStoreIsCaughtByTheAuditLog) {
  if (test::faketime_library().empty()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  scenario.describe("leased_state_dir_lost_with_the_store",
                    "a leased node's state directory and its Redis store's data lost while it is "
                    "stopped; its audit log kept elsewhere",
                    "rm -r of the state directory, FLUSHALL, created 0; a restart with FAKETIME "
                    "-20s, then one with the clock right",
                    "the first restart refuses, the second starts above every audited ID; both "
                    "log the restore at error level");
  const std::string audit = scenario.dir.file("audit.log");
  const std::vector<std::string> audit_args = {"--audit-log", audit};
  std::vector<test::Source> sources(2);
  sources[0].name = "before";
  sources[1].name = "after";
  auto node = start_node(store, "node", audit_args);
  ASSERT_TRUE(node->started()) << node->log();
  draw_ids(*node, 50, sources[0]);
  node->signal(SIGTERM);
  ASSERT_EQ(node->wait(), 0) << node->log();
  std::filesystem::remove_all(scenario.dir.file("node"));
  ASSERT_TRUE(store.lose_data());
  store.mark_new_cluster();

  std::vector<std::string> late_args = audit_args;
  late_args.insert(late_args.end(), {"--claim-timeout-ms", "3000"});
  auto late = start_node(store, "node", late_args, test::faketime_fixed_env(-20000ms));
  EXPECT_FALSE(late->started()) << "started below its audited IDs: " << late->log();
  EXPECT_EQ(late->wait(30s), 1) << late->log();
  // Refused by the store's clock (checked first), or by its audited IDs.
  const std::string refusal = late->log();
  EXPECT_TRUE(refusal.find("behind Redis's clock") != std::string::npos ||
              refusal.find("restored from an older copy") != std::string::npos)
      << refusal;

  node = start_node(store, "node", audit_args);
  ASSERT_TRUE(node->started()) << node->log();
  EXPECT_NE(node->log().find(" error the audit log " + audit), std::string::npos) << node->log();
  draw_ids(*node, 50, sources[1]);
  ASSERT_FALSE(sources[1].ids.empty());
  EXPECT_GT(*std::min_element(sources[1].ids.begin(), sources[1].ids.end()),
            *std::max_element(sources[0].ids.begin(), sources[0].ids.end()));
  scenario.check(sources);
}

// A leased node remembers, in its state directory, the ranges its segment
// store handed it, as a node with a fixed id does: the store put back from
// a copy taken before the load is refused, not repeated.
TEST_F(LeasedStateDirectoryChaos, ARestoredSegmentStoreIsRefusedNotRepeated) {
  scenario.describe("leased_node_segment_store_restored",
                    "the SQLite segment store of a leased node (Redis) put back from a copy taken "
                    "before the load",
                    "copy the database; draw 300 numbers; stop the node; copy the database back; "
                    "start the node again on its state directory",
                    "no number repeated: the node refuses the tag (503, an error in the log)");
  const std::string db = scenario.dir.file("segments.db");
  const std::string tag = "leased.restore";
  const std::vector<std::string> segment_args = {"--segment-store", "sqlite://" + db};
  const auto created = test::run_process({SNOWID_CLI_PATH, "segment", "create", tag, "--step", "10",
                                          "--segment-store", "sqlite://" + db},
                                         {}, 20s);
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const std::string backup = scenario.dir.file("segments-before-load.db");
  copy_sqlite(db, backup);

  std::vector<test::Source> sources(2);
  sources[0].name = "before-restore";
  sources[1].name = "after-restore";
  auto node = start_node(store, "node", segment_args);
  ASSERT_TRUE(node->started()) << node->log();
  EXPECT_EQ(draw_segment(*node, tag, 30, sources[0]), 0) << node->log();
  node->signal(SIGTERM);
  ASSERT_EQ(node->wait(), 0) << node->log();

  copy_sqlite(backup, db);
  node = start_node(store, "node", segment_args);
  ASSERT_TRUE(node->started()) << node->log();
  EXPECT_EQ(draw_segment(*node, tag, 30, sources[1]), 1) << node->log();
  EXPECT_TRUE(sources[1].ids.empty()) << sources[1].ids.size() << " numbers served again";
  EXPECT_NE(node->log().find(" error segment tag '" + tag + "' refused"), std::string::npos)
      << node->log();
  scenario.check(sources);
}

// One snowidd per state directory in cluster mode too: a second node on it
// is refused before it claims a node id, whatever its cluster, and so is a
// node with a fixed id.
TEST_F(LeasedStateDirectoryChaos, ASecondNodeOnItIsRefused) {
  scenario.describe("second_node_on_a_leased_state_directory",
                    "two snowidd processes started on one state directory",
                    "a leased node of cluster c (Redis); then a node of cluster d, and one with a "
                    "fixed id, on its state directory",
                    "both refused at start (exit 1, naming the directory in use)");
  auto first = start_node(store, "node");
  ASSERT_TRUE(first->started()) << first->log();

  const std::string state = scenario.dir.file("node");
  std::vector<std::string> other_cluster = store.node_args;
  other_cluster.insert(other_cluster.end(), {"--cluster", "d", "--state-dir", state});
  for (const auto& args : {other_cluster, std::vector<std::string>{"--state-dir", state}}) {
    ServerProcess second(SNOWIDD_PATH, args);
    EXPECT_FALSE(second.started()) << second.log();
    EXPECT_EQ(second.wait(), 1) << second.log();
    EXPECT_NE(second.log().find("in use by another"), std::string::npos) << second.log();
  }
  EXPECT_EQ(redis.cli({"EXISTS", "snowid:{d}:claim:0"}).find("1"), std::string::npos)
      << "the refused node of cluster d claimed a node id";
  EXPECT_EQ(test::http_get(first->port(), "/readyz").status, 200) << first->log();
}

}  // namespace
}  // namespace snowid
