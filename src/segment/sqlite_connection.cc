// SQLite behind SqlConnection: the embedded default store for a single node.
//
// The file is opened in WAL mode (readers never block the writer) with
// synchronous=FULL: a taken range must be on disk before any of its numbers
// is handed out, or a power cut could roll max_id back and a restart would
// repeat numbers. That costs one fsync per fetched range, which the
// allocator's prefetch keeps off the request path. Several processes may
// share the file; the busy timeout bounds how long one waits for another's
// write lock.
//
// THE FILE INVARIANT. Ranges are taken only from the file that is at the
// path now. SQLite keeps using a file removed or replaced under it (its
// descriptor still works), so ranges taken afterwards would live in a file
// that no other process and no later start can see, and a new file at the
// path starts every tag again. The file opened is pinned (device and inode,
// kept alive by SQLite's descriptor, so never reused); every statement first
// checks that the path still leads to it, and once it does not, the
// connection refuses for good, naming the file.
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "segments_schema.h"
#include "sql_segment_store.h"

namespace snowid::segment {
namespace {

class SqliteConnection final : public SqlConnection {
 public:
  SqliteConnection(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteConnection() override { sqlite3_close_v2(db_); }
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  const char* kind() const override { return "sqlite"; }

  Result<SqlRows> query(const std::string& sql, const std::vector<SqlValue>& params) override {
    if (Status same = check_file(); !same.ok()) return same.error();
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

  // Pins the file now at the path as this connection's (nothing to pin for
  // an in-memory database).
  void pin_file() {
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0) file_ = std::pair{st.st_dev, st.st_ino};
  }

 private:
  Status check_file() const {
    if (!file_) return {};
    struct stat st {};
    errno = 0;
    if (::stat(path_.c_str(), &st) == 0 && std::pair{st.st_dev, st.st_ino} == *file_) return {};
    if (errno != 0 && errno != ENOENT && errno != ENOTDIR) {
      return Error{ErrorCode::kUnavailable, fmt::format("SQLite segment store {}: cannot check "
                                                        "its file: {}",
                                                        path_, std::strerror(errno))};
    }
    return Error{ErrorCode::kUnavailable,
                 fmt::format("SQLite segment store {}: the file was removed or replaced while this "
                             "process used it; no range is taken from it again (restore the "
                             "file, then restart)",
                             path_)};
  }

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
  std::string path_;
  std::optional<std::pair<dev_t, ino_t>> file_;  // the file pinned by pin_file()
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
  auto connection = std::make_unique<SqliteConnection>(db, path);
  auto prepared = connection->query(
      std::string("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; ") + kSegmentsSchemaSql, {});
  if (!prepared.ok()) {
    return Error{ErrorCode::kUnavailable, fmt::format("cannot use SQLite segment store {}: {}",
                                                      path, prepared.error().message)};
  }
  connection->pin_file();  // the schema statement made sure the file exists
  return std::unique_ptr<SqlConnection>(std::move(connection));
}

}  // namespace snowid::segment
