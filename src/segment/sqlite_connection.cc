// SQLite behind SqlConnection: the embedded default store for a single node.
//
// The file is opened in WAL mode (readers never block the writer) with
// synchronous=FULL: a taken range must be on disk before any of its numbers
// is handed out, or a power cut could roll max_id back and a restart would
// repeat numbers. That costs one fsync per fetched range, which the
// allocator's prefetch keeps off the request path. Several processes may
// share the file; the busy timeout bounds how long one waits for another's
// write lock.
#include <fmt/format.h>
#include <sqlite3.h>

#include "segments_schema.h"
#include "sql_connection.h"

namespace snowid::segment {
namespace {

class SqliteConnection final : public SqlConnection {
 public:
  explicit SqliteConnection(sqlite3* db) : db_(db) {}
  ~SqliteConnection() override { sqlite3_close_v2(db_); }
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  const char* kind() const override { return "sqlite"; }

  Result<SqlRows> query(const std::string& sql, const std::vector<SqlValue>& params) override {
    SqlRows rows;
    const char* rest = sql.c_str();
    while (*rest != '\0') {
      sqlite3_stmt* raw = nullptr;
      if (sqlite3_prepare_v2(db_, rest, -1, &raw, &rest) != SQLITE_OK) return failure("prepare");
      if (raw == nullptr) break;  // only whitespace or comments left
      std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> statement(raw, sqlite3_finalize);
      for (std::size_t i = 0; i < params.size(); ++i) {
        const int index = sqlite3_bind_parameter_index(raw, fmt::format("${}", i + 1).c_str());
        if (index == 0) continue;  // this statement does not use $i
        if (!bind(raw, index, params[i])) return failure("bind");
      }
      rows.clear();
      for (;;) {
        const int rc = sqlite3_step(raw);
        if (rc == SQLITE_DONE) break;
        if (rc != SQLITE_ROW) return failure("step");
        std::vector<std::string>& row = rows.emplace_back();
        for (int c = 0; c < sqlite3_column_count(raw); ++c) {
          const auto* text = sqlite3_column_text(raw, c);
          row.emplace_back(text == nullptr ? "" : reinterpret_cast<const char*>(text));
        }
      }
    }
    return rows;
  }

 private:
  static bool bind(sqlite3_stmt* statement, int index, const SqlValue& value) {
    switch (value.kind) {
      case SqlValue::Kind::kInteger:
        return sqlite3_bind_int64(statement, index, value.integer) == SQLITE_OK;
      case SqlValue::Kind::kText:
        return sqlite3_bind_text(statement, index, value.text.data(),
                                 static_cast<int>(value.text.size()),
                                 SQLITE_TRANSIENT) == SQLITE_OK;
      case SqlValue::Kind::kNull:
        break;
    }
    return sqlite3_bind_null(statement, index) == SQLITE_OK;
  }

  Error failure(const char* step) const {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("sqlite {} failed: {}", step, sqlite3_errmsg(db_))};
  }

  sqlite3* db_;
};

}  // namespace

Result<std::unique_ptr<SqlConnection>> open_sqlite(const std::string& path,
                                                   std::chrono::milliseconds timeout) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return Error{ErrorCode::kUnavailable,
                 fmt::format("cannot open SQLite segment store {}: {}", path, message)};
  }
  sqlite3_busy_timeout(db, static_cast<int>(timeout.count()));
  auto connection = std::make_unique<SqliteConnection>(db);
  auto prepared = connection->query(
      std::string("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; ") + kSegmentsSchemaSql, {});
  if (!prepared.ok()) {
    return Error{ErrorCode::kUnavailable, fmt::format("cannot use SQLite segment store {}: {}",
                                                      path, prepared.error().message)};
  }
  return std::unique_ptr<SqlConnection>(std::move(connection));
}

}  // namespace snowid::segment
