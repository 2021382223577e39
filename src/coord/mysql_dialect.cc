// MariaDB and MySQL as a SQL store of node-id claims (sql_dialect.h): the
// server's UTC_TIMESTAMP(6) is the clock of the leases, INSERT IGNORE adds a missing
// row, and an UPDATE says whether it matched by ROW_COUNT() in the statement
// sent with it (every write changes the row it matches: it counts `writes`).
// The connection is src/sql's (libmariadb, CLIENT_MULTI_STATEMENTS,
// autocommit), the one the segment stores use, checking snowid_node_claims.
//
// The lease clock is milliseconds since 1970 counted from UTC_TIMESTAMP(6)
// by date arithmetic, never through the session's time zone: NOW(6) and
// UNIX_TIMESTAMP(datetime) would repeat an hour when a zone with daylight
// saving time sets its clocks back.
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include "mariadb_connection.h"
#include "node_claims_schema.h"
#include "sql_dialect.h"

namespace snowid::coord {
namespace {

constexpr std::string_view kUsage =
    "mysql://user[:password]@host[:port]/database[?password_file=PATH&ssl_ca=PATH], or HOST:PORT";

// A URL, or HOST:PORT: database `snowid`.
Result<sql::MariadbOptions> mysql_connection(const std::string& endpoint) {
  if (endpoint.find("://") != std::string::npos) {
    auto url = sql::read_mysql_url(endpoint, {}, kUsage);
    if (!url.ok()) return url.error();
    return std::move(url->connection);
  }
  sql::MariadbOptions connection;
  const std::size_t colon = endpoint.rfind(':');
  connection.host = endpoint.substr(0, colon);
  connection.port = static_cast<unsigned>(std::strtoul(endpoint.c_str() + colon + 1, nullptr, 10));
  connection.database = "snowid";
  return connection;
}

Result<std::unique_ptr<sql::SqlConnection>> open_mysql_table(const std::string& endpoint,
                                                             const SqlStoreOptions& options,
                                                             const SqlTable& table) {
  auto connection = mysql_connection(endpoint);
  if (!connection.ok()) return connection.error();
  if (!options.user.empty()) connection->user = options.user;
  if (!options.password.empty()) connection->password = options.password;
  connection->timeout = options.request_timeout;
  connection->table = table.name;
  connection->create_table_sql = table.create_sql;
  return sql::open_mariadb(std::move(*connection));
}

}  // namespace

Status check_mysql_url(const std::string& url) {
  auto read = sql::read_mysql_url(url, {}, kUsage);
  return read.ok() ? Status{} : Status(read.error());
}

namespace {

Result<std::unique_ptr<sql::SqlConnection>> open_mysql_claims(const std::string& endpoint,
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
