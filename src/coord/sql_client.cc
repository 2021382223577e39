#include "sql_client.h"

#include <fmt/format.h>

#include <chrono>

namespace snowid::coord {

Result<std::unique_ptr<SqlClient>> SqlClient::connect(const SqlDialect& dialect,
                                                      const SqlStoreOptions& options,
                                                      const SqlTable* table) {
  if (options.endpoints.empty()) {
    return invalid_argument(fmt::format("no {} endpoint given", dialect.title));
  }
  std::vector<std::unique_ptr<sql::SqlConnection>> connections;
  for (const std::string& endpoint : options.endpoints) {
    auto connection = table == nullptr ? dialect.open(endpoint, options)
                                       : dialect.open_table(endpoint, options, *table);
    if (!connection.ok()) return connection.error();
    connections.push_back(std::move(*connection));
  }
  return std::unique_ptr<SqlClient>(new SqlClient(dialect, std::move(connections)));
}

SqlClient::SqlClient(const SqlDialect& dialect,
                     std::vector<std::unique_ptr<sql::SqlConnection>> connections)
    : dialect_(&dialect), connections_(std::move(connections)) {}

Result<sql::SqlRows> SqlClient::query(std::string_view statement,
                                          const std::vector<sql::SqlValue>& params) {
  const std::string sql =
      fmt::format(fmt::runtime(statement), fmt::arg("now", dialect_->now_ms),
                  fmt::arg("insert", dialect_->insert), fmt::arg("ignore", dialect_->ignore),
                  fmt::arg("matched", dialect_->matched));
  Error last{ErrorCode::kUnavailable, ""};
  for (std::size_t attempt = 0; attempt <= connections_.size(); ++attempt) {
    if (attempt > 0) current_ = (current_ + 1) % connections_.size();
    const auto started = std::chrono::steady_clock::now();
    auto rows = connections_[current_]->query(sql, params);
    counters_.record(std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::steady_clock::now() - started),
                     !rows.ok());
    if (rows.ok()) return rows;
    last = rows.error();
  }
  return last;
}

}  // namespace snowid::coord
