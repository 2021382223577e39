// PostgreSQL (libpq) behind SqlConnection: the store several nodes share.
//
// Nothing here may block without bound, because the allocator's background
// thread must come back to retry and to report. The connection is made with
// PQconnectStartParams/PQconnectPoll and queries are sent with
// PQsendQueryParams on a non-blocking socket; every wait is a poll() against
// one deadline per call. The server also enforces statement_timeout. On a
// timeout or a lost connection the connection is dropped and the next call
// makes a new one, which applies the schema if the table is missing.
//
// Host names are resolved by libpq inside PQconnectPoll, which can block for
// the resolver's own timeout; use an address (hostaddr or an IP) where that
// matters.
#include <fmt/format.h>
#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "database_url.h"
#include "sql_connection.h"

namespace snowid::sql {
namespace {

using Deadline = std::chrono::steady_clock::time_point;

class PostgresConnection final : public SqlConnection {
 public:
  PostgresConnection(std::string uri, std::chrono::milliseconds timeout, PostgresTable table)
      : uri_(std::move(uri)), timeout_(timeout), table_(std::move(table)) {}
  ~PostgresConnection() override { drop(); }
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  const char* kind() const override { return "postgresql"; }

  Result<SqlRows> query(const std::string& sql, const std::vector<SqlValue>& params) override {
    const Deadline deadline = std::chrono::steady_clock::now() + timeout_;
    if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
      drop();
      Status connected = connect(deadline);
      if (!connected.ok()) return connected.error();
      auto table = run("SELECT 1 WHERE to_regclass($1) IS NULL", {table_.name}, deadline);
      if (table.ok() && !table->empty()) table = run(table_.create_sql, {}, deadline);
      if (!table.ok()) {
        drop();
        return table.error();
      }
    }
    return run(sql, params, deadline);
  }

 private:
  void drop() {
    if (conn_ != nullptr) PQfinish(conn_);
    conn_ = nullptr;
  }

  Error unavailable(std::string_view what) {
    std::string detail = conn_ != nullptr ? PQerrorMessage(conn_) : "out of memory";
    while (!detail.empty() && (detail.back() == '\n' || detail.back() == ' ')) detail.pop_back();
    return Error{ErrorCode::kUnavailable, fmt::format("postgresql {}: {}", what, detail)};
  }

  // Waits until the socket is ready for `events` or the deadline passes.
  Status wait_socket(short events, Deadline deadline, std::string_view what) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return Error{ErrorCode::kUnavailable,
                   fmt::format("postgresql {}: no answer within {} ms", what, timeout_.count())};
    }
    pollfd fd{PQsocket(conn_), events, 0};
    if (fd.fd < 0) return unavailable(what);
    const int rc = ::poll(&fd, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno != EINTR) {
      return Error{ErrorCode::kUnavailable,
                   fmt::format("postgresql {}: poll: {}", what, std::strerror(errno))};
    }
    return {};
  }

  Status connect(Deadline deadline) {
    const auto seconds =
        std::max<long long>(2, std::chrono::ceil<std::chrono::seconds>(timeout_).count());
    const std::string connect_timeout = std::to_string(seconds);
    const std::string options =
        fmt::format("-c statement_timeout={} -c TimeZone=UTC", timeout_.count());
    // Later entries override earlier ones, so the URI's own settings win.
    const char* keywords[] = {"connect_timeout", "options", "application_name", "dbname", nullptr};
    const char* values[] = {connect_timeout.c_str(), options.c_str(), "snowid", uri_.c_str(),
                            nullptr};
    conn_ = PQconnectStartParams(keywords, values, 1);
    if (conn_ == nullptr || PQstatus(conn_) == CONNECTION_BAD) {
      Error error = unavailable("connect");
      drop();
      return error;
    }
    PostgresPollingStatusType state = PGRES_POLLING_WRITING;
    while (state != PGRES_POLLING_OK) {
      if (state == PGRES_POLLING_FAILED) {
        Error error = unavailable("connect");
        drop();
        return error;
      }
      Status ready =
          wait_socket(state == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline, "connect");
      if (!ready.ok()) {
        drop();
        return ready;
      }
      state = PQconnectPoll(conn_);
    }
    // Server notices ("terminating connection ...") must not reach the host's stderr.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    if (PQsetnonblocking(conn_, 1) != 0) {
      Error error = unavailable("connect");
      drop();
      return error;
    }
    return {};
  }

  Result<SqlRows> run(const std::string& sql, const std::vector<SqlValue>& params,
                      Deadline deadline) {
    Result<SqlRows> result = send_and_collect(sql, params, deadline);
    // A connection that failed mid-call is in an unknown state: start afresh.
    if (!result.ok() && (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK ||
                         PQtransactionStatus(conn_) != PQTRANS_IDLE)) {
      drop();
    }
    return result;
  }

  Result<SqlRows> send_and_collect(const std::string& sql, const std::vector<SqlValue>& params,
                                   Deadline deadline) {
    std::vector<std::string> texts(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (params[i].kind == SqlValue::Kind::kInteger) {
        texts[i] = std::to_string(params[i].integer);
        values[i] = texts[i].c_str();
      } else if (params[i].kind == SqlValue::Kind::kText) {
        values[i] = params[i].text.c_str();
      }
    }
    const int sent = params.empty()
                         ? PQsendQuery(conn_, sql.c_str())
                         : PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(params.size()),
                                             nullptr, values.data(), nullptr, nullptr, 0);
    if (sent != 1) return unavailable("send");
    for (;;) {
      const int flushed = PQflush(conn_);
      if (flushed == 0) break;
      if (flushed < 0) return unavailable("send");
      Status ready = wait_socket(POLLIN | POLLOUT, deadline, "send");
      if (!ready.ok()) return ready.error();
      if (PQconsumeInput(conn_) != 1) return unavailable("send");
    }

    SqlRows rows;
    std::optional<Error> failed;
    for (;;) {
      while (PQisBusy(conn_) == 1) {
        Status ready = wait_socket(POLLIN, deadline, "query");
        if (!ready.ok()) return ready.error();
        if (PQconsumeInput(conn_) != 1) return unavailable("query");
      }
      PGresult* result = PQgetResult(conn_);
      if (result == nullptr) break;
      const ExecStatusType status = PQresultStatus(result);
      if (status == PGRES_TUPLES_OK) {
        rows.clear();
        for (int r = 0; r < PQntuples(result); ++r) {
          std::vector<std::string>& row = rows.emplace_back();
          for (int c = 0; c < PQnfields(result); ++c) row.emplace_back(PQgetvalue(result, r, c));
        }
      } else if (status != PGRES_COMMAND_OK && !failed) {
        std::string message = PQresultErrorMessage(result);
        while (!message.empty() && message.back() == '\n') message.pop_back();
        failed = Error{ErrorCode::kUnavailable, fmt::format("postgresql query: {}", message)};
      }
      PQclear(result);
    }
    if (failed) return *failed;
    return rows;
  }

  std::string uri_;
  std::chrono::milliseconds timeout_;
  PostgresTable table_;
  PGconn* conn_ = nullptr;
};

}  // namespace

namespace {

// libpq's reason quotes what it could not read, which may be the password or
// the whole URL: a quoted URL is shown with its passwords hidden, and any
// other quoted text only if the URL with its passwords hidden holds it.
std::string reason_without_secrets(const std::string& uri, std::string reason) {
  const std::size_t open = reason.find('"');
  const std::size_t close = reason.rfind('"');
  if (open == std::string::npos || close <= open) return reason;
  const std::string quoted = reason.substr(open + 1, close - open - 1);
  const std::string hidden = hide_url_passwords(quoted);
  if (hidden != quoted) {
    reason.replace(open + 1, quoted.size(), hidden);
  } else if (hide_url_passwords(uri).find(quoted) == std::string::npos) {
    reason.replace(open + 1, quoted.size(), "***");
  }
  return reason;
}

}  // namespace

Status check_postgres_url(const std::string& uri) {
  char* parse_error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(uri.c_str(), &parse_error);
  if (parsed == nullptr) {
    std::string message = parse_error != nullptr ? parse_error : "out of memory";
    PQfreemem(parse_error);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return invalid_argument(
        fmt::format("bad PostgreSQL URL: {}", reason_without_secrets(uri, std::move(message))));
  }
  PQconninfoFree(parsed);
  return {};
}

Result<std::unique_ptr<SqlConnection>> open_postgres(const std::string& uri,
                                                     std::chrono::milliseconds timeout,
                                                     PostgresTable table) {
  if (Status checked = check_postgres_url(uri); !checked.ok()) return checked.error();
  return std::unique_ptr<SqlConnection>(
      std::make_unique<PostgresConnection>(uri, timeout, std::move(table)));
}

}  // namespace snowid::sql
