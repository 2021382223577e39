// The SQL coordinators against a real database server started by the test
// program, one per program: this file is compiled twice, for PostgreSQL
// (SNOWID_SQL_POSTGRES: snowid_postgres_tests) and for MariaDB
// (snowid_mysql_tests). The contract every leasing store keeps
// (leased_store_contract.h), races, a take-over above the old reservation
// that the old holder can no longer raise, the self-fence of a holder whose
// lease ended by the database's clock, the schema created on first use (and
// the one shipped in sql/ applied by hand), and a database restart under a
// holder. Leases are 2 s so that every test is short.
#include "sql_coordinator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "leased_store_contract.h"
#include "missing.h"
#include "sql_claim.h"
#include "sql_client.h"
#include "sql_dialect.h"
#ifdef SNOWID_SQL_POSTGRES
#include "postgres_process.h"
#else
#include "mariadb_process.h"
#endif

namespace snowid {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using test::eventually;
using test::small_layout;
using test::wall_now;

// What tells the two databases apart here.
#ifdef SNOWID_SQL_POSTGRES
using StoreOptions = PostgresOptions;
const coord::SqlDialect& kDialect = coord::kPostgresDialect;
Result<std::unique_ptr<Coordinator>> (*const kMake)(const StoreOptions&) =
    make_postgres_coordinator;
constexpr const char* kSchemaFile = "/sql/node_claims.sql";
constexpr const char* kUnreachable = "postgresql connect";
constexpr const char* kUpsertCreatedZero =
    " ON CONFLICT (cluster, node_id) DO UPDATE SET reservation = 0";
class Database {
 public:
  using Server = test::PostgresProcess;
  bool started() const { return server_.started(); }
  const std::string& why() const { return server_.error(); }
  std::string url() const { return server_.url(); }
  bool sql(const std::string& statements, std::string* out) {
    return server_.psql(statements, out);
  }
  bool restart() { return server_.stop(/*immediate=*/true) && server_.start(); }
  // pg_dump of the database into `file`; psql puts it back as dumped.
  bool dump(const std::string& file) { return server_.dump(file); }
  bool restore(const std::string& file) { return server_.restore(file); }

 private:
  Server server_;
};
#else
using StoreOptions = MysqlOptions;
const coord::SqlDialect& kDialect = coord::kMysqlDialect;
Result<std::unique_ptr<Coordinator>> (*const kMake)(const StoreOptions&) = make_mysql_coordinator;
constexpr const char* kSchemaFile = "/sql/node_claims.mysql.sql";
constexpr const char* kUnreachable = "mysql connect";
constexpr const char* kUpsertCreatedZero = " ON DUPLICATE KEY UPDATE reservation = 0";
class Database {
 public:
  using Server = test::MariadbProcess;
  bool started() const { return server_.started(); }
  const std::string& why() const { return server_.error(); }
  std::string url() const { return server_.url(); }
  bool sql(const std::string& statements, std::string* out) { return server_.sql(statements, out); }
  bool restart() {
    server_.stop();
    return server_.start();
  }
  // mariadb-dump of the database into `file`; mariadb puts it back as dumped.
  bool dump(const std::string& file) { return server_.dump("snowid", file); }
  bool restore(const std::string& file) { return server_.restore("snowid", file); }

 private:
  Server server_;
};
#endif

Database& database() {
  static Database server;
  return server;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class SqlStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Database::Server::available()) SNOWID_SKIP_MISSING(Database::Server::kMissing);
    ASSERT_TRUE(database().started()) << database().why();
    // The schema as operators apply it by hand (a no-op once it exists).
    sql(file_text(std::string(SNOWID_SOURCE_DIR) + kSchemaFile));
  }

  std::string cluster() const {
    return ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  StoreOptions options(std::optional<std::uint64_t> preferred = std::nullopt) {
    StoreOptions o;
    o.endpoints = {database().url()};
    o.cluster = cluster();
    o.share_id_space = true;  // a cluster per test, one layout, one store
    o.layout = small_layout();
    o.preferred_node_id = preferred;
    o.lease_ttl = seconds{2};
    o.safety_margin = milliseconds{500};
    o.request_timeout = milliseconds{1000};
    o.advertised_addresses = {"127.0.0.1:8080"};
    return o;
  }

  // Runs `statements`; their output, trimmed.
  std::string sql(const std::string& statements) {
    std::string out;
    EXPECT_TRUE(database().sql(statements, &out)) << database().why();
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return out;
  }

  std::string where(std::uint64_t node_id) {
    return "WHERE cluster = '" + cluster() + "' AND node_id = " + std::to_string(node_id);
  }

  milliseconds stored_reservation(std::uint64_t node_id) {
    const std::string value = sql("SELECT reservation FROM snowid_node_claims " + where(node_id));
    return milliseconds{value.empty() ? 0 : std::stoll(value)};
  }

  bool claim_exists(std::uint64_t node_id) {
    return sql("SELECT COUNT(*) FROM snowid_node_claims " + where(node_id) +
               " AND holder IS NOT NULL AND lease_until > " + kDialect.now_ms) == "1";
  }

  // Ends the lease of `node_id` by the database's clock, as time would.
  void expire(std::uint64_t node_id) {
    sql("UPDATE snowid_node_claims SET lease_until = 0 " + where(node_id));
  }

  // This store for the bodies every leasing store shares.
  test::LeasedStoreUnderTest store() {
    auto store = test::describe_store<StoreOptions>(
        kDialect.name, std::string("--") + kDialect.name, database().url(),
        [this](std::optional<std::uint64_t> p) { return options(p); }, kMake,
        [this](std::uint64_t id) { return stored_reservation(id); },
        [this](std::uint64_t id) { return claim_exists(id); }, kUnreachable, "--redis");
    store.mark_new_cluster = [this] {
      sql(std::string(kDialect.insert) + " snowid_node_claims (cluster, node_id, reservation) " +
          "VALUES ('" + cluster() + "', -1, 0)" + kUpsertCreatedZero);
    };
    store.lose_data = [this] {
      sql("DELETE FROM snowid_node_claims WHERE cluster = '" + cluster() + "'");
    };
    store.make_claim = [this](std::uint64_t preferred) {
      return std::unique_ptr<coord::LeasedClaim>(raw_claim(options(preferred)));
    };
    store.back_up = [this] {
      // A real dump of the database (pg_dump, mariadb-dump), put back by the
      // database's own client while the holders' connections are open.
      const std::string file = (std::filesystem::temp_directory_path() /
                                ("snowid-" + cluster() + "-" + std::to_string(::getpid()) + ".sql"))
                                   .string();
      EXPECT_TRUE(database().dump(file)) << database().why();
      return std::function<void()>([file] {
        EXPECT_TRUE(database().restore(file)) << database().why();
        if (std::getenv("SNOWID_KEEP_DUMP") == nullptr) std::filesystem::remove(file);
      });
    };
    return store;
  }

  std::unique_ptr<Coordinator> make(std::optional<std::uint64_t> preferred) {
    auto made = kMake(options(preferred));
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error().message);
    return made.ok() ? std::move(*made) : nullptr;
  }

  std::unique_ptr<coord::SqlClaim> raw_claim(const StoreOptions& o) {
    auto client = coord::SqlClient::connect(kDialect, o);
    EXPECT_TRUE(client.ok());
    return std::make_unique<coord::SqlClaim>(std::move(*client), o);
  }
};

SNOWID_LEASED_STORE_TESTS(SqlStoreTest)

TEST_F(SqlStoreTest, ClaimsThePreferredIdAndStartsAboveANewClustersFirstReservation) {
  // lease_ttl + reserve_ahead ahead of the clock.
  auto coordinator = test::claims_the_preferred_id_of_a_new_cluster(store(), milliseconds{5000});
  ASSERT_TRUE(coordinator->stats().lease_time_left.has_value());
  // The lease ends by the database's clock, lease_ttl after the last write.
  const long long left = std::stoll(sql(std::string("SELECT lease_until - ") + kDialect.now_ms +
                                        " FROM snowid_node_claims " + where(2)));
  EXPECT_GT(left, 0);
  EXPECT_LE(left, 2000);
}

TEST_F(SqlStoreTest, ManyRacingClaimersGetDistinctIds) {
  test::racing_claimers_get_distinct_ids(5, [this](int round) {
    auto o = options(3);
    o.cluster += std::to_string(round);
    test::Racers racers;
    for (int i = 0; i < 4; ++i) {
      std::shared_ptr<coord::SqlClaim> claim = raw_claim(o);
      racers.push_back([claim] { return claim->claim(3); });
    }
    return racers;
  });
}

TEST_F(SqlStoreTest, TakeOverStartsStrictlyAboveTheOldReservation) {
  // The old holder's lease ends by the database's clock; its row and
  // reservation stay, and its late writes match no row.
  auto old_holder = raw_claim(options(1));
  ASSERT_TRUE(old_holder->claim(std::nullopt).ok());
  test::a_take_over_starts_above_the_old_reservation(store(), *old_holder, [this] { expire(1); });
}

TEST_F(SqlStoreTest, AHolderWithoutRenewalsIsFencedAndItsReservationIsFinal) {
  auto holder = raw_claim(options(0));
  ASSERT_TRUE(holder->claim(std::nullopt).ok());
  const milliseconds reservation = holder->reservation();
  // No renewals: the node's own deadline passes (TTL - margin after the send
  // of its last acknowledged write), and then the database's lease.
  EXPECT_TRUE(
      eventually([&] { return coord::boot_time_now() >= holder->deadline(); }, milliseconds{2500}));
  ASSERT_TRUE(eventually([&] { return !claim_exists(0); }, milliseconds{3000}));
  EXPECT_EQ(holder->extend_reservation(/*force=*/true, wall_now() + seconds{60}).outcome,
            coord::StepOutcome::kClaimLost);
  EXPECT_EQ(holder->keep_alive().outcome, coord::StepOutcome::kClaimLost);
  EXPECT_EQ(stored_reservation(0), reservation);
}

TEST_F(SqlStoreTest, ARenewedClaimOutlivesItsTtl) {
  test::a_renewed_claim_outlives_its_ttl(store(), milliseconds{3500});
}

TEST_F(SqlStoreTest, TheTableIsCreatedOnFirstUse) {
  sql("DROP TABLE snowid_node_claims");
  auto coordinator = make(0);
  auto claim = coordinator->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_TRUE(claim_exists(0));
}

TEST_F(SqlStoreTest, StatsShowTheUrlWithoutItsPassword) {
  StoreOptions o = options(0);
  auto coordinator = kMake(o);
  ASSERT_TRUE(coordinator.ok());
  EXPECT_EQ((*coordinator)->stats().endpoints.find("s3cret"), std::string::npos)
      << (*coordinator)->stats().endpoints;
  EXPECT_EQ(hide_sql_password("mysql://u:pw@h:1/db?x=1&password=pw"),
            "mysql://u:***@h:1/db?x=1&password=***");
}

#ifndef SNOWID_SQL_POSTGRES
// A MySQL URL naming several hosts (libpq reads its own form itself) is one
// endpoint per host, each with the URL's account, database and parameters:
// a failover list that needs no password outside the URL. A claim through
// it passes over a server that does not answer.
TEST_F(SqlStoreTest, AUrlWithSeveralHostsIsOneEndpointPerHost) {
  auto parsed = parse_mysql_endpoints("mysql://u:p@w@h1:1,h2/db?ssl_ca=/a,b");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(*parsed, (std::vector<std::string>{"mysql://u:p@w@h1:1/db?ssl_ca=/a,b",
                                               "mysql://u:p@w@h2/db?ssl_ca=/a,b"}));
  EXPECT_FALSE(parse_mysql_endpoints("mysql://u@h1,,h2/db").ok());
  EXPECT_FALSE(parse_mysql_endpoints("mysql://u@h1,/db").ok());

  const std::string url = database().url();
  const std::size_t host = url.rfind('@') + 1;
  const std::string closed = "127.0.0.1:" + std::to_string(test::free_loopback_ports(1)[0]);
  auto endpoints = parse_mysql_endpoints(url.substr(0, host) + closed + "," + url.substr(host));
  ASSERT_TRUE(endpoints.ok()) << endpoints.error().message;
  ASSERT_EQ(endpoints->size(), 2u);
  StoreOptions o = options(0);
  o.endpoints = *endpoints;
  auto coordinator = kMake(o);
  ASSERT_TRUE(coordinator.ok()) << coordinator.error().message;
  auto claim = (*coordinator)->claim();
  ASSERT_TRUE(claim.ok()) << claim.error().message;
  EXPECT_EQ(claim->node_id, 0u);
  EXPECT_TRUE(claim_exists(0));
}
#endif

// The database restarts under a holder (a crash: no clean shutdown): the
// holder fences or keeps its claim through the reconnect, and ends up
// holding its id again, above every reservation written before.
TEST_F(SqlStoreTest, ADatabaseRestartEndsInTheSameIdAboveTheOldReservation) {
  auto holder = make(1);
  ASSERT_TRUE(holder->claim().ok());
  const milliseconds before = stored_reservation(1);
  ASSERT_TRUE(database().restart()) << database().why();
  ASSERT_TRUE(eventually([&] { return holder->may_issue() && stored_reservation(1) >= before; },
                         seconds{15}));
  EXPECT_EQ(holder->stats().node_id, 1u);
  EXPECT_GE(holder->reservation(), before);
  auto other = make(1);
  auto second = other->claim();
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_NE(second->node_id, 1u);
}

}  // namespace
}  // namespace snowid
