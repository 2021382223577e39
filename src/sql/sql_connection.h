// The little SQL that snowid's stores need (the segment stores of
// src/segment, the node-id claims of src/coord), behind one interface so
// that each store's statements and checks are written once for every
// database it serves.
//
// Statements use PostgreSQL's $1, $2 ... placeholders; the SQLite connection
// (src/segment) binds them by name, so one statement text serves both. The
// MariaDB connection replaces them with escaped values (mariadb_connection.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "snowid/error.h"

namespace snowid::sql {

// A statement parameter: NULL, an integer or text.
struct SqlValue {
  enum class Kind { kNull, kInteger, kText };

  SqlValue() = default;
  SqlValue(std::int64_t value) : kind(Kind::kInteger), integer(value) {}      // NOLINT: implicit
  SqlValue(std::string value) : kind(Kind::kText), text(std::move(value)) {}  // NOLINT: implicit

  Kind kind = Kind::kNull;
  std::int64_t integer = 0;
  std::string text;
};

// Rows of a result, every column as text (NULL as "").
using SqlRows = std::vector<std::vector<std::string>>;

class SqlConnection {
 public:
  virtual ~SqlConnection() = default;

  // Runs `sql` with `params` bound to $1, $2 ...; without params `sql` may
  // hold several statements (the rows are those of the last one). Bounded by
  // the connection's call timeout. kUnavailable (with the database's message)
  // on any failure; the next call reconnects if the connection was lost.
  virtual Result<SqlRows> query(const std::string& sql, const std::vector<SqlValue>& params) = 0;

  // "sqlite", "postgresql" or "mysql".
  virtual const char* kind() const = 0;
};

// The table a PostgreSQL connection checks on every new connection, and the
// statement that creates it if missing.
struct PostgresTable {
  std::string name;
  std::string create_sql;
};

// kInvalidArgument, with libpq's reason, if libpq cannot parse `uri`.
Status check_postgres_url(const std::string& uri);

// Connects on first use and after every failure; each connection creates
// `table` if it is missing. Every call is bounded by `timeout`.
// kInvalidArgument if libpq cannot parse `uri`.
Result<std::unique_ptr<SqlConnection>> open_postgres(const std::string& uri,
                                                     std::chrono::milliseconds timeout,
                                                     PostgresTable table);

}  // namespace snowid::sql
