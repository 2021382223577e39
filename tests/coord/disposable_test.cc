// node_id_policy = "disposable" against a real database server started by the
// test program, one per program: this file is compiled twice, for PostgreSQL
// (SNOWID_SQL_POSTGRES: snowid_disposable_postgres_tests) and for MariaDB
// (snowid_disposable_mysql_tests). snowidd restarted ten times takes ten new
// WORKER_NODE rows as its node ids and issues distinct IDs under them; a layout
// without room for kMinDisposableStarts starts is refused with one line; a row
// ID beyond the layout's node ids refuses the start; /v1/info shows the starts
// left; and a table made by uid-generator's own DDL serves unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "missing.h"
#include "server_process.h"
#include "subprocess.h"
#ifdef SNOWID_SQL_POSTGRES
#include "postgres_process.h"
#else
#include "mariadb_process.h"
#endif

namespace snowid {
namespace {

const std::string kServer = SNOWIDD_PATH;

#ifdef SNOWID_SQL_POSTGRES
constexpr const char* kStore = "postgres";
constexpr const char* kColumns = "|";  // psql -A
constexpr const char* kSchemaFile = "/sql/worker_node.sql";
// The table as an operator makes it by hand: the file shipped in sql/.
std::string own_ddl() {
  std::ifstream in(std::string(SNOWID_SOURCE_DIR) + kSchemaFile);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}
constexpr const char* kRestartAt = "ALTER TABLE worker_node ALTER COLUMN id RESTART WITH ";
using DatabaseServer = test::PostgresProcess;
bool run_sql(DatabaseServer& server, const std::string& statements, std::string* out) {
  return server.psql(statements, out);
}
#else
constexpr const char* kStore = "mysql";
constexpr const char* kColumns = "\t";  // mariadb --batch
// uid-generator's own script (src/main/scripts/WORKER_NODE.sql), as it is.
std::string own_ddl() {
  return "CREATE TABLE WORKER_NODE ("
         " ID BIGINT NOT NULL AUTO_INCREMENT COMMENT 'auto increment id',"
         " HOST_NAME VARCHAR(64) NOT NULL COMMENT 'host name',"
         " PORT VARCHAR(64) NOT NULL COMMENT 'port',"
         " TYPE INT NOT NULL COMMENT 'node type: ACTUAL or CONTAINER',"
         " LAUNCH_DATE DATE NOT NULL COMMENT 'launch date',"
         " MODIFIED TIMESTAMP NOT NULL COMMENT 'modified time',"
         " CREATED TIMESTAMP NOT NULL COMMENT 'created time',"
         " PRIMARY KEY(ID)"
         ") COMMENT='DB WorkerID Assigner for UID Generator',ENGINE = INNODB";
}
constexpr const char* kRestartAt = "ALTER TABLE WORKER_NODE AUTO_INCREMENT = ";
using DatabaseServer = test::MariadbProcess;
bool run_sql(DatabaseServer& server, const std::string& statements, std::string* out) {
  return server.sql(statements, out);
}
#endif

class Database {
 public:
  bool started() const { return server_.started(); }
  const std::string& why() const { return server_.error(); }
  std::string url() const { return server_.url(); }
  bool sql(const std::string& statements, std::string* out = nullptr) {
    return run_sql(server_, statements, out);
  }

 private:
  DatabaseServer server_;
};

class Disposable : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { database_ = new Database(); }
  static void TearDownTestSuite() {
    delete database_;
    database_ = nullptr;
  }
  void SetUp() override {
    if (!DatabaseServer::available()) SNOWID_SKIP_MISSING(DatabaseServer::kMissing);
    ASSERT_TRUE(database_->started()) << database_->why();
    ASSERT_TRUE(database_->sql("DROP TABLE IF EXISTS WORKER_NODE")) << database_->why();
  }

  // snowidd's flags for the disposable policy on this database, then `extra`.
  static std::vector<std::string> flags(const test::TempDir& state,
                                        std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--state-dir",
                                     state.path(),
                                     "--coordinator",
                                     kStore,
                                     "--node-id-policy",
                                     "disposable",
                                     std::string("--") + kStore + "-url",
                                     database_->url(),
                                     // Each start waits out the takeover floor.
                                     "--lease-ttl-s",
                                     "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // The table's rows: ID, HOST_NAME, PORT, TYPE, one line each.
  static std::string rows() {
    std::string out;
    EXPECT_TRUE(
        database_->sql("SELECT ID, HOST_NAME, PORT, TYPE FROM WORKER_NODE ORDER BY ID", &out))
        << database_->why();
    return out;
  }

  static Database* database_;
};

Database* Disposable::database_ = nullptr;

nlohmann::json cluster_info(int port) {
  const test::HttpReply reply = test::http_get(port, "/v1/info");
  EXPECT_EQ(reply.status, 200) << reply.body;
  return nlohmann::json::parse(reply.body, nullptr, false)["cluster"];
}

// The acceptance: ten restarts, ten new rows, ten node ids, and no ID twice.
TEST_F(Disposable, TenRestartsTakeTenNewRowsAndIssueDistinctIds) {
  test::TempDir state;
  std::set<std::uint64_t> node_ids;
  std::set<std::string> ids;
  std::size_t issued = 0;
  for (int start = 0; start < 10; ++start) {
    test::ServerProcess snowidd(kServer, flags(state));
    ASSERT_TRUE(snowidd.started()) << snowidd.log();
    const nlohmann::json cluster = cluster_info(snowidd.port());
    ASSERT_TRUE(cluster["node_id"].is_number()) << cluster.dump();
    const auto node_id = cluster["node_id"].get<std::uint64_t>();
    node_ids.insert(node_id);
    // The default layout's 10 node-id bits: ids 1..1023.
    EXPECT_EQ(cluster["node_id_starts_left"].get<std::uint64_t>(), 1023 - node_id);
    // The same two figures as gauges, and the log line that names them.
    const std::string metrics = test::http_get(snowidd.port(), "/metrics").body;
    EXPECT_NE(metrics.find("\nsnowid_cluster_node_id " + std::to_string(node_id) + "\n"),
              std::string::npos)
        << metrics;
    EXPECT_NE(metrics.find("\nsnowid_node_id_starts_left " + std::to_string(1023 - node_id) + "\n"),
              std::string::npos)
        << metrics;
    EXPECT_NE(snowidd.log().find("took node id " + std::to_string(node_id) +
                                 ", a new one for this start; " + std::to_string(1023 - node_id) +
                                 " starts left"),
              std::string::npos)
        << snowidd.log();
    const test::HttpReply reply = test::http_get(snowidd.port(), "/v1/ids?count=500&format=text");
    ASSERT_EQ(reply.status, 200) << reply.body;
    std::istringstream lines(reply.body);
    for (std::string id; std::getline(lines, id);) {
      if (id.empty()) continue;
      ids.insert(id);
      ++issued;
    }
    snowidd.signal(SIGTERM);
    EXPECT_EQ(snowidd.wait(), 0) << snowidd.log();
  }
  EXPECT_EQ(node_ids.size(), 10u);
  EXPECT_EQ(issued, 5000u);
  EXPECT_EQ(ids.size(), issued);
  // Each a row of its own, written as uid-generator writes an ACTUAL node.
  const std::string table = rows();
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 10) << table;
  for (const std::uint64_t id : node_ids) {
    EXPECT_NE(table.find(std::to_string(id) + kColumns), std::string::npos) << table;
  }
  EXPECT_NE(table.find(std::string(kColumns) + "2\n"), std::string::npos) << table;
}

// Refused with the configuration, before any row is written.
TEST_F(Disposable, LayoutWithoutRoomForAThousandStartsIsRefused) {
  ASSERT_TRUE(database_->sql(own_ddl())) << database_->why();
  test::TempDir state;
  std::vector<std::string> argv = {kServer};
  for (const std::string& arg :
       flags(state, {"--datacenter-bits", "0", "--worker-bits", "9", "--sequence-bits", "13",
                     "--timestamp-bits", "41", "--check-config"})) {
    argv.push_back(arg);
  }
  const test::ProcessResult result = test::run_process(argv);
  EXPECT_EQ(result.exit_code, 2) << result.out << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_NE(result.err.find("allow 511 starts, fewer than 1000"), std::string::npos) << result.err;
  EXPECT_EQ(rows(), "");
}

TEST_F(Disposable, RowIdBeyondTheLayoutsNodeIdsRefusesToStart) {
  ASSERT_TRUE(database_->sql(own_ddl())) << database_->why();
  ASSERT_TRUE(database_->sql(std::string(kRestartAt) + "1023")) << database_->why();
  test::TempDir state;
  {
    // The last node id of the default layout: it starts, with no start left after it.
    test::ServerProcess snowidd(kServer, flags(state));
    ASSERT_TRUE(snowidd.started()) << snowidd.log();
    const nlohmann::json cluster = cluster_info(snowidd.port());
    EXPECT_EQ(cluster["node_id"], 1023) << cluster.dump();
    EXPECT_EQ(cluster["node_id_starts_left"], 0) << cluster.dump();
    // Fewer than a tenth of the starts left: a warning at every start.
    EXPECT_NE(snowidd.log().find("only 0 of the layout's 1023 node ids are left"),
              std::string::npos)
        << snowidd.log();
  }
  std::vector<std::string> argv = {kServer};
  for (const std::string& arg : flags(state, {"--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0"})) {
    argv.push_back(arg);
  }
  const test::ProcessResult result = test::run_process(argv);
  EXPECT_NE(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE((result.out + result.err).find("row ID 1024, beyond the layout's node ids (1..1023)"),
            std::string::npos)
      << result.out << result.err;
}

// A team's existing uid-generator table (its own DDL, a row of its own):
// snowid adds its row after it.
TEST_F(Disposable, ServesFromATableMadeByUidGeneratorsOwnScript) {
  ASSERT_TRUE(database_->sql(own_ddl())) << database_->why();
  ASSERT_TRUE(database_->sql(
      "INSERT INTO WORKER_NODE (HOST_NAME, PORT, TYPE, LAUNCH_DATE, MODIFIED, CREATED) "
      "VALUES ('10.0.0.7', '1700000000000-4242', 2, CURRENT_DATE, NOW(), NOW())"))
      << database_->why();
  test::TempDir state;
  test::ServerProcess snowidd(kServer, flags(state));
  ASSERT_TRUE(snowidd.started()) << snowidd.log();
  EXPECT_EQ(cluster_info(snowidd.port())["node_id"], 2);
  const test::HttpReply id = test::http_get(snowidd.port(), "/v1/id");
  EXPECT_EQ(id.status, 200) << id.body;
  const std::string table = rows();
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2) << table;
}

}  // namespace
}  // namespace snowid
