// What tells the SQL stores apart (sql_coordinator.h): their names, the
// database's clock as an SQL expression, how an insert skips an existing row,
// how an UPDATE reports whether it matched, and how a connection is opened.
// Everything else of the claim is written once (sql_claim.cc), in statements
// with $1, $2 ... placeholders (SqlConnection binds or escapes them) and these
// parts in braces: {now}, {insert}, {ignore}, {matched}.
//
// Thread-safety: the dialects are constants.
#pragma once

#include <memory>
#include <string>

#include "sql_connection.h"
#include "sql_coordinator.h"

namespace snowid::coord {

// A table a connection checks on every new connection, and the statement
// that creates it if missing.
struct SqlTable {
  const char* name;
  const char* create_sql;
};

struct SqlDialect {
  const char* name;   // the coordinator's name: "postgres"
  const char* title;  // as prose names the database: "PostgreSQL"
  // {now}: the database's clock in Unix ms (BIGINT), read when the statement runs.
  const char* now_ms;
  // {insert} ... {ignore}: an INSERT that does nothing if the row exists.
  const char* insert;
  const char* ignore;
  // {matched}: appended to an UPDATE or INSERT, makes it return one row if
  // it changed a row and none if not (every write here changes the row it
  // matches: it counts `writes`).
  const char* matched;
  // A connection to `endpoint` (a URL, or HOST:PORT) under `options`,
  // which creates the table on first use if missing; connects lazily.
  Result<std::unique_ptr<sql::SqlConnection>> (*open)(const std::string& endpoint,
                                                          const SqlStoreOptions& options);
  // The same, checking `table` instead of snowid_node_claims (the disposable
  // node-id policy's WORKER_NODE).
  Result<std::unique_ptr<sql::SqlConnection>> (*open_table)(const std::string& endpoint,
                                                                const SqlStoreOptions& options,
                                                                const SqlTable& table);
};

extern const SqlDialect kPostgresDialect;
extern const SqlDialect kMysqlDialect;

// A mysql:// URL read as the MySQL dialect reads it (password_file
// included): kInvalidArgument naming the fault, as with the configuration.
Status check_mysql_url(const std::string& url);

}  // namespace snowid::coord
