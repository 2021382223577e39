// Cluster mode under the faults that break fleets: snowidd nodes leasing node
// ids from a real etcd (one member, or three where the fault needs a quorum),
// Redis or ZooKeeper, clients collecting every ID they are given, then one
// fault at a time.
//
// Every scenario ends with the same check: no ID twice across all nodes and
// all incarnations, and each node's IDs strictly increasing (one kept-alive
// client per node, so a client's order is the node's order).
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_set>

#include "chaos.h"
#include "etcd_coordinator.h"
#include "etcd_process.h"
#include "faketime.h"
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
#include "subprocess.h"
#include "zookeeper_claim.h"
#include "zookeeper_coordinator.h"
#include "zookeeper_process.h"

namespace snowid {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::http_get;
using test::ServerProcess;

constexpr int kLeaseTtlSeconds = 2;

std::uint64_t node_id_of(Id id) {
  const auto parts = decode(*preset("twitter"), id);
  return parts->datacenter << preset("twitter")->worker_bits | parts->worker;
}

std::chrono::milliseconds timestamp_of(Id id) {
  return decode(*preset("twitter"), id)->timestamp;
}

// One kept-alive client fetching batches from a node until stopped. It keeps
// every ID in order and remembers when it was last served.
class Client {
 public:
  explicit Client(int port) : port_(port), thread_([this] { run(); }) {}
  ~Client() { stop(); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // Only after stop().
  const std::vector<Id>& ids() const { return ids_; }
  int served() const { return served_; }
  int refused() const { return refused_; }
  Clock::time_point last_served() const {
    std::lock_guard lock(mutex_);
    return last_served_;
  }
  std::size_t count() const {
    std::lock_guard lock(mutex_);
    return ids_.size();
  }

 private:
  void run() {
    std::unique_ptr<test::HttpConnection> connection;
    while (!stopping_) {
      if (!connection) connection = std::make_unique<test::HttpConnection>(port_);
      if (!connection->send("GET /v1/ids?count=50 HTTP/1.1\r\nHost: x\r\n\r\n")) {
        connection.reset();
        std::this_thread::sleep_for(20ms);
        continue;
      }
      const test::HttpReply reply = connection->read(10s);
      if (reply.status == 200) {
        const auto body = nlohmann::json::parse(reply.body, nullptr, false);
        std::lock_guard lock(mutex_);
        for (const auto& s : body["ids"]) ids_.push_back(*parse_id(s.get<std::string>()));
        last_served_ = Clock::now();
        ++served_;
      } else {
        if (reply.status == 0) connection.reset();
        ++refused_;
        std::this_thread::sleep_for(10ms);
      }
    }
  }

  const int port_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::vector<Id> ids_;
  Clock::time_point last_served_{};
  int served_ = 0;
  int refused_ = 0;
  std::thread thread_;  // last: starts once the fields above exist
};

// What a scenario needs of the store that leases the node ids, so that one
// body runs against etcd, Redis and ZooKeeper alike.
struct StoreHooks {
  // Starts a node of cluster "c" preferring `worker`, with extra flags.
  std::function<std::unique_ptr<ServerProcess>(const std::string&, int, std::vector<std::string>)>
      start;
  // The store's rows for cluster "c".
  std::function<std::vector<ClusterNode>()> list;
};

class ClusterChaosTest : public test::ChaosTest {
 protected:
  // A node of cluster "c" preferring `worker`, leasing through the store
  // `args` name for `lease_ttl_s` with a 500 ms margin.
  std::unique_ptr<ServerProcess> start_leased_node(
      std::vector<std::string> args, const std::string& name, int worker, int lease_ttl_s,
      const std::vector<std::string>& extra, const std::map<std::string, std::string>& env = {}) {
    args.insert(args.end(),
                {"--cluster", "c", "--worker-id", std::to_string(worker), "--lease-ttl-s",
                 std::to_string(lease_ttl_s), "--lease-safety-margin-ms", "500", "--state-dir",
                 scenario.dir.file(name)});
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<ServerProcess>(SNOWIDD_PATH, args, env);
  }

  // A node of cluster "c" preferring `worker`, lease 2 s, margin 500 ms.
  std::unique_ptr<ServerProcess> start_node(test::EtcdCluster& etcd, const std::string& name,
                                            int worker, std::vector<std::string> extra = {},
                                            const std::map<std::string, std::string>& env = {}) {
    std::string endpoints;
    for (const auto& e : etcd.endpoints()) endpoints += (endpoints.empty() ? "" : ",") + e;
    return start_leased_node({"--coordinator", "etcd", "--etcd-endpoints", endpoints}, name, worker,
                             kLeaseTtlSeconds, extra, env);
  }

  // Three nodes of cluster "c" on `etcd`, each with a client drawing IDs,
  // serving (workers 0, 1, 2, or all 0 with `same_worker`); a node that does
  // not start fails the test (the caller checks HasFatalFailure()).
  void start_three(test::EtcdCluster& etcd, bool same_worker,
                   std::vector<std::unique_ptr<ServerProcess>>& nodes,
                   std::vector<std::unique_ptr<Client>>& clients) {
    for (int i = 0; i < 3; ++i) {
      nodes.push_back(start_node(etcd, "n" + std::to_string(i), same_worker ? 0 : i));
      ASSERT_TRUE(nodes.back()->started()) << nodes.back()->log();
      clients.push_back(std::make_unique<Client>(nodes.back()->port()));
    }
    wait_for_progress(clients, 20, 10s);
  }

  // Waits until every node of `nodes` answers 200 again, each within
  // `limit`, and records how long that took since `back_at` as the
  // scenario's recovery; nullopt (the test failed, naming the node's log)
  // if a node did not.
  std::optional<std::chrono::nanoseconds> serve_again(
      const std::vector<std::unique_ptr<ServerProcess>>& nodes, Clock::time_point back_at,
      std::chrono::milliseconds limit) {
    for (const auto& node : nodes) {
      if (!wait_for_status(*node, 200, limit)) {
        ADD_FAILURE() << "a node did not serve again within " << limit.count()
                      << " ms: " << node->log();
        return std::nullopt;
      }
    }
    const auto recovery = Clock::now() - back_at;
    scenario.record.recovery_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(recovery).count();
    return recovery;
  }

  // The member that leads `etcd`, waiting up to 10 s for an election; -1 if
  // none was elected.
  static int leader_of(const test::EtcdCluster& etcd) {
    int leader = -1;
    const auto elected_by = Clock::now() + 10s;
    while ((leader = etcd.leader()) < 0 && Clock::now() < elected_by) {
      std::this_thread::sleep_for(50ms);
    }
    return leader;
  }

  static EtcdOptions etcd_options(const test::EtcdCluster& etcd) {
    EtcdOptions options;
    options.endpoints = etcd.endpoints();
    options.cluster = "c";
    options.layout = *preset("twitter");
    return options;
  }

  // The reservation etcd holds for `node_id` (Unix ms), 0 if none.
  static std::chrono::milliseconds reservation_of(const test::EtcdCluster& etcd,
                                                  std::uint64_t node_id) {
    auto nodes = list_cluster(etcd_options(etcd));
    EXPECT_TRUE(nodes.ok()) << nodes.error().message;
    if (!nodes.ok()) return {};
    for (const auto& node : *nodes) {
      if (node.node_id == node_id) return node.reservation;
    }
    return {};
  }

  StoreHooks etcd_hooks(test::EtcdCluster& etcd) {
    return {[this, &etcd](const std::string& name, int worker, std::vector<std::string> extra) {
              return start_node(etcd, name, worker, std::move(extra));
            },
            [&etcd] {
              auto nodes = list_cluster(etcd_options(etcd));
              EXPECT_TRUE(nodes.ok()) << nodes.error().message;
              return nodes.ok() ? *nodes : std::vector<ClusterNode>{};
            }};
  }

  // A node of cluster "c" leasing from Redis, lease 2 s, margin 500 ms.
  std::unique_ptr<ServerProcess> start_redis_node(const test::RedisServer& redis,
                                                  const std::string& name, int worker,
                                                  std::vector<std::string> extra = {}) {
    return start_leased_node({"--coordinator", "redis", "--redis-endpoints", redis.endpoint()},
                             name, worker, kLeaseTtlSeconds, extra);
  }

  // A Redis server for cluster "c", which an operator marked as new to it
  // (so that its first nodes need not start ahead of the clock).
  static void mark_new_cluster(const test::RedisServer& redis) {
    redis.cli({"SET", "snowid:{c}:created", "0"});
  }

  StoreHooks redis_hooks(const test::RedisServer& redis) {
    return {[this, &redis](const std::string& name, int worker, std::vector<std::string> extra) {
              return start_redis_node(redis, name, worker, std::move(extra));
            },
            [&redis] {
              RedisOptions options;
              options.endpoints = {redis.endpoint()};
              options.cluster = "c";
              options.layout = *preset("twitter");
              auto nodes = list_cluster(options);
              EXPECT_TRUE(nodes.ok()) << nodes.error().message;
              return nodes.ok() ? *nodes : std::vector<ClusterNode>{};
            }};
  }

  // PostgreSQL and MariaDB nodes lease for 2 s, as etcd's and Redis's do,
  // through `store` ("postgres", "mysql") at `url`.
  template <typename Options>
  StoreHooks sql_hooks(const std::string& store, const std::string& url) {
    return {[this, store, url](const std::string& name, int worker, std::vector<std::string> extra) {
              return start_leased_node({"--coordinator", store, "--" + store + "-url", url}, name,
                                       worker, kLeaseTtlSeconds, extra);
            },
            [url] { return test::list_sql_cluster<Options>(url, "c"); }};
  }

  // What a scenario on a SQL store is given: the store's hooks, and a stop
  // and a start of its database server.
  using SqlScenario = std::function<void(const StoreHooks&, const std::function<void()>& stop,
                                         const std::function<bool()>& start)>;

  // Runs `run` on a fresh PostgreSQL server, cluster "c" marked new to it;
  // its stop is immediate (a crash: no checkpoint).
  void on_postgres(const SqlScenario& run) {
    if (!test::PostgresProcess::available()) SNOWID_SKIP_MISSING(test::PostgresProcess::kMissing);
    test::PostgresProcess postgres;
    ASSERT_TRUE(postgres.started()) << postgres.error();
    ASSERT_TRUE(test::mark_new_sql_cluster(
        [&](const std::string& sql) { return postgres.psql(sql); },
        std::string(SNOWID_SOURCE_DIR) + "/sql/node_claims.sql", "c"))
        << postgres.error();
    run(sql_hooks<PostgresOptions>("postgres", postgres.url()),
        [&postgres] { EXPECT_TRUE(postgres.stop(true)) << postgres.error(); },
        [&postgres] { return postgres.start(); });
  }
  // The same on a fresh MariaDB server; its stop is SIGTERM.
  void on_mysql(const SqlScenario& run) {
    if (!test::MariadbProcess::available()) SNOWID_SKIP_MISSING(test::MariadbProcess::kMissing);
    test::MariadbProcess mariadb;
    ASSERT_TRUE(mariadb.started()) << mariadb.error();
    ASSERT_TRUE(test::mark_new_sql_cluster(
        [&](const std::string& sql) { return mariadb.sql(sql); },
        std::string(SNOWID_SOURCE_DIR) + "/sql/node_claims.mysql.sql", "c"))
        << mariadb.error();
    run(sql_hooks<MysqlOptions>("mysql", mariadb.url()), [&mariadb] { mariadb.stop(); },
        [&mariadb] { return mariadb.start(); });
  }

  // ZooKeeper nodes lease for 3 s: the fence also leaves a renewal interval
  // and half a tick before the lease ends (src/coord/zookeeper_claim.cc),
  // which 2 s would leave too little room for.
  static constexpr int kZooKeeperLeaseTtlSeconds = 3;

  static ZooKeeperOptions zookeeper_options(const test::ZooKeeperEnsemble& zookeeper) {
    ZooKeeperOptions options;
    options.endpoints = zookeeper.endpoints();
    options.cluster = "c";
    options.layout = *preset("twitter");
    options.tick_time = test::ZooKeeperEnsemble::kTickTime;
    options.lease_ttl = std::chrono::seconds{kZooKeeperLeaseTtlSeconds};
    return options;
  }

  // A node of cluster "c" leasing from ZooKeeper, lease 3 s, margin 500 ms.
  std::unique_ptr<ServerProcess> start_zookeeper_node(const test::ZooKeeperEnsemble& zookeeper,
                                                      const std::string& name, int worker,
                                                      std::vector<std::string> extra = {}) {
    return start_leased_node(
        {"--coordinator", "zookeeper", "--zookeeper-endpoints", zookeeper.endpoints_text(),
         "--zookeeper-tick-ms", std::to_string(test::ZooKeeperEnsemble::kTickTime.count())},
        name, worker, kZooKeeperLeaseTtlSeconds, extra);
  }

  // An ensemble for cluster "c", which an operator marked as new to it (so
  // that its first nodes need not start ahead of the clock).
  static void mark_new_cluster(const test::ZooKeeperEnsemble& zookeeper) {
    coord::StoreCounters counters;
    auto session = coord::ZooKeeperSession::open(zookeeper_options(zookeeper), counters);
    ASSERT_TRUE(session.ok()) << session.error().message;
    for (const std::string& path : {std::string("/snowid"), coord::zookeeper_cluster_path("c")}) {
      (*session)->create(path, "", false);
    }
    ASSERT_TRUE((*session)->create(coord::zookeeper_created_path("c"), "0", false).ok());
  }

  StoreHooks zookeeper_hooks(const test::ZooKeeperEnsemble& zookeeper) {
    return {
        [this, &zookeeper](const std::string& name, int worker, std::vector<std::string> extra) {
          return start_zookeeper_node(zookeeper, name, worker, std::move(extra));
        },
        [&zookeeper] {
          auto nodes = list_cluster(zookeeper_options(zookeeper));
          EXPECT_TRUE(nodes.ok()) << nodes.error().message;
          return nodes.ok() ? *nodes : std::vector<ClusterNode>{};
        }};
  }

  // The reservation the store holds for `node_id` (Unix ms), 0 if none.
  static std::chrono::milliseconds reservation_in(const StoreHooks& store, std::uint64_t node_id) {
    for (const auto& node : store.list()) {
      if (node.node_id == node_id) return node.reservation;
    }
    return {};
  }
  static bool claimed_in(const StoreHooks& store, std::uint64_t node_id) {
    for (const auto& node : store.list()) {
      if (node.node_id == node_id) return node.claimed;
    }
    return false;
  }

  // SIGKILL to a node under load; a successor requires its id. `lease_ttl`:
  // the store's lease (or session) the nodes ask for.
  void kill9_takeover(const StoreHooks& store, std::chrono::milliseconds lease_ttl);
  void frozen_node(const StoreHooks& store);
  // The store dies under load (`kill`) and comes back 1 s later (`restart`).
  void store_down(const StoreHooks& store, std::chrono::seconds lease_ttl, const std::string& name,
                  const std::function<void()>& kill, const std::function<bool()>& restart);
  // snowidd started with `args` and no store answering exits 1 naming `why`.
  void unreachable_at_start(std::vector<std::string> args, const std::string& closed,
                            const std::string& why);

  static bool wait_for_status(const ServerProcess& server, int status,
                              std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      if (http_get(server.port(), "/v1/id").status == status) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  // Waits until every client has been served `more` batches beyond now.
  static void wait_for_progress(const std::vector<std::unique_ptr<Client>>& clients,
                                std::size_t more, std::chrono::seconds limit) {
    std::vector<Client*> all;
    for (const auto& c : clients) all.push_back(c.get());
    wait_for_progress(all, more, limit);
  }
  static void wait_for_progress(const std::vector<Client*>& clients, std::size_t more,
                                std::chrono::seconds limit) {
    std::vector<std::size_t> start;
    for (const auto& c : clients) start.push_back(c->count());
    const auto deadline = Clock::now() + limit;
    for (std::size_t i = 0; i < clients.size(); ++i) {
      while (clients[i]->count() < start[i] + more * 50 && Clock::now() < deadline) {
        std::this_thread::sleep_for(20ms);
      }
      EXPECT_GE(clients[i]->count(), start[i] + more * 50) << "client " << i << " stalled";
    }
  }

  // Stops the clients, adds their answers and refusals to the record, and
  // returns their IDs (one source per client).
  std::vector<std::vector<Id>> stop_all(std::vector<std::unique_ptr<Client>>& clients) {
    std::vector<std::vector<Id>> sources;
    for (auto& c : clients) {
      sources.push_back(stop(*c));
    }
    return sources;
  }
  std::vector<Id> stop(Client& client) {
    client.stop();
    scenario.record.answers += static_cast<std::uint64_t>(client.served() + client.refused());
    scenario.record.refused += static_cast<std::uint64_t>(client.refused());
    return client.ids();
  }

  // THE check (tests/support/chaos.h): no ID in two places across
  // `sources`, each strictly increasing; counted in the record.
  void check(const std::vector<std::vector<Id>>& sources) {
    std::vector<test::Source> named;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      named.push_back({"source" + std::to_string(i), i, 0, sources[i]});
    }
    scenario.check(named);
  }
};

// 20 snowidd processes start at once, all requiring node id 7: exactly one
// wins it each round; the others wait, then exit 1 naming the winner.
TEST_F(ClusterChaosTest, TwentyProcessesRaceForOneRequiredIdAndOneWins) {
  scenario.describe(
      "cluster_race_for_one_id", "20 nodes started at once all require node id 7; 3 rounds",
      "20 snowidd processes with --node-id-policy require, one etcd; the winner stopped "
      "with SIGTERM between rounds",
      "exactly one winner per round; the 19 others exit 1 naming it; each winner's first ID "
      "lies above the reservation the previous winner left for id 7");
  test::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  ASSERT_EQ(etcd.mark_new_cluster("c"), "");
  std::vector<std::vector<Id>> winners_ids;
  std::vector<std::chrono::milliseconds> reservations_left;  // by each round's winner
  for (int round = 0; round < 3; ++round) {
    std::vector<std::unique_ptr<ServerProcess>> racers(20);
    std::vector<std::thread> starters;
    for (std::size_t i = 0; i < racers.size(); ++i) {
      starters.emplace_back([&, i] {
        racers[i] = start_node(etcd, "r" + std::to_string(round) + "-" + std::to_string(i), 7,
                               {"--node-id-policy", "require", "--claim-timeout-ms", "12000"});
      });
    }
    for (auto& t : starters) t.join();
    std::vector<ServerProcess*> winners;
    for (auto& racer : racers) {
      if (racer->started()) {
        winners.push_back(racer.get());
        continue;
      }
      EXPECT_EQ(racer->wait(), 1) << racer->log();
      EXPECT_NE(racer->log().find("node id 7 of cluster 'c' is held by"), std::string::npos)
          << racer->log();
    }
    ASSERT_EQ(winners.size(), 1u) << "round " << round;
    const auto reply = http_get(winners[0]->port(), "/v1/ids?count=100");
    ++scenario.record.answers;
    ASSERT_EQ(reply.status, 200) << reply.body;
    std::vector<Id> ids;
    const auto body = nlohmann::json::parse(reply.body);
    for (const auto& s : body["ids"]) {
      ids.push_back(*parse_id(s.get<std::string>()));
    }
    EXPECT_EQ(node_id_of(ids.front()), 7u);
    winners_ids.push_back(ids);
    winners[0]->signal(SIGTERM);  // releases id 7 for the next round
    EXPECT_EQ(winners[0]->wait(), 0) << winners[0]->log();
    // The claim is gone; the reservation stays, at or above every ID it issued.
    reservations_left.push_back(reservation_of(etcd, 7));
    EXPECT_GE(reservations_left.back(), timestamp_of(ids.back())) << "round " << round;
  }
  // Each winner started above the reservation the previous one left.
  check(winners_ids);
  for (std::size_t r = 1; r < winners_ids.size(); ++r) {
    EXPECT_GT(timestamp_of(winners_ids[r].front()), reservations_left[r - 1]) << "round " << r;
  }
}

// kill -9: the claim outlives the process until its lease expires, and the
// next holder's first ID lies above the dead node's reservation.
void ClusterChaosTest::kill9_takeover(const StoreHooks& store,
                                      std::chrono::milliseconds lease_ttl) {
  auto victim = store.start("victim", 0, {});
  ASSERT_TRUE(victim->started()) << victim->log();
  std::vector<std::unique_ptr<Client>> clients;
  clients.push_back(std::make_unique<Client>(victim->port()));
  wait_for_progress(clients, 20, 10s);

  victim->signal(SIGKILL);
  const auto killed_at = Clock::now();
  victim->wait();
  auto sources = stop_all(clients);
  const auto reservation = reservation_in(store, 0);
  ASSERT_GT(reservation.count(), 0);
  for (Id id : sources[0]) ASSERT_LE(timestamp_of(id), reservation);

  EXPECT_TRUE(claimed_in(store, 0)) << "the claim vanished with the process, not the lease";

  // A successor requiring id 0 waits for the lease, then starts above H.
  auto successor =
      store.start("successor", 0, {"--node-id-policy", "require", "--claim-timeout-ms", "10000"});
  ASSERT_TRUE(successor->started()) << successor->log();
  const auto waited = Clock::now() - killed_at;
  // The dead node renewed its lease every lease_ttl / 3, checked every
  // 100 ms (src/coord/leased_coordinator.cc), so at the kill at least
  // lease_ttl - lease_ttl / 3 - 100 ms of it was left: 1.23 s of a 2 s lease.
  const auto lease_left_at_least = lease_ttl - lease_ttl / 3 - 100ms;
  EXPECT_GE(waited, lease_left_at_least)
      << "id 0 was free before the dead node's lease could expire";
  scenario.record.measured = "the successor held id 0 " + std::to_string(waited / 1ms) +
                             " ms after the kill (the lease had at least " +
                             std::to_string(lease_left_at_least / 1ms) + " ms left)";
  EXPECT_NE(successor->log().find("is held by"), std::string::npos) << successor->log();

  clients.push_back(std::make_unique<Client>(successor->port()));
  wait_for_progress(std::vector<Client*>{clients.back().get()}, 20, 10s);
  const std::vector<Id> after = stop(*clients.back());
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(node_id_of(after.front()), 0u);
  EXPECT_GT(timestamp_of(after.front()), reservation);
  check({sources[0], after});

  // SIGTERM gives the id back at once: the claim is gone, the reservation stays.
  successor->signal(SIGTERM);
  EXPECT_EQ(successor->wait(), 0) << successor->log();
  EXPECT_FALSE(claimed_in(store, 0)) << "a clean stop kept its claim";
  EXPECT_GE(reservation_in(store, 0), timestamp_of(after.back()));
}

TEST_F(ClusterChaosTest, KilledNodesIdIsFreeOnlyAfterItsLeaseAndTheNextHolderStartsAbove) {
  scenario.describe(
      "cluster_kill9_takeover", "a node is killed under load; another requires its id",
      "SIGKILL, then a successor with --node-id-policy require (lease 2 s); SIGTERM to it",
      "the id stays claimed until the lease ends; the successor starts above the dead "
      "node's reservation, which no ID of the dead node passed; SIGTERM frees the id at once");
  test::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  ASSERT_EQ(etcd.mark_new_cluster("c"), "");
  kill9_takeover(etcd_hooks(etcd), std::chrono::seconds{kLeaseTtlSeconds});
}

TEST_F(ClusterChaosTest, RedisKilledNodesIdIsFreeOnlyAfterItsLeaseAndTheNextHolderStartsAbove) {
  scenario.describe(
      "redis_kill9_takeover", "redis: a node is killed under load; another requires its id",
      "SIGKILL, then a successor with --node-id-policy require (lease 2 s); SIGTERM to it",
      "the id stays claimed until the claim's TTL ends; the successor starts above the dead "
      "node's reservation, which no ID of the dead node passed; SIGTERM frees the id at once");
  test::RedisServer redis;
  ASSERT_TRUE(redis.started()) << redis.why();
  mark_new_cluster(redis);
  kill9_takeover(redis_hooks(redis), std::chrono::seconds{kLeaseTtlSeconds});
}

// SIGSTOP for three lease lifetimes while a newcomer takes the id over. The
// frozen node's IDs under that id never pass its old reservation; resumed,
// it notices the loss before serving, re-claims another id, and serves.
void ClusterChaosTest::frozen_node(const StoreHooks& store) {
  auto frozen = store.start("frozen", 0, {});
  ASSERT_TRUE(frozen->started()) << frozen->log();
  std::vector<std::unique_ptr<Client>> clients;
  clients.push_back(std::make_unique<Client>(frozen->port()));
  wait_for_progress(clients, 20, 10s);

  frozen->signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds{3 * kLeaseTtlSeconds});
  const auto reservation = reservation_in(store, 0);
  auto newcomer = store.start("newcomer", 0, {});
  ASSERT_TRUE(newcomer->started()) << newcomer->log();
  clients.push_back(std::make_unique<Client>(newcomer->port()));
  wait_for_progress(std::vector<Client*>{clients.back().get()}, 20, 10s);

  frozen->signal(SIGCONT);
  // Its first client was mid-request when frozen: whatever it is answered
  // now was issued after the freeze and must come from a new claim.
  ASSERT_TRUE(wait_for_status(*frozen, 200, 15s)) << frozen->log();
  wait_for_progress(clients, 20, 15s);
  auto sources = stop_all(clients);

  for (Id id : sources[0]) {
    if (node_id_of(id) == 0) {
      ASSERT_LE(timestamp_of(id), reservation) << "the frozen node issued past its reservation";
    }
  }
  EXPECT_NE(node_id_of(sources[0].back()), 0u) << "the resumed node kept the lost id";
  for (Id id : sources[1]) ASSERT_GT(timestamp_of(id), reservation);
  check(sources);
  const auto info = nlohmann::json::parse(http_get(frozen->port(), "/v1/info").body);
  EXPECT_GE(info["cluster"]["reclaims"].get<int>(), 1);
}

TEST_F(ClusterChaosTest, NodeFrozenForThreeLeasesNeverPassesItsReservation) {
  scenario.describe(
      "cluster_frozen_node",
      "a node is frozen for 3 lease lifetimes while a newcomer takes its id, then resumed",
      "SIGSTOP for 6 s (lease 2 s), a second snowidd preferring the same id, SIGCONT",
      "no ID of the frozen node under the lost id passes its reservation; resumed, it "
      "claims another id and serves");
  test::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  ASSERT_EQ(etcd.mark_new_cluster("c"), "");
  frozen_node(etcd_hooks(etcd));
}

// Every etcd member stops during load: nodes stop issuing before their leases
// could have expired (the deadline counts from the last keep-alive sent),
// answer 503, and serve again by themselves once etcd is back.
TEST_F(ClusterChaosTest, AllEtcdMembersStopDuringLoadAndNodesFenceThenRecover) {
  scenario.describe(
      "cluster_etcd_down", "all 3 etcd members stop under load, then start again",
      "SIGKILL to every etcd member, 3 snowidd nodes serving; all members restarted",
      "every node stops issuing within one lease of the stop and answers 503 (/readyz "
      "503); all serve again without a restart once etcd is back (recovery: etcd restart "
      "to the last node serving)");
  test::EtcdCluster etcd(3);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  ASSERT_EQ(etcd.mark_new_cluster("c"), "");
  std::vector<std::unique_ptr<ServerProcess>> nodes;
  std::vector<std::unique_ptr<Client>> clients;
  start_three(etcd, /*same_worker=*/true, nodes, clients);
  if (HasFatalFailure()) return;

  const auto stopped_at = Clock::now();
  for (int m = 0; m < 3; ++m) etcd.kill(m);
  for (const auto& node : nodes) EXPECT_TRUE(wait_for_status(*node, 503, 5s)) << node->log();
  for (std::size_t i = 0; i < clients.size(); ++i) {
    EXPECT_LT(clients[i]->last_served() - stopped_at,
              std::chrono::seconds{kLeaseTtlSeconds})
        << "node " << i << " served after its lease could have expired";
    EXPECT_EQ(http_get(nodes[i]->port(), "/readyz").status, 503);
  }

  ASSERT_TRUE(etcd.restart({0, 1, 2})) << etcd.log(0);
  const auto recovery = serve_again(nodes, Clock::now(), 20s);
  ASSERT_TRUE(recovery);
  EXPECT_LT(*recovery, 20s);
  wait_for_progress(clients, 20, 15s);
  check(stop_all(clients));
}

// etcd loses its quorum (the leader and a follower die) for longer than
// three leases: every node stops, says why, and serves again soon after the
// quorum is back. Its re-claims are tried at least once a renewal period,
// records their holders could not refresh meanwhile are not read as this
// node's clock running ahead, and a re-claim waits out its takeover floor
// once (docs/cluster.md, "After an outage").
TEST_F(ClusterChaosTest, EtcdQuorumLostLongerThanTheLeaseThenBackNodesServeWithinTheBound) {
  scenario.describe(
      "cluster_etcd_quorum_lost", "etcd loses its quorum for 3 leases under load, then gets it back",
      "SIGKILL to the Raft leader and a follower, 3 snowidd nodes serving; both restarted 6 s "
      "later",
      "every node stops issuing within one lease and logs why; each serves again within "
      "lease_ttl + reserve_ahead + 3 renewal periods of the restart (recovery: restart to the "
      "last node serving)");
  test::EtcdCluster etcd(3);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  ASSERT_EQ(etcd.mark_new_cluster("c"), "");
  std::vector<std::unique_ptr<ServerProcess>> nodes;
  std::vector<std::unique_ptr<Client>> clients;
  start_three(etcd, /*same_worker=*/false, nodes, clients);
  if (HasFatalFailure()) return;

  const int leader = leader_of(etcd);
  ASSERT_GE(leader, 0) << "no leader elected";
  const int follower = (leader + 1) % 3;
  etcd.kill(leader);
  etcd.kill(follower);
  for (const auto& node : nodes) EXPECT_TRUE(wait_for_status(*node, 503, 5s)) << node->log();
  std::this_thread::sleep_for(std::chrono::seconds{3 * kLeaseTtlSeconds});
  for (const auto& node : nodes) {
    EXPECT_EQ(http_get(node->port(), "/readyz").status, 503);
    EXPECT_NE(node->log().find("warning lost the claim on node id"), std::string::npos)
        << node->log();
  }

  ASSERT_TRUE(etcd.restart({leader, follower})) << etcd.log(leader);
  const auto recovery = serve_again(nodes, Clock::now(), 30s);
  ASSERT_TRUE(recovery);
  // lease_ttl (2 s) + reserve_ahead (3 s, the default) + three renewal
  // periods (lease_ttl / 3 each), with a second of slack for the restarted
  // members' election.
  constexpr int kBoundMs = kLeaseTtlSeconds * 1000 + 3000 + 3 * kLeaseTtlSeconds * 1000 / 3 + 1000;
  EXPECT_LT(*recovery, std::chrono::milliseconds{kBoundMs}) << nodes.front()->log();
  wait_for_progress(clients, 20, 15s);
  check(stop_all(clients));
}

// The Raft leader is killed three times under load, and restarted each time.
// Nodes may pause while a new leader is elected; no ID repeats.
TEST_F(ClusterChaosTest, EtcdLeaderKilledRepeatedlyDuringLoad) {
  scenario.describe(
      "cluster_etcd_leader_killed", "the etcd Raft leader dies under load, 3 times",
      "SIGKILL to the leader (found through /v3/maintenance/status), restarted 1.5 s later",
      "every node keeps serving (or pauses during the election) and stays ready");
  test::EtcdCluster etcd(3);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  ASSERT_EQ(etcd.mark_new_cluster("c"), "");
  std::vector<std::unique_ptr<ServerProcess>> nodes;
  std::vector<std::unique_ptr<Client>> clients;
  start_three(etcd, /*same_worker=*/false, nodes, clients);
  if (HasFatalFailure()) return;

  for (int round = 0; round < 3; ++round) {
    const int leader = leader_of(etcd);
    ASSERT_GE(leader, 0) << "no leader elected";
    etcd.kill(leader);
    std::this_thread::sleep_for(1500ms);
    ASSERT_TRUE(etcd.restart(leader)) << etcd.log(leader);
    wait_for_progress(clients, 10, 20s);
  }
  for (const auto& node : nodes) {
    EXPECT_EQ(http_get(node->port(), "/readyz").status, 200) << node->log();
  }
  check(stop_all(clients));
}

// A node whose clock is 2 s behind takes over a released id. It must start
// above the previous holder's reservation H: under "monotonic" its logical
// clock starts above H at once (within max_drift_ms); under "reject" it
// waits, keeping its lease, until its own clock has passed H.
class ClockBehindTakeOver : public ClusterChaosTest,
                            public ::testing::WithParamInterface<const char*> {};

TEST_P(ClockBehindTakeOver, StartsAboveTheReservationPerItsPolicy) {
  const std::string faketime = test::faketime_library();
  if (faketime.empty()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  const std::string policy = GetParam();
  scenario.describe("cluster_clock_behind_takeover/" + policy,
                    "a node whose clock is 2 s behind takes over a released id; policy " + policy,
                    "libfaketime FAKETIME=-2s in the successor",
                    policy == "reject"
                        ? "it waits until its clock passes the reservation, then starts above it"
                        : "its logical clock starts above the reservation at once");
  test::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  ASSERT_EQ(etcd.mark_new_cluster("c"), "");
  auto first = start_node(etcd, "first", 0);
  ASSERT_TRUE(first->started()) << first->log();
  std::vector<std::unique_ptr<Client>> clients;
  clients.push_back(std::make_unique<Client>(first->port()));
  wait_for_progress(clients, 20, 10s);
  first->signal(SIGTERM);
  EXPECT_EQ(first->wait(), 0) << first->log();
  clients.front()->stop();  // counted by stop_all below
  const auto reservation = reservation_of(etcd, 0);

  const std::map<std::string, std::string> behind{
      {"LD_PRELOAD", faketime},
      {"FAKETIME", "-2s"},
      {"FAKETIME_DONT_FAKE_MONOTONIC", "1"},
      {"ASAN_OPTIONS", "verify_asan_link_order=0"}};
  const auto started_at = Clock::now();
  auto late = start_node(etcd, "late", 0,
                         {"--node-id-policy", "require", "--claim-timeout-ms", "15000",
                          "--clock-policy", policy},
                         behind);
  ASSERT_TRUE(late->started()) << late->log();
  const auto start_time = Clock::now() - started_at;
  if (policy == "reject") {
    EXPECT_GE(start_time, 1500ms) << "started before its clock passed the reservation";
  }
  clients.push_back(std::make_unique<Client>(late->port()));
  wait_for_progress(std::vector<Client*>{clients.back().get()}, 20, 15s);
  auto sources = stop_all(clients);
  ASSERT_FALSE(sources[1].empty());
  EXPECT_EQ(node_id_of(sources[1].front()), 0u);
  EXPECT_GT(timestamp_of(sources[1].front()), reservation);
  check(sources);
}

INSTANTIATE_TEST_SUITE_P(Policies, ClockBehindTakeOver, ::testing::Values("monotonic", "reject"));

// A forward glitch of a node's clock while it issues nothing must not move
// its reservation in etcd: a successor for its node id (after a crash)
// starts once the lease is gone, not an hour later. (Issue "Hardening",
// item 6, cluster mode.)
TEST_F(ClusterChaosTest, ForwardGlitchWithoutIssuanceLeavesTheReservationAlone) {
  test::FaketimeControl glitch;
  if (!glitch.available()) SNOWID_SKIP_MISSING(test::kFaketimeMissing);
  scenario.describe(
      "hardening/6/cluster_forward_glitch_then_kill9",
      "a node's clock jumps 1 h ahead for 1 s while no request comes, then the node is "
      "killed and another takes its node id over",
      "libfaketime offset +1 h for 1 s on node 0 (idle); SIGKILL; a successor requiring "
      "node id 0 under the reject policy",
      "the reservation in etcd stays within 5 s of the clock; the successor serves within "
      "the lease TTL and the takeover floor (lease TTL + reserve_ahead) plus 5 s, above every "
      "ID of the first");
  test::EtcdCluster etcd(1);
  ASSERT_TRUE(etcd.started()) << etcd.why();
  ASSERT_EQ(etcd.mark_new_cluster("c"), "");
  auto first = start_node(etcd, "first", 0, {}, glitch.env());
  ASSERT_TRUE(first->started()) << first->log();
  std::vector<std::unique_ptr<Client>> clients;
  clients.push_back(std::make_unique<Client>(first->port()));
  wait_for_progress(clients, 20, 10s);
  auto before = stop(*clients.front());
  glitch.set_offset(std::chrono::hours{1});
  std::this_thread::sleep_for(1s);
  glitch.set_offset(0ms);
  std::this_thread::sleep_for(500ms);
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  EXPECT_LT(reservation_of(etcd, 0), now + 5s) << "the glitch moved the reservation";
  first->signal(SIGKILL);
  first->wait();
  const auto began = Clock::now();
  auto successor = start_node(
      etcd, "successor", 0,
      {"--node-id-policy", "require", "--claim-timeout-ms", "20000", "--clock-policy", "reject"});
  ASSERT_TRUE(successor->started()) << successor->log();
  const auto took = Clock::now() - began;
  // The lease to run out, then the takeover floor (lease_ttl + reserve_ahead,
  // 3 s by default, past the claim), with 5 s of slack: not an hour later.
  EXPECT_LT(took, std::chrono::seconds{2 * kLeaseTtlSeconds} + 3s + 5s);
  scenario.record.recovery_ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
  clients.push_back(std::make_unique<Client>(successor->port()));
  wait_for_progress(std::vector<Client*>{clients.back().get()}, 20, 15s);
  auto after = stop(*clients.back());
  ASSERT_FALSE(after.empty());
  ASSERT_FALSE(before.empty());
  EXPECT_GT(after.front(), before.back());
  check({before, after});
}

// The widely copied Redis ring: a Lua script hands out the next worker id and
// wraps around, so a restart takes the next id on the ring. Nothing tells the
// ring that an id's holder is still alive: once the ring wraps, a paused node's
// id goes to a newcomer and both issue under it. The same steps against
// --coordinator redis issue no ID twice (frozen_node()).
TEST_F(ClusterChaosTest, RedisRingGivesAPausedNodesIdAwayButTheRedisCoordinatorDoesNot) {
  scenario.describe(
      "redis_ring_hole_vs_coordinator",
      "a node is paused while the ring of worker ids wraps around and a newcomer gets its id; "
      "then the same with --coordinator redis",
      "ring: a Lua script INCRs a counter mod 4 for each start; node A (static, worker from "
      "the ring), 3 starts that die, SIGSTOP A, newcomer B (static, worker from the ring), "
      "SIGCONT A. Coordinator: SIGSTOP for 6 s (lease 2 s), a newcomer preferring the same id, "
      "SIGCONT",
      "ring: A and B issue the same IDs (duplicates counted, expected > 0); coordinator: no ID "
      "of the frozen node under the lost id passes its reservation, 0 duplicates");
  test::RedisServer redis;
  ASSERT_TRUE(redis.started()) << redis.why();
  const auto next_on_ring = [&redis] {
    const std::string out =
        redis.cli({"EVAL", "return (redis.call('INCR', KEYS[1]) - 1) % tonumber(ARGV[1])", "1",
                   "ring:worker", "4"});
    return std::stoi(out);
  };
  const auto start_static = [this](const std::string& name, int worker) {
    return std::make_unique<ServerProcess>(
        SNOWIDD_PATH, std::vector<std::string>{"--worker-id", std::to_string(worker), "--state-dir",
                                               scenario.dir.file(name)});
  };
  const int a_worker = next_on_ring();
  auto a = start_static("ring-a", a_worker);
  ASSERT_TRUE(a->started()) << a->log();
  for (int i = 0; i < 3; ++i) next_on_ring();  // three nodes came and went
  std::vector<std::unique_ptr<Client>> clients;
  clients.push_back(std::make_unique<Client>(a->port()));
  wait_for_progress(clients, 20, 10s);
  a->signal(SIGSTOP);  // a GC pause, a VM migration
  const int b_worker = next_on_ring();
  ASSERT_EQ(b_worker, a_worker) << "the ring wrapped around to the paused node's id";
  auto b = start_static("ring-b", b_worker);
  ASSERT_TRUE(b->started()) << b->log();
  a->signal(SIGCONT);
  clients.push_back(std::make_unique<Client>(b->port()));
  wait_for_progress(clients, 200, 20s);
  std::vector<std::vector<Id>> ring_sources;
  for (auto& c : clients) {
    c->stop();
    ring_sources.push_back(c->ids());
  }
  std::unordered_set<Id> seen;
  std::size_t duplicates = 0;
  for (const auto& source : ring_sources) {
    for (Id id : source) duplicates += seen.insert(id).second ? 0u : 1u;
  }
  EXPECT_GT(duplicates, 0u) << "two live nodes on one worker id issued no common ID";
  std::cout << "ring: " << duplicates << " duplicates among " << seen.size() + duplicates
            << " IDs from two live nodes on worker " << a_worker << "\n";
  scenario.record.expected +=
      " (this run: the ring gave " + std::to_string(duplicates) + " duplicates)";

  a.reset();
  b.reset();
  clients.clear();
  mark_new_cluster(redis);
  frozen_node(redis_hooks(redis));
}

// Redis dies under load: nodes stop issuing before their claims could have
// expired and answer 503; once Redis is back (its append-only file kept the
// reservations), they claim again and serve, above what they issued.
TEST_F(ClusterChaosTest, RedisStopsDuringLoadAndNodesFenceThenRecover) {
  scenario.describe(
      "redis_down", "redis: the Redis server dies under load, then starts again",
      "SIGKILL to redis-server (appendonly yes, appendfsync always), 3 snowidd nodes "
      "serving; redis-server restarted 1 s later",
      "every node stops issuing within one lease of the stop and answers 503 (/readyz "
      "503); all serve again without a restart once Redis is back (recovery: Redis restart "
      "to the last node serving)");
  test::RedisServer redis;
  ASSERT_TRUE(redis.started()) << redis.why();
  mark_new_cluster(redis);
  store_down(
      redis_hooks(redis), std::chrono::seconds{kLeaseTtlSeconds}, "redis",
      [&redis] { redis.kill(); }, [&redis] { return redis.restart(); });
}

void ClusterChaosTest::store_down(const StoreHooks& store, std::chrono::seconds lease_ttl,
                                  const std::string& name, const std::function<void()>& kill,
                                  const std::function<bool()>& restart) {
  std::vector<std::unique_ptr<ServerProcess>> nodes;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 3; ++i) {
    nodes.push_back(store.start("n" + std::to_string(i), 0, {}));
    ASSERT_TRUE(nodes.back()->started()) << nodes.back()->log();
    clients.push_back(std::make_unique<Client>(nodes.back()->port()));
  }
  std::set<std::uint64_t> ids;
  for (const auto& node : nodes) {
    const auto info = nlohmann::json::parse(http_get(node->port(), "/v1/info").body);
    EXPECT_EQ(info["cluster"]["coordinator"], name);
    ids.insert(info["cluster"]["node_id"].get<std::uint64_t>());
  }
  EXPECT_EQ(ids.size(), 3u) << "three nodes preferring id 0 got distinct ids";
  wait_for_progress(clients, 20, 10s);

  // The store is gone once kill() returns (a PostgreSQL stopped by pg_ctl
  // may answer a last renewal while it stops): one lease from then.
  kill();
  const auto stopped_at = Clock::now();
  for (const auto& node : nodes) EXPECT_TRUE(wait_for_status(*node, 503, 5s)) << node->log();
  for (std::size_t i = 0; i < clients.size(); ++i) {
    EXPECT_LT(clients[i]->last_served() - stopped_at, lease_ttl)
        << "node " << i << " served after its lease could have expired";
    EXPECT_EQ(http_get(nodes[i]->port(), "/readyz").status, 503);
  }
  std::this_thread::sleep_for(1s);
  ASSERT_TRUE(restart()) << "the store did not come back";
  const auto recovery = serve_again(nodes, Clock::now(), 20s);
  ASSERT_TRUE(recovery);
  wait_for_progress(clients, 20, 15s);
  check(stop_all(clients));
}

// A node whose Redis cannot be reached at start keeps trying for
// claim_timeout_ms, then exits 1 saying so; it never serves.
TEST_F(ClusterChaosTest, RedisUnreachableAtStartIsAClearExit) {
  scenario.describe(
      "redis_unreachable_at_start", "redis: no Redis server answers when a node starts",
      "snowidd --coordinator redis --redis-endpoints on a closed port, claim_timeout_ms 1500",
      "exit 1 within the claim timeout (plus one request), naming Redis and the address; "
      "no port answers");
  const std::string closed = "127.0.0.1:" + std::to_string(test::free_loopback_ports(1)[0]);
  unreachable_at_start({"--coordinator", "redis", "--redis-endpoints", closed}, closed,
                       "no redis endpoint answered");
}

void ClusterChaosTest::unreachable_at_start(std::vector<std::string> args,
                                            const std::string& closed, const std::string& why) {
  const auto began = Clock::now();
  args.insert(args.end(), {"--cluster", "c", "--claim-timeout-ms", "1500", "--state-dir",
                           scenario.dir.file("n")});
  ServerProcess node(SNOWIDD_PATH, args);
  EXPECT_FALSE(node.started());
  EXPECT_EQ(node.wait(), 1) << node.log();
  EXPECT_LT(Clock::now() - began, 10s);
  EXPECT_NE(node.log().find(why), std::string::npos) << node.log();
  EXPECT_NE(node.log().find(closed), std::string::npos) << node.log();
  ++scenario.record.answers;
  scenario.record.refused = 1;
}

TEST_F(ClusterChaosTest,
       ZooKeeperKilledNodesIdIsFreeOnlyAfterItsSessionAndTheNextHolderStartsAbove) {
  scenario.describe(
      "zookeeper_kill9_takeover", "zookeeper: a node is killed under load; another requires its id",
      "SIGKILL, then a successor with --node-id-policy require (session 3 s); SIGTERM to it",
      "the id stays claimed until the dead node's session expires; the successor starts above "
      "the dead node's reservation, which no ID of the dead node passed; SIGTERM frees the id "
      "at once");
  test::ZooKeeperEnsemble zookeeper;
  ASSERT_TRUE(zookeeper.started()) << zookeeper.why();
  mark_new_cluster(zookeeper);
  kill9_takeover(zookeeper_hooks(zookeeper), std::chrono::seconds{kZooKeeperLeaseTtlSeconds});
}

TEST_F(ClusterChaosTest, ZooKeeperNodeFrozenPastItsSessionNeverPassesItsReservation) {
  scenario.describe(
      "zookeeper_frozen_node",
      "zookeeper: a node is frozen past its session timeout while a newcomer takes its id, "
      "then resumed",
      "SIGSTOP for 6 s (session 3 s), a second snowidd preferring the same id, SIGCONT",
      "no ID of the frozen node under the lost id passes its reservation; resumed, it sees its "
      "session expired, claims another id and serves");
  test::ZooKeeperEnsemble zookeeper;
  ASSERT_TRUE(zookeeper.started()) << zookeeper.why();
  mark_new_cluster(zookeeper);
  frozen_node(zookeeper_hooks(zookeeper));
}

TEST_F(ClusterChaosTest, ZooKeeperStopsDuringLoadAndNodesFenceThenRecover) {
  scenario.describe(
      "zookeeper_down", "zookeeper: the ZooKeeper server dies under load, then starts again",
      "SIGKILL to the ZooKeeper server, 3 snowidd nodes serving; restarted 1 s later on its "
      "data",
      "every node stops issuing within one lease of the stop and answers 503 (/readyz "
      "503); all serve again without a restart once ZooKeeper is back (recovery: ZooKeeper "
      "restart to the last node serving)");
  test::ZooKeeperEnsemble zookeeper;
  ASSERT_TRUE(zookeeper.started()) << zookeeper.why();
  mark_new_cluster(zookeeper);
  store_down(
      zookeeper_hooks(zookeeper), std::chrono::seconds{kZooKeeperLeaseTtlSeconds}, "zookeeper",
      [&zookeeper] { zookeeper.kill(0); }, [&zookeeper] { return zookeeper.restart(0); });
}

TEST_F(ClusterChaosTest, ZooKeeperUnreachableAtStartIsAClearExit) {
  scenario.describe(
      "zookeeper_unreachable_at_start", "zookeeper: no ZooKeeper server answers when a node starts",
      "snowidd --coordinator zookeeper --zookeeper-endpoints on a closed port, "
      "claim_timeout_ms 1500",
      "exit 1 within the claim timeout (plus one request), naming ZooKeeper and the address; "
      "no port answers");
  const std::string closed = "127.0.0.1:" + std::to_string(test::free_loopback_ports(1)[0]);
  unreachable_at_start(
      {"--coordinator", "zookeeper", "--zookeeper-endpoints", closed, "--zookeeper-tick-ms", "200"},
      closed, "no ZooKeeper server of");
}

// The SQL coordinators: a node frozen past its lease while a newcomer takes
// its id (frozen_node()), and the database stopped under load and started
// again (store_down()); three nodes preferring id 0 get three ids.
TEST_F(ClusterChaosTest, PostgresNodeFrozenPastItsLeaseNeverPassesItsReservation) {
  scenario.describe(
      "postgres_frozen_node",
      "postgres: a node is frozen for 3 lease lifetimes while a newcomer takes its id, then "
      "resumed",
      "SIGSTOP for 6 s (lease 2 s), a second snowidd preferring the same id, SIGCONT",
      "no ID of the frozen node under the lost id passes its reservation; resumed, it claims "
      "another id and serves");
  on_postgres([this](const StoreHooks& store, const auto&, const auto&) { frozen_node(store); });
}

TEST_F(ClusterChaosTest, PostgresStopsDuringLoadAndNodesFenceThenRecover) {
  scenario.describe(
      "postgres_down", "postgres: the PostgreSQL server dies under load, then starts again",
      "pg_ctl stop -m immediate (a crash: no checkpoint), 3 snowidd nodes serving; started "
      "again 1 s later on its data",
      "every node stops issuing within one lease of the stop and answers 503 (/readyz 503); "
      "all serve again without a restart once PostgreSQL is back");
  on_postgres([this](const StoreHooks& store, const auto& stop, const auto& start) {
    store_down(store, std::chrono::seconds{kLeaseTtlSeconds}, "postgres", stop, start);
  });
}

TEST_F(ClusterChaosTest, MysqlNodeFrozenPastItsLeaseNeverPassesItsReservation) {
  scenario.describe(
      "mysql_frozen_node",
      "mysql: a node is frozen for 3 lease lifetimes while a newcomer takes its id, then resumed",
      "SIGSTOP for 6 s (lease 2 s), a second snowidd preferring the same id, SIGCONT",
      "no ID of the frozen node under the lost id passes its reservation; resumed, it claims "
      "another id and serves");
  on_mysql([this](const StoreHooks& store, const auto&, const auto&) { frozen_node(store); });
}

TEST_F(ClusterChaosTest, MysqlStopsDuringLoadAndNodesFenceThenRecover) {
  scenario.describe(
      "mysql_down", "mysql: the MariaDB server stops under load, then starts again",
      "SIGTERM to mariadbd, 3 snowidd nodes serving; started again 1 s later on its data",
      "every node stops issuing within one lease of the stop and answers 503 (/readyz 503); "
      "all serve again without a restart once MariaDB is back");
  on_mysql([this](const StoreHooks& store, const auto& stop, const auto& start) {
    store_down(store, std::chrono::seconds{kLeaseTtlSeconds}, "mysql", stop, start);
  });
}

}  // namespace
}  // namespace snowid
