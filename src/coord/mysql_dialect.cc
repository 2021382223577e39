// MariaDB and MySQL as a SQL store of node-id claims (sql_dialect.h): the
// server's NOW(6) is the clock of the leases, INSERT IGNORE adds a missing
// row, and an UPDATE says whether it matched by ROW_COUNT() in the statement
// sent with it (every write changes the row it matches: it counts `writes`).
// The connection is the segment store's (libmariadb, CLIENT_MULTI_STATEMENTS,
// autocommit), checking snowid_node_claims instead.
//
// UNIX_TIMESTAMP(NOW(6)) reads the server's clock through the session's time
// zone; in the hour a zone with daylight saving time repeats, the leases run
// up to an hour long or short. That costs availability, never a duplicate:
// the fence is the reservation (sql_claim.cc). A server in UTC has no such hour.
#include <cstdlib>
#include <string>

#include "mariadb_connection.h"
#include "node_claims_schema.h"
#include "sql_dialect.h"

namespace snowid::coord {
namespace {

// HOST:PORT: database `snowid`.
Result<segment::MariadbOptions> host_and_port(const std::string& endpoint) {
  segment::MariadbOptions connection;
  const std::size_t colon = endpoint.rfind(':');
  connection.host = endpoint.substr(0, colon);
  connection.port = static_cast<unsigned>(std::strtoul(endpoint.c_str() + colon + 1, nullptr, 10));
  connection.database = "snowid";
  return connection;
}

Result<std::unique_ptr<segment::SqlConnection>> open_table(const std::string& endpoint,
                                                           const SqlStoreOptions& options,
                                                           const SqlTable& table) {
  auto connection = endpoint.find("://") == std::string::npos ? host_and_port(endpoint)
                                                              : segment::read_mysql_url(endpoint);
  if (!connection.ok()) return connection.error();
  if (!options.user.empty()) connection->user = options.user;
  if (!options.password.empty()) connection->password = options.password;
  connection->timeout = options.request_timeout;
  connection->table = table.name;
  connection->create_table_sql = table.create_sql;
  return segment::open_mariadb(std::move(*connection));
}

Result<std::unique_ptr<segment::SqlConnection>> open_connection(const std::string& endpoint,
                                                                const SqlStoreOptions& options) {
  return open_table(endpoint, options, {"snowid_node_claims", kNodeClaimsMysqlSql});
}

}  // namespace

const SqlDialect kMysqlDialect = {
    "mysql",
    "MySQL",
    "CAST(FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000) AS SIGNED)",
    "INSERT IGNORE INTO",
    "",
    "; SELECT 1 FROM DUAL WHERE ROW_COUNT() > 0",
    open_connection,
    open_table,
};

}  // namespace snowid::coord
