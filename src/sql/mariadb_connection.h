// A MariaDB / MySQL connection behind SqlConnection (mariadb_connection.cc).
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sql_connection.h"

namespace snowid::sql {

struct MariadbOptions {
  std::string host;
  unsigned int port = 3306;
  std::string user;
  std::string password;
  std::string database;
  // Not empty: TLS is required and the server's certificate must chain to
  // this CA file and name the host. Empty: no TLS.
  std::string ssl_ca;
  // Bounds the connect and each round trip (rounded up to whole seconds).
  std::chrono::milliseconds timeout{3000};
  // The table the store uses, checked on every new connection: created with
  // create_table_sql if missing, or, when that is empty, the connection
  // refuses with a message ending in missing_table_hint.
  std::string table;
  std::string create_table_sql;
  std::string missing_table_hint;
};

// A mysql:// or mariadb:// URL (mysql_url.cc): the connection it names, and
// the parameters of the caller's own, by name in the order written.
struct MysqlUrl {
  MariadbOptions connection;
  std::vector<std::pair<std::string, std::string>> own_parameters;
};

// Reads user, password (or password_file), host, port, database and ssl_ca,
// and the parameters named in `own`; kInvalidArgument for anything else and
// for a bad URL, as "bad MySQL URL: WHY (USAGE)" with `usage` the form the
// caller accepts.
Result<MysqlUrl> read_mysql_url(std::string_view url, std::span<const std::string_view> own,
                                std::string_view usage);

// The same error for a fault the caller finds in its own parameters.
Error bad_mysql_url(std::string_view why, std::string_view usage);

// Connects on first use and after every failure. query() with several
// statements returns the rows of the last result set.
std::unique_ptr<SqlConnection> open_mariadb(MariadbOptions options);

}  // namespace snowid::sql
