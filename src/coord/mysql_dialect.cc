// MariaDB and MySQL as a SQL store of node-id claims (sql_dialect.h): the
// server's UTC_TIMESTAMP(6) is the clock of the leases, INSERT IGNORE adds a missing
// row, and an UPDATE says whether it matched by ROW_COUNT() in the statement
// sent with it (every write changes the row it matches: it counts `writes`).
// The connection is the segment store's (libmariadb, CLIENT_MULTI_STATEMENTS,
// autocommit), checking snowid_node_claims instead.
//
// The lease clock is milliseconds since 1970 counted from UTC_TIMESTAMP(6)
// by date arithmetic, never through the session's time zone: NOW(6) and
// UNIX_TIMESTAMP(datetime) would repeat an hour when a zone with daylight
// saving time sets its clocks back.
#include <cstdlib>
#include <string>

#include "mariadb_connection.h"
#include "node_claims_schema.h"
#include "sql_dialect.h"

namespace snowid::coord {
namespace {

// HOST:PORT: database `snowid`.
Result<segment::MariadbOptions> mysql_host_and_port(const std::string& endpoint) {
  segment::MariadbOptions connection;
  const std::size_t colon = endpoint.rfind(':');
  connection.host = endpoint.substr(0, colon);
  connection.port = static_cast<unsigned>(std::strtoul(endpoint.c_str() + colon + 1, nullptr, 10));
  connection.database = "snowid";
  return connection;
}

Result<std::unique_ptr<segment::SqlConnection>> open_mysql_table(const std::string& endpoint,
                                                           const SqlStoreOptions& options,
                                                           const SqlTable& table) {
  auto connection = endpoint.find("://") == std::string::npos ? mysql_host_and_port(endpoint)
                                                              : segment::read_mysql_url(endpoint);
  if (!connection.ok()) return connection.error();
  if (!options.user.empty()) connection->user = options.user;
  if (!options.password.empty()) connection->password = options.password;
  connection->timeout = options.request_timeout;
  connection->table = table.name;
  connection->create_table_sql = table.create_sql;
  return segment::open_mariadb(std::move(*connection));
}

Result<std::unique_ptr<segment::SqlConnection>> open_mysql_claims(const std::string& endpoint,
                                                                const SqlStoreOptions& options) {
  return open_mysql_table(endpoint, options, {"snowid_node_claims", kNodeClaimsMysqlSql});
}

}  // namespace

const SqlDialect kMysqlDialect = {
    "mysql",
    "MySQL",
    "CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000 AS SIGNED)",
    "INSERT IGNORE INTO",
    "",
    "; SELECT 1 FROM DUAL WHERE ROW_COUNT() > 0",
    open_mysql_claims,
    open_mysql_table,
};

}  // namespace snowid::coord
