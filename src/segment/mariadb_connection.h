// A MariaDB / MySQL connection behind SqlConnection (mariadb_connection.cc).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "sql_connection.h"

namespace snowid::segment {

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

// The connection a mysql:// (or mariadb://) URL names: user, password (or
// password_file), host, port, database and ssl_ca, as segment_store reads
// them (mysql_segment_store.cc); kInvalidArgument for a bad URL and for
// segment_store's own parameters (layout, table).
Result<MariadbOptions> read_mysql_url(std::string_view url);

// Connects on first use and after every failure. query() with several
// statements returns the rows of the last result set.
std::unique_ptr<SqlConnection> open_mariadb(MariadbOptions options);

}  // namespace snowid::segment
