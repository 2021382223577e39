// MariaDB / MySQL (MariaDB Connector/C) behind SqlConnection.
//
// Parameters: the store's statements use $1, $2 ...; each is replaced by its
// value, integers in decimal and text quoted and escaped by
// mysql_real_escape_string for the connection's character set (utf8mb4), so
// no caller text is ever pasted into SQL as is. A statement text may hold
// several statements separated by ';' (the connection sets
// CLIENT_MULTI_STATEMENTS); the rows returned are those of the last result
// set. That is how a range is taken in ONE round trip and one transaction
// (see mysql_segment_store.cc).
//
// Time bounds: Connector/C's calls block, so every socket operation is
// bounded by MYSQL_OPT_CONNECT_TIMEOUT / READ_TIMEOUT / WRITE_TIMEOUT, the
// call timeout rounded up to whole seconds (the library's unit), and the
// server gives up waiting for a row lock after innodb_lock_wait_timeout, the
// same number of seconds. A call is one connect (if needed) and one round trip.
//
// Failures: any error drops the connection (the server rolls back an open
// transaction when it goes) and the next call connects afresh, which checks
// the table: it creates snowid's own table if missing, or refuses to go on
// if a table it must not create (Leaf's) is missing.
//
// TLS: with ssl_ca the connection is encrypted and the server's certificate
// verified (chain and host name); without it, nothing is encrypted.
//
// Secrets: the password is passed to the library and never appears in an
// error message. Neither option files (my.cnf) nor MYSQL_PWD are read: the
// password is always passed explicitly ("" without one).
#include "mariadb_connection.h"

#include <fmt/format.h>
#include <mysql.h>

namespace snowid::sql {
namespace {

class MariadbConnection final : public SqlConnection {
 public:
  explicit MariadbConnection(MariadbOptions options) : options_(std::move(options)) {}
  ~MariadbConnection() override { drop(); }
  MariadbConnection(const MariadbConnection&) = delete;
  MariadbConnection& operator=(const MariadbConnection&) = delete;

  const char* kind() const override { return "mysql"; }

  Result<SqlRows> query(const std::string& sql, const std::vector<SqlValue>& params) override {
    if (mysql_ == nullptr) {
      Status connected = connect();
      if (!connected.ok()) return connected.error();
    }
    auto text = bind(sql, params);
    if (!text.ok()) return text.error();
    return run(*text);
  }

 private:
  void drop() {
    if (mysql_ != nullptr) mysql_close(mysql_);
    mysql_ = nullptr;
  }

  // The server's message; the connection is dropped (see the file comment).
  Error failure(std::string_view what) {
    std::string detail = mysql_ != nullptr ? mysql_error(mysql_) : "out of memory";
    if (detail.empty()) detail = "unknown error";
    drop();
    return Error{ErrorCode::kUnavailable, fmt::format("mysql {}: {}", what, detail)};
  }

  Status connect() {
    mysql_ = mysql_init(nullptr);
    if (mysql_ == nullptr) return failure("connect");
    const auto seconds = static_cast<unsigned int>(
        std::max<long long>(1, std::chrono::ceil<std::chrono::seconds>(options_.timeout).count()));
    const unsigned int tcp = MYSQL_PROTOCOL_TCP;
    const my_bool no = 0;
    mysql_optionsv(mysql_, MYSQL_OPT_CONNECT_TIMEOUT, &seconds);
    mysql_optionsv(mysql_, MYSQL_OPT_READ_TIMEOUT, &seconds);
    mysql_optionsv(mysql_, MYSQL_OPT_WRITE_TIMEOUT, &seconds);
    mysql_optionsv(mysql_, MYSQL_OPT_PROTOCOL, &tcp);  // "localhost" too goes over TCP
    // A silent reconnect inside the library would lose an open transaction.
    mysql_optionsv(mysql_, MYSQL_OPT_RECONNECT, &no);
    mysql_optionsv(mysql_, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (!options_.ssl_ca.empty()) {
      const my_bool yes = 1;
      mysql_optionsv(mysql_, MYSQL_OPT_SSL_CA, options_.ssl_ca.c_str());
      mysql_optionsv(mysql_, MYSQL_OPT_SSL_ENFORCE, &yes);
      mysql_optionsv(mysql_, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &yes);
    }
    if (mysql_real_connect(mysql_, options_.host.c_str(), options_.user.c_str(),
                           options_.password.c_str(), options_.database.c_str(), options_.port,
                           nullptr, CLIENT_MULTI_STATEMENTS) == nullptr) {
      return failure("connect");
    }
    // Timestamps are read and written in UTC; a row lock held by another
    // node is waited for no longer than a call may take.
    auto session =
        run(fmt::format("SET time_zone = '+00:00', innodb_lock_wait_timeout = {}", seconds));
    if (!session.ok()) return session.error();
    return check_table();
  }

  Status check_table() {
    auto text = bind(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() "
        "AND table_name = $1",
        {options_.table});
    if (!text.ok()) return text.error();
    auto found = run(*text);
    if (!found.ok()) return found.error();
    if (!found->empty()) return {};
    if (options_.create_table_sql.empty()) {
      drop();
      return Error{ErrorCode::kUnavailable,
                   fmt::format("mysql: table '{}' does not exist in database '{}' ({})",
                               options_.table, options_.database, options_.missing_table_hint)};
    }
    auto created = run(options_.create_table_sql);
    if (!created.ok()) return created.error();
    return {};
  }

  // `sql` with $n replaced by the n-th value. A '$' inside a quoted string or
  // identifier is left alone.
  Result<std::string> bind(const std::string& sql, const std::vector<SqlValue>& params) {
    std::string out;
    out.reserve(sql.size() + 64);
    char quote = 0;
    for (std::size_t i = 0; i < sql.size(); ++i) {
      const char c = sql[i];
      if (quote != 0) {
        if (c == quote) quote = 0;
        out += c;
        continue;
      }
      if (c == '\'' || c == '"' || c == '`') quote = c;
      std::size_t digits = i + 1;
      while (c == '$' && digits < sql.size() && sql[digits] >= '0' && sql[digits] <= '9') ++digits;
      if (quote != 0 || c != '$' || digits == i + 1) {
        out += c;
        continue;
      }
      const std::size_t index = std::stoul(sql.substr(i + 1, digits - i - 1));
      if (index == 0 || index > params.size()) {
        return Error{ErrorCode::kUnavailable,
                     fmt::format("statement uses ${} of {} parameters", index, params.size())};
      }
      const SqlValue& value = params[index - 1];
      switch (value.kind) {
        case SqlValue::Kind::kNull:
          out += "NULL";
          break;
        case SqlValue::Kind::kInteger:
          out += std::to_string(value.integer);
          break;
        case SqlValue::Kind::kText: {
          std::string escaped(value.text.size() * 2 + 1, '\0');
          const unsigned long length = mysql_real_escape_string(
              mysql_, escaped.data(), value.text.data(), value.text.size());
          if (length == static_cast<unsigned long>(-1)) return failure("escape");
          escaped.resize(length);
          (out += '\'') += escaped;
          out += '\'';
          break;
        }
      }
      i = digits - 1;
    }
    return out;
  }

  Result<SqlRows> run(const std::string& text) {
    if (mysql_real_query(mysql_, text.data(), text.size()) != 0) return failure("query");
    SqlRows rows;
    for (;;) {
      MYSQL_RES* result = mysql_store_result(mysql_);
      if (result != nullptr) {
        rows.clear();
        const unsigned int columns = mysql_num_fields(result);
        while (MYSQL_ROW row = mysql_fetch_row(result)) {
          const unsigned long* lengths = mysql_fetch_lengths(result);
          std::vector<std::string>& out = rows.emplace_back();
          for (unsigned int c = 0; c < columns; ++c) {
            out.emplace_back(row[c] == nullptr ? std::string() : std::string(row[c], lengths[c]));
          }
        }
        mysql_free_result(result);
      } else if (mysql_field_count(mysql_) != 0) {
        return failure("query");  // rows were due but could not be read
      }
      const int next = mysql_next_result(mysql_);
      if (next == -1) break;
      if (next > 0) return failure("query");
    }
    return rows;
  }

  MariadbOptions options_;
  MYSQL* mysql_ = nullptr;
};

}  // namespace

std::unique_ptr<SqlConnection> open_mariadb(MariadbOptions options) {
  return std::make_unique<MariadbConnection>(std::move(options));
}

}  // namespace snowid::sql
