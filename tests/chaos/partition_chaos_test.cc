// Partitions between snowidd nodes and their stores, made by a fault proxy on
// one node's link (tests/support/fault_proxy.h), under a load of clients that
// keep every ID they are handed (tests/support/chaos.h).
//
// Leasing stores (etcd, Redis, ZooKeeper, PostgreSQL, MariaDB): node A leases node id 0 through
// the proxy, the link breaks (blackhole, one way only, reset), and node B,
// on a direct link, asks for id 0. Each scenario asserts the bound
// the self-fence promises (docs/design.md, "Self-fence"), measured from the
// fault: A's last ID under id 0 was asked for before A's lease deadline and
// lies at or below the reservation A left in the store; B's first ID comes
// after that deadline and after A's last ID, in time and in its timestamp
// field, above that reservation. Then the link heals and A serves again,
// under another id. No ID twice over every node and connection. A link that
// is only slow costs latency, not the claim.
//
// Segment store (PostgreSQL): a node cut off from the database hands out
// what its buffered ranges hold and nothing more, then refuses, while a node
// on a direct link serves on; a range whose answer was lost is never handed
// out.
//
// Each store's suite shares one store server, and runs as one ctest entry of
// its own (tests/CMakeLists.txt); the measured bounds go to the scenario
// records (docs/reliability.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "chaos.h"
#include "etcd_coordinator.h"
#include "etcd_process.h"
#include "fault_proxy.h"
#include "mariadb_process.h"
#include "missing.h"
#include "postgres_suite.h"
#include "redis_coordinator.h"
#include "redis_process.h"
#include "server_process.h"
#include "snowid/decode.h"
#include "snowid/layout.h"
#include "sql_coordinator.h"
#include "zookeeper_claim.h"
#include "zookeeper_coordinator.h"
#include "zookeeper_process.h"

namespace snowid {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using test::FaultProxy;
using test::SteadyClock;

// A node's lease: its TTL and the safety margin its fence keeps.
struct Lease {
  std::chrono::seconds ttl;
  milliseconds margin;
};
// The lease of the outside attacks' measurements, whose self-fence
// deadline (5 s) lies past the reservation a node holds (at most 3 s ahead):
// a cut-off node runs out of reservation first.
constexpr Lease kLongLease{std::chrono::seconds{6}, milliseconds{1000}};
// A deadline (1.5 to 2.5 s after the fault) that often comes before the
// reservation runs out: the fence itself stops the node. (ZooKeeper needs
// tickTime / 2 + margin below ttl / 3.)
constexpr Lease kShortLease{std::chrono::seconds{3}, milliseconds{500}};

const Layout& layout() {
  static const Layout twitter = *preset("twitter");
  return twitter;
}
std::uint64_t node_id_of(Id id) {
  const auto parts = decode(layout(), id);
  return parts->datacenter << layout().worker_bits | parts->worker;
}
milliseconds timestamp_of(Id id) { return decode(layout(), id)->timestamp; }
// Since the Unix epoch, as IDs' timestamps and reservations count.
std::chrono::nanoseconds wall_now() { return std::chrono::system_clock::now().time_since_epoch(); }
int port_of(const std::string& endpoint) {
  return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
}
double seconds_between(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Heals `proxy`'s link and waits until node 0 of `load` served `more`
// answers after it; the moment the link healed.
SteadyClock::time_point heal(FaultProxy& proxy, const test::Load& load, std::uint64_t more,
                             const test::ServerProcess& node) {
  proxy.pass();
  const auto healed = SteadyClock::now();
  const std::uint64_t served_at_heal = load.served(0);
  EXPECT_TRUE(test::wait_until([&] { return load.served(0) >= served_at_heal + more; }, 20s))
      << "node 0 did not serve again within 20 s of its link healing: " << node.log();
  return healed;
}

// A leasing store as the scenarios see it.
struct LeaseStore {
  std::string name;  // "etcd", "redis", "zookeeper"
  int port = 0;      // its client port
  // The flags that make snowidd lease from it at `endpoint`.
  std::function<std::vector<std::string>(const std::string& endpoint)> flags;
  // The reservation it holds for node id 0 of `cluster` (Unix ms), 0 if none.
  std::function<milliseconds(const std::string& cluster)> reservation;
};

template <typename Options>
milliseconds reservation_in(Options options, const std::string& cluster) {
  options.cluster = cluster;
  options.layout = layout();
  auto nodes = list_cluster(options);
  EXPECT_TRUE(nodes.ok()) << nodes.error().message;
  if (!nodes.ok()) return {};
  for (const auto& node : *nodes) {
    if (node.node_id == 0) return node.reservation;
  }
  return {};
}

// What breaks on node A's link, and how node B asks for A's id.
struct LinkFault {
  std::string name;   // after the store's name in the record: "etcd/blackhole"
  std::string words;  // the fault, for the record
  std::function<void(FaultProxy&)> inject;
  // B requires id 0 (and waits for it). Without, B takes the lowest free
  // id: where A's requests still reach the store, A's own attempts to claim
  // again may keep id 0 taken in the store while A cannot know it.
  bool successor_requires_id = true;
  Lease lease = kShortLease;
};

// Moments of a scenario on the steady clock; `fault_wall` is the wall clock
// (since the Unix epoch) just after `fault`, to compare with the IDs'
// timestamp fields.
struct Moments {
  SteadyClock::time_point fault, heal;
  std::chrono::nanoseconds fault_wall{0};
  // A's lease deadline, from its /v1/info read just after the fault: the
  // server computed it between these two.
  SteadyClock::time_point deadline_low, deadline_high;
  std::chrono::nanoseconds wall(SteadyClock::time_point t) const {
    return fault_wall + (t - fault);
  }
  // Seconds from the fault to the wall-clock time `t`.
  double since_fault(std::chrono::nanoseconds t) const {
    return std::chrono::duration<double>(t - fault_wall).count();
  }
};

// What the clients saw of one node, from the samples and the IDs.
struct Seen {
  bool any = false;
  SteadyClock::time_point first_received = SteadyClock::time_point::max();
  SteadyClock::time_point last_sent{}, last_received{};
  Id first = 0, last = 0;  // the lowest and the highest ID
};

// The served answers of `node` sent before `until`, and its IDs under
// `node_id` whose timestamp lies before `until` (an ID's timestamp is never
// behind the clock that issued it).
Seen seen_of(const test::Load& load, std::size_t node, std::uint64_t node_id,
             SteadyClock::time_point until, std::chrono::nanoseconds wall_until) {
  Seen seen;
  for (const test::Sample& s : load.samples()) {
    if (s.node != node || s.outcome != test::Outcome::kServed || s.sent >= until) continue;
    seen.first_received = std::min(seen.first_received, s.received);
    seen.last_sent = std::max(seen.last_sent, s.sent);
    seen.last_received = std::max(seen.last_received, s.received);
  }
  for (const test::Source& source : load.sources()) {
    for (const Id id : source.ids) {
      if (source.node != node || node_id_of(id) != node_id || timestamp_of(id) >= wall_until) {
        continue;
      }
      seen.first = seen.any ? std::min(seen.first, id) : id;
      seen.last = std::max(seen.last, id);
      seen.any = true;
    }
  }
  return seen;
}

class LeasePartition : public test::ChaosTest {
 protected:
  virtual LeaseStore store() const = 0;

  void takeover(const LinkFault& fault);

  // A node of `cluster` preferring node id 0.
  std::unique_ptr<test::ServerProcess> start_node(const LeaseStore& store,
                                                  const std::string& endpoint,
                                                  const std::string& name, const Lease& lease,
                                                  std::vector<std::string> extra = {}) {
    std::vector<std::string> args = store.flags(endpoint);
    // Clusters of one layout side by side in the shared store, on purpose.
    args.insert(args.end(), {"--cluster", cluster(), "--share-id-space", "true", "--worker-id", "0",
                             "--lease-ttl-s",
                             std::to_string(lease.ttl.count()), "--lease-safety-margin-ms",
                             std::to_string(lease.margin.count()), "--claim-timeout-ms", "20000",
                             "--state-dir", scenario.dir.file(name)});
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<test::ServerProcess>(SNOWIDD_PATH, args);
  }

  // Each scenario has a cluster of its own in the shared store.
  static std::string cluster() {
    return ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  static test::LoadOptions load_options() {
    test::LoadOptions options;
    options.pause = 1ms;
    return options;
  }

  // Breaks the link and reads A's lease deadline at once.
  static Moments break_link(const LinkFault& fault, FaultProxy& proxy,
                            const test::ServerProcess& a);
  // The bound asserted, and the measured values in the record.
  void assert_bounds(const Moments& m, const Seen& a, const Seen& b, milliseconds reservation,
                     bool same_id);
};

Moments LeasePartition::break_link(const LinkFault& fault, FaultProxy& proxy,
                                   const test::ServerProcess& a) {
  Moments m;
  fault.inject(proxy);
  m.fault = SteadyClock::now();
  m.fault_wall = wall_now();
  // Reads A's lease time left: [low, high] bounds its deadline.
  const auto read_deadline = [&a](SteadyClock::time_point& low, SteadyClock::time_point& high) {
    low = SteadyClock::now();
    const auto info =
        nlohmann::json::parse(test::http_get(a.port(), "/v1/info").body, nullptr, false);
    high = SteadyClock::now();
    const auto& left =
        info.is_object() ? info["cluster"]["lease_time_left_ms"] : nlohmann::json();
    if (!left.is_number()) return false;
    low += milliseconds{left.get<long long>()};
    high += milliseconds{left.get<long long>()} + 1ms;  // the time left is cut to whole ms
    return true;
  };
  EXPECT_TRUE(read_deadline(m.deadline_low, m.deadline_high))
      << "no lease time left just after the fault";
  // A renewal answered just before the fault may move the deadline a moment
  // after the first reading; nothing sent after the fault is answered, so a
  // second reading a little later sees the last deadline A was granted.
  std::this_thread::sleep_for(100ms);
  SteadyClock::time_point low, high;
  if (read_deadline(low, high)) {
    m.deadline_low = std::max(m.deadline_low, low);
    m.deadline_high = std::max(m.deadline_high, high);
  }
  return m;
}

void LeasePartition::takeover(const LinkFault& fault) {
  const LeaseStore s = store();
  FaultProxy proxy(s.port);
  ASSERT_NE(proxy.port(), 0);
  auto a = start_node(s, proxy.endpoint(), "a", fault.lease);
  ASSERT_TRUE(a->started()) << a->log();
  test::NodeAddress address[2];
  address[0].set(a->port(), a->grpc_port());
  test::Load load({&address[0], &address[1]}, load_options());
  ASSERT_TRUE(test::wait_until([&] { return load.served(0) >= 100; }, 10s)) << a->log();
  const FaultProxy::Stats relayed = proxy.stats();
  EXPECT_GT(relayed.relayed_requests, 0u);
  EXPECT_GT(relayed.relayed_answers, 0u);

  Moments m = break_link(fault, proxy, *a);
  EXPECT_TRUE(test::wait_until([&] { return test::http_get(a->port(), "/readyz").status == 503; },
                               fault.lease.ttl))
      << "A did not fence itself within a lease: " << a->log();
  const milliseconds reservation = s.reservation(cluster());
  auto b = start_node(s, "127.0.0.1:" + std::to_string(s.port), "b", fault.lease,
                      fault.successor_requires_id
                          ? std::vector<std::string>{"--node-id-policy", "require"}
                          : std::vector<std::string>{});
  ASSERT_TRUE(b->started()) << b->log();
  address[1].set(b->port(), b->grpc_port());
  EXPECT_TRUE(test::wait_until([&] { return load.served(1) >= 100; }, 10s)) << b->log();

  m.heal = heal(proxy, load, 100, *a);
  load.stop();
  const FaultProxy::Stats after = proxy.stats();
  EXPECT_GT(after.dropped_requests + after.dropped_answers + after.resets,
            relayed.dropped_requests + relayed.dropped_answers + relayed.resets)
      << "the fault met no traffic";

  const Seen seen_a = seen_of(load, 0, 0, m.heal, m.wall(m.heal));
  const auto b_info = nlohmann::json::parse(test::http_get(b->port(), "/v1/info").body);
  const auto b_id = b_info["cluster"]["node_id"].get<std::uint64_t>();
  if (fault.successor_requires_id) {
    EXPECT_EQ(b_id, 0u);
  }
  const auto a_info = nlohmann::json::parse(test::http_get(a->port(), "/v1/info").body);
  EXPECT_NE(a_info["cluster"]["node_id"], b_info["cluster"]["node_id"])
      << "A serves again under B's id";
  const Seen seen_b =
      seen_of(load, 1, b_id, SteadyClock::time_point::max(), std::chrono::nanoseconds::max());
  assert_bounds(m, seen_a, seen_b, reservation, b_id == 0);
  const auto recovery = test::recovery_time(load.samples(), m.heal);
  if (recovery) scenario.record.recovery_ms = recovery->count();
  EXPECT_EQ(load.unexpected(), "");
  scenario.count(load);
  scenario.check(load.sources());
}

void LeasePartition::assert_bounds(const Moments& m, const Seen& a, const Seen& b,
                                   milliseconds reservation, bool same_id) {
  ASSERT_TRUE(a.any && b.any) << "A or B issued nothing";
  EXPECT_LT(a.last_sent, m.deadline_high) << "A served a request sent after its lease deadline";
  // An ID's timestamp is its time unit, which began at or before it was issued.
  EXPECT_LE(timestamp_of(a.last), m.wall(m.deadline_high));
  EXPECT_LE(timestamp_of(a.last), reservation) << "A issued above its reservation";
  char text[400];
  std::snprintf(text, sizeof text,
                "A's last ID %.2f s after the fault (its answer; timestamp %+.2f s), A's "
                "lease "
                "deadline %.2f s, A's reservation %+.2f s",
                seconds_between(m.fault, a.last_received), m.since_fault(timestamp_of(a.last)),
                seconds_between(m.fault, m.deadline_low), m.since_fault(reservation));
  std::string measured = text;
  if (same_id) {
    EXPECT_GT(timestamp_of(b.first), reservation) << "B started at or below A's reservation";
    EXPECT_GT(timestamp_of(b.first), timestamp_of(a.last));
    EXPECT_GT(b.first_received, a.last_received);
    EXPECT_GT(b.first_received, m.deadline_low) << "B issued before A's lease deadline";
    EXPECT_GT(timestamp_of(b.first), m.wall(m.deadline_low));
  }
  std::snprintf(text, sizeof text, "; B's first ID (node id %llu) %.2f s after (timestamp %+.2f s)",
                static_cast<unsigned long long>(node_id_of(b.first)),
                seconds_between(m.fault, b.first_received), m.since_fault(timestamp_of(b.first)));
  measured += text;
  std::cout << scenario.record.scenario << ": " << measured << "\n";
  scenario.record.measured = measured;
}

// One store server for the whole suite.
template <typename Server>
class SharedServer : public LeasePartition {
 protected:
  static void SetUpTestSuite() { server_ = new Server(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if constexpr (requires { Server::kMissing; }) {
      if (!Server::available()) SNOWID_SKIP_MISSING(Server::kMissing);
    }
    ASSERT_TRUE(server_->started()) << server_->why();
  }

  // Names the scenario "<store>/<fault>" and runs it.
  void run(const LinkFault& fault) {
    const LeaseStore s = store();
    scenario.describe("partition/" + s.name + "/" + fault.name,
                      s.name + ": on node A's link, " + fault.words + ", while A serves (lease " +
                          std::to_string(fault.lease.ttl.count()) + " s, margin " +
                          std::to_string(fault.lease.margin.count()) +
                          " ms); node B then asks for A's id",
                      "fault proxy (tests/support/fault_proxy.h) between A and " + s.name +
                          "; B on a direct link" +
                          (fault.successor_requires_id ? " with --node-id-policy require" : "") +
                          "; the link heals once B serves",
                      "A's last ID under its id was asked for before A's lease deadline and lies "
                      "at or below its reservation; B's first ID under that id comes after the "
                      "deadline and after A's last ID (time and timestamp), above the "
                      "reservation; A serves again after the heal; 0 duplicates");
    takeover(fault);
  }

  static inline Server* server_ = nullptr;
};

// The outside attacks' fault and lease.
LinkFault blackhole() {
  return {"blackhole", "every byte both ways dropped, sockets kept open",
          [](FaultProxy& proxy) { proxy.blackhole(); }, true, kLongLease};
}
LinkFault requests_lost() {
  return {"requests_lost",
          "every byte from A to the store dropped, answers pass, sockets kept open",
          [](FaultProxy& proxy) { proxy.blackhole(FaultProxy::Flow::kRequests); }};
}
LinkFault answers_lost() {
  return {"answers_lost",
          "every byte from the store to A dropped while A's requests still reach it, sockets kept "
          "open",
          [](FaultProxy& proxy) { proxy.blackhole(FaultProxy::Flow::kAnswers); },
          /*successor_requires_id=*/false};
}
LinkFault reset() {
  return {"reset", "every connection from A to the store reset, and every new one",
          [](FaultProxy& proxy) { proxy.reset(); }};
}

class EtcdPartition : public SharedServer<test::EtcdCluster> {
 protected:
  void SetUp() override {
    SharedServer::SetUp();
    // A cluster new to the store: its first node need not start ahead.
    server_->mark_new_cluster(cluster());
  }
  LeaseStore store() const override {
    const std::string endpoint = server_->endpoint(0);
    return {"etcd", port_of(endpoint),
            [](const std::string& e) {
              return std::vector<std::string>{"--coordinator", "etcd", "--etcd-endpoints", e};
            },
            [endpoint](const std::string& cluster) {
              EtcdOptions options;
              options.endpoints = {endpoint};
              return reservation_in(options, cluster);
            }};
  }
};

TEST_F(EtcdPartition, BlackholedNodeStopsBeforeItsLeaseEndsAndItsSuccessorStartsAfter) {
  run(blackhole());
}

TEST_F(EtcdPartition, NodeWhoseAnswersAreLostStopsBeforeItsLeaseEnds) { run(answers_lost()); }

TEST_F(EtcdPartition, NodeWhoseConnectionsAreResetStopsBeforeItsLeaseEnds) { run(reset()); }

class RedisPartition : public SharedServer<test::RedisServer> {
 protected:
  void SetUp() override {
    SharedServer::SetUp();
    // A cluster new to the store: its first node need not start ahead.
    server_->cli({"SET", "snowid:{" + cluster() + "}:created", "0"});
  }
  LeaseStore store() const override {
    return {"redis", server_->port(),
            [](const std::string& e) {
              return std::vector<std::string>{"--coordinator", "redis", "--redis-endpoints", e};
            },
            [](const std::string& cluster) {
              RedisOptions options;
              options.endpoints = {server_->endpoint()};
              return reservation_in(options, cluster);
            }};
  }
};

TEST_F(RedisPartition, BlackholedNodeStopsBeforeItsLeaseEndsAndItsSuccessorStartsAfter) {
  run(blackhole());
}

TEST_F(RedisPartition, NodeWhoseRequestsAreLostStopsBeforeItsLeaseEnds) { run(requests_lost()); }

TEST_F(RedisPartition, NodeWhoseAnswersAreLostStopsBeforeItsLeaseEnds) { run(answers_lost()); }

TEST_F(RedisPartition, NodeWhoseConnectionsAreResetStopsBeforeItsLeaseEnds) { run(reset()); }

// A slow link costs latency, not the claim: with every byte 150 ms late
// each way (renewals take 300 ms and more), A keeps id 0, never fences
// itself and serves on without refusing a request.
TEST_F(RedisPartition, SlowLinkCostsLatencyNotTheClaim) {
  scenario.describe("partition/redis/delay",
                    "redis: every byte between node A and Redis 150 ms late each way, for 5 "
                    "s",
                    "fault proxy (tests/support/fault_proxy.h) between A and Redis, delay "
                    "mode",
                    "A keeps node id 0: no fencing event, no lost claim, no re-claim, no "
                    "refusal; Redis requests take at least 300 ms; 0 duplicates");
  FaultProxy proxy(server_->port());
  ASSERT_NE(proxy.port(), 0);
  auto a = start_node(store(), proxy.endpoint(), "a", kLongLease);
  ASSERT_TRUE(a->started()) << a->log();
  test::NodeAddress address;
  address.set(a->port(), a->grpc_port());
  test::Load load({&address}, load_options());
  ASSERT_TRUE(test::wait_until([&] { return load.served(0) >= 100; }, 10s)) << a->log();
  proxy.delay(150ms);
  const auto slowed = SteadyClock::now();
  const std::uint64_t served_before = load.served(0), refused_before = load.refused(0);
  std::this_thread::sleep_for(5s);
  const auto info = nlohmann::json::parse(test::http_get(a->port(), "/v1/info").body);
  const std::uint64_t served = load.served(0) - served_before;
  const std::uint64_t refused = load.refused(0) - refused_before;
  proxy.pass();
  load.stop();
  const auto& cluster_info = info["cluster"];
  EXPECT_EQ(cluster_info["node_id"], 0);
  EXPECT_EQ(cluster_info["claim_state"], "held");
  EXPECT_EQ(cluster_info["fencing_events"], 0);
  EXPECT_EQ(cluster_info["lost_claims"], 0);
  EXPECT_EQ(cluster_info["reclaims"], 0);
  EXPECT_GE(cluster_info["redis_latency_max_ms"].get<double>(), 300.0);
  EXPECT_GT(served, 100u) << "A hardly served through the slow link";
  EXPECT_EQ(refused, 0u) << "A refused requests through the slow link";
  scenario.record.measured =
      std::to_string(served) + " answers served and " + std::to_string(refused) +
      " refused in the " +
      std::to_string(seconds_between(slowed, SteadyClock::now())).substr(0, 3) +
      " s of delay; slowest Redis request " +
      std::to_string(cluster_info["redis_latency_max_ms"].get<double>()).substr(0, 5) + " ms";
  std::cout << scenario.record.measured << "\n";
  EXPECT_EQ(load.unexpected(), "");
  scenario.count(load);
  scenario.check(load.sources());
}

class ZooKeeperPartition : public SharedServer<test::ZooKeeperEnsemble> {
 protected:
  static ZooKeeperOptions options(const std::string& cluster) {
    ZooKeeperOptions options;
    options.endpoints = server_->endpoints();
    options.cluster = cluster;
    options.layout = layout();
    options.tick_time = test::ZooKeeperEnsemble::kTickTime;
    options.lease_ttl = kLongLease.ttl;
    return options;
  }
  // A cluster new to the ensemble: its first node need not start ahead.
  void SetUp() override {
    SharedServer::SetUp();
    coord::StoreCounters counters;
    auto session = coord::ZooKeeperSession::open(options(cluster()), counters);
    ASSERT_TRUE(session.ok()) << session.error().message;
    (*session)->create("/snowid", "", false);
    (*session)->create(coord::zookeeper_cluster_path(cluster()), "", false);
    ASSERT_TRUE((*session)->create(coord::zookeeper_created_path(cluster()), "0", false).ok());
  }
  LeaseStore store() const override {
    return {
        "zookeeper", port_of(server_->endpoint(0)),
        [](const std::string& e) {
          return std::vector<std::string>{
              "--coordinator",         "zookeeper",
              "--zookeeper-endpoints", e,
              "--zookeeper-tick-ms",   std::to_string(test::ZooKeeperEnsemble::kTickTime.count())};
        },
        [](const std::string& cluster) { return reservation_in(options(cluster), cluster); }};
  }
};

TEST_F(ZooKeeperPartition, BlackholedNodeStopsBeforeItsLeaseEndsAndItsSuccessorStartsAfter) {
  run(blackhole());
}

TEST_F(ZooKeeperPartition, NodeWhoseAnswersAreLostStopsBeforeItsLeaseEnds) { run(answers_lost()); }

TEST_F(ZooKeeperPartition, NodeWhoseConnectionsAreResetStopsBeforeItsLeaseEnds) { run(reset()); }

// The SQL coordinators: one database server for the suite, behind the
// interface SharedServer needs; `url(endpoint)` names its database at HOST:PORT.
template <typename Process>
struct SqlServer {
  Process process;
  bool started() const { return process.started(); }
  const std::string& why() const { return process.error(); }
  static bool available() { return Process::available(); }
  static constexpr const char* kMissing = Process::kMissing;
};
struct PostgresServer : SqlServer<test::PostgresProcess> {
  std::string url(const std::string& endpoint) const {
    return "postgresql://postgres@" + endpoint + "/postgres";
  }
  bool sql(const std::string& statements) { return process.psql(statements); }
};
struct MariadbServer : SqlServer<test::MariadbProcess> {
  std::string url(const std::string& endpoint) const {
    return std::string("mysql://snowid:") + test::MariadbProcess::kPassword + "@" + endpoint +
           "/snowid";
  }
  bool sql(const std::string& statements) { return process.sql(statements); }
};

template <typename Server, typename Options>
class SqlPartition : public SharedServer<Server> {
 protected:
  using Base = SharedServer<Server>;
  // A cluster new to the database: its first node need not start ahead. The
  // table as operators apply it (sql/).
  void SetUp() override {
    Base::SetUp();
    std::ifstream schema(std::string(SNOWID_SOURCE_DIR) + "/sql/" + schema_file());
    std::stringstream text;
    text << schema.rdbuf();
    ASSERT_TRUE(Base::server_->sql(text.str())) << Base::server_->why();
    ASSERT_TRUE(Base::server_->sql(
        "DELETE FROM snowid_node_claims WHERE cluster = '" + LeasePartition::cluster() +
        "' AND node_id = -1; INSERT INTO snowid_node_claims (cluster, node_id, reservation) "
        "VALUES ('" + LeasePartition::cluster() + "', -1, 0)"))
        << Base::server_->why();
  }
  virtual const char* name() const = 0;
  virtual const char* schema_file() const = 0;
  LeaseStore store() const override {
    const std::string store = name();
    const int port = Base::server_->process.port();
    // Its scenarios are partition/<store>-coordinator/...: partition/postgres/
    // names the segment store's.
    return {store + "-coordinator", port,
            [store](const std::string& e) {
              return std::vector<std::string>{"--coordinator", store, "--" + store + "-url",
                                              Base::server_->url(e)};
            },
            [port](const std::string& cluster) {
              Options options;
              options.endpoints = {Base::server_->url("127.0.0.1:" + std::to_string(port))};
              return reservation_in(options, cluster);
            }};
  }
};

class PostgresLeasePartition : public SqlPartition<PostgresServer, PostgresOptions> {
  const char* name() const override { return "postgres"; }
  const char* schema_file() const override { return "node_claims.sql"; }
};

TEST_F(PostgresLeasePartition, BlackholedNodeStopsBeforeItsLeaseEndsAndItsSuccessorStartsAfter) {
  run(blackhole());
}

TEST_F(PostgresLeasePartition, NodeWhoseAnswersAreLostStopsBeforeItsLeaseEnds) {
  run(answers_lost());
}

TEST_F(PostgresLeasePartition, NodeWhoseConnectionsAreResetStopsBeforeItsLeaseEnds) {
  run(reset());
}

class MysqlLeasePartition : public SqlPartition<MariadbServer, MysqlOptions> {
  const char* name() const override { return "mysql"; }
  const char* schema_file() const override { return "node_claims.mysql.sql"; }
};

TEST_F(MysqlLeasePartition, BlackholedNodeStopsBeforeItsLeaseEndsAndItsSuccessorStartsAfter) {
  run(blackhole());
}

TEST_F(MysqlLeasePartition, NodeWhoseAnswersAreLostStopsBeforeItsLeaseEnds) {
  run(answers_lost());
}

TEST_F(MysqlLeasePartition, NodeWhoseConnectionsAreResetStopsBeforeItsLeaseEnds) {
  run(reset());
}

// Segment mode: two nodes on one PostgreSQL tag, node 0 through the proxy,
// node 1 on a direct link. Ranges are small (step 100, at most 200), so a
// node's two buffers last a fraction of a second under the load.
class PostgresPartition : public test::PostgresSuite {
 protected:
  void TearDown() override { scenario.finish(); }

  // Makes `tag` and starts `nodes` nodes, node 0 through the proxy.
  void start_nodes(const std::string& tag, int nodes) {
    const auto created = test::run_process({SNOWID_CLI_PATH, "segment", "create", tag, "--step",
                                            "100", "--segment-store", postgres_->url()},
                                           {}, 20s);
    ASSERT_EQ(created.exit_code, 0) << created.err;
    proxy = std::make_unique<FaultProxy>(postgres_->port());
    ASSERT_NE(proxy->port(), 0);
    for (int n = 0; n < nodes; ++n) {
      const std::string url =
          n == 0 ? "postgresql://postgres@" + proxy->endpoint() + "/postgres" : postgres_->url();
      // Node 0 gives up on its store quickly, so that the cut shows within a
      // second; node 1, on a direct link, waits as long as a busy machine may
      // keep PostgreSQL from answering, so that none of its refusals is the
      // machine's load.
      const std::string request_timeout = n == 0 ? "500" : "5000";
      const std::string store_timeout = n == 0 ? "1000" : "5000";
      servers.push_back(std::make_unique<test::ServerProcess>(
          SNOWIDD_PATH,
          std::vector<std::string>{"--segment-store", url, "--worker-id", std::to_string(n),
                                   "--state-dir", scenario.dir.file("node" + std::to_string(n)),
                                   "--segment-max-step", "200", "--segment-request-timeout-ms",
                                   request_timeout, "--segment-store-timeout-ms", store_timeout,
                                   "--segment-retry-max-ms", "200"}));
      ASSERT_TRUE(servers.back()->started()) << servers.back()->log();
      addresses[n].set(servers.back()->port(), servers.back()->grpc_port());
    }
  }
  test::LoadOptions clients(const std::string& tag) const {
    test::LoadOptions options;
    options.grpc_clients = 0;
    options.http_target = "/v1/segment/" + tag + "?count=10&format=text";
    options.pause = 1ms;
    return options;
  }
  // Pauses `load` until node 0's buffers have settled (no fetch under way):
  // what it holds then is all it may hand out while cut off.
  double settle(test::Load& load, const std::string& tag) {
    load.pause(true);
    std::this_thread::sleep_for(300ms);
    return test::metric(servers[0]->port(), "snowid_segment_buffered_numbers{tag=\"" + tag + "\"}");
  }
  long long max_id(const std::string& tag) {
    std::string out;
    EXPECT_TRUE(
        postgres_->psql("SELECT max_id FROM snowid_segments WHERE tag = '" + tag + "'", &out))
        << postgres_->error();
    return std::atoll(out.c_str());  // psql -A -t: the bare value
  }

  test::Scenario scenario;
  test::NodeAddress addresses[2];
  std::unique_ptr<FaultProxy> proxy;
  std::vector<std::unique_ptr<test::ServerProcess>> servers;
};

TEST_F(PostgresPartition, NodeCutOffHandsOutOnlyWhatItHoldsThenRefusesWhileItsPeerServes) {
  scenario.describe("partition/postgres/blackhole",
                    "postgres: every byte between node 0 and PostgreSQL dropped, sockets "
                    "kept open, while "
                    "node 1 on a direct link serves the same tag; then the link heals",
                    "fault proxy (tests/support/fault_proxy.h) between node 0 and "
                    "PostgreSQL, blackhole mode; "
                    "load paused while the link breaks so that node 0's buffers are known",
                    "node 0 hands out at most the numbers its buffered ranges held, then "
                    "answers 503 "
                    "(/readyz/segment 503); node 1 is never refused; node 0 serves again "
                    "after the heal; "
                    "0 duplicates");
  start_nodes("cut.off", 2);
  test::Load load({&addresses[0], &addresses[1]}, clients("cut.off"));
  ASSERT_TRUE(test::wait_until([&] { return load.served(0) >= 50 && load.served(1) >= 50; }, 10s));
  const double held = settle(load, "cut.off");
  proxy->blackhole();
  const auto fault = SteadyClock::now();
  load.pause(false);
  const bool refused = test::wait_until([&] { return load.refused(0) > 0; }, 10s);
  const auto refused_at = SteadyClock::now();
  // Not ready once its fetch failed (segment_store_timeout_ms), not at the first refusal.
  const bool not_ready = test::wait_until(
      [&] { return test::http_get(servers[0]->port(), "/readyz/segment").status == 503; }, 5s);
  const auto not_ready_at = SteadyClock::now();
  std::this_thread::sleep_for(1s);  // node 1 serves on meanwhile
  const auto healed = heal(*proxy, load, 50, *servers[0]);
  load.stop();

  EXPECT_TRUE(refused) << "node 0 never ran dry";
  EXPECT_TRUE(not_ready) << "/readyz/segment stayed 200 on the node cut off";
  EXPECT_EQ(load.refused(1), 0u) << "node 1, on a direct link, was refused";
  std::size_t handed_out = 0;  // by node 0 after the cut: 10 numbers per answer
  for (const test::Sample& s : load.samples()) {
    const bool cut_off = s.sent >= fault && s.sent < healed;
    if (s.node == 0 && cut_off && s.outcome == test::Outcome::kServed) handed_out += 10;
  }
  EXPECT_LE(static_cast<double>(handed_out), held) << "node 0 handed out more than it held";
  EXPECT_GT(proxy->stats().dropped_requests, 0u) << "the fault met no traffic";
  const auto recovery = test::recovery_time(load.samples(), healed);
  if (recovery) scenario.record.recovery_ms = recovery->count();
  scenario.record.measured =
      "node 0 held " + std::to_string(static_cast<long long>(held)) + " numbers and handed out " +
      std::to_string(handed_out) + " after the cut, refusing from " +
      std::to_string(seconds_between(fault, refused_at)).substr(0, 4) +
      " s after it (/readyz/segment 503 from " +
      std::to_string(seconds_between(fault, not_ready_at)).substr(0, 4) +
      " s); node 1 refused " + std::to_string(load.refused(1)) + " of " +
      std::to_string(load.served(1) + load.refused(1)) + " answers";
  std::cout << scenario.record.measured << "\n";
  EXPECT_EQ(load.unexpected(), "");
  scenario.count(load);
  scenario.check(load.sources());
}

TEST_F(PostgresPartition, RangeWhoseAnswerWasLostIsNeverHandedOut) {
  scenario.describe("partition/postgres/answers_lost",
                    "postgres: every byte from PostgreSQL to the node dropped while its "
                    "requests still "
                    "arrive: a range fetch commits, its answer never comes",
                    "fault proxy (tests/support/fault_proxy.h) between the node and "
                    "PostgreSQL, blackhole of "
                    "the answers only; max_id read with psql before and during the fault",
                    "max_id moves past the node's ranges during the fault (a fetch "
                    "committed); no number of "
                    "the lost ranges is ever handed out, before or after the heal; 0 "
                    "duplicates");
  start_nodes("lost.answer", 1);
  test::Load load({&addresses[0]}, clients("lost.answer"));
  ASSERT_TRUE(test::wait_until([&] { return load.served(0) >= 50; }, 10s));
  settle(load, "lost.answer");
  const long long before = max_id("lost.answer");
  proxy->blackhole(FaultProxy::Flow::kAnswers);
  load.pause(false);
  EXPECT_TRUE(test::wait_until([&] { return load.refused(0) > 0; }, 10s)) << "never ran dry";
  const long long during = max_id("lost.answer");
  const auto healed = heal(*proxy, load, 50, *servers[0]);
  load.stop();

  EXPECT_GT(during, before) << "no fetch reached the database during the fault";
  std::size_t in_lost_ranges = 0;
  for (const test::Source& source : load.sources()) {
    in_lost_ranges += static_cast<std::size_t>(
        std::count_if(source.ids.begin(), source.ids.end(),
                      [&](test::Number n) { return n >= before && n < during; }));
  }
  EXPECT_EQ(in_lost_ranges, 0u) << "numbers of ranges whose answer was lost were handed out";
  const auto recovery = test::recovery_time(load.samples(), healed);
  if (recovery) scenario.record.recovery_ms = recovery->count();
  scenario.record.measured = "ranges [" + std::to_string(before) + ", " + std::to_string(during) +
                             ") committed without an answer; 0 of their numbers handed out";
  std::cout << scenario.record.measured << "\n";
  EXPECT_EQ(load.unexpected(), "");
  scenario.count(load);
  scenario.check(load.sources());
}

}  // namespace
}  // namespace snowid
