// PostgreSQL as a SQL store of node-id claims (sql_dialect.h): the server's
// clock_timestamp() is the clock of the leases, INSERT ... ON CONFLICT DO
// NOTHING adds a missing row, RETURNING 1 says whether an UPDATE matched. The
// connection is src/sql's (libpq, non-blocking, every call bounded by
// store_request_timeout_ms), the one the segment stores use, checking
// snowid_node_claims.
#include <fmt/format.h>

#include "node_claims_schema.h"
#include "sql_dialect.h"

namespace snowid::coord {
namespace {

// `value` percent-encoded for a URL's query.
std::string postgres_url_encoded(const std::string& value) {
  std::string out;
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.' || c == '~';
    out += plain ? std::string(1, ch) : fmt::format("%{:02X}", c);
  }
  return out;
}

// `url` with the parameter `name`=`value` added (if `value` is set).
void add_postgres_parameter(std::string& url, const char* name, const std::string& value) {
  if (value.empty()) return;
  url += url.find('?') == std::string::npos ? '?' : '&';
  url += fmt::format("{}={}", name, postgres_url_encoded(value));
}

Result<std::unique_ptr<sql::SqlConnection>> open_postgres_table(const std::string& endpoint,
                                                           const SqlStoreOptions& options,
                                                           const SqlTable& table) {
  // HOST:PORT: the default database of the user given.
  std::string url =
      endpoint.find("://") == std::string::npos ? "postgresql://" + endpoint + "/" : endpoint;
  add_postgres_parameter(url, "user", options.user);
  add_postgres_parameter(url, "password", options.password);
  // A standby among several hosts of one URL is passed over.
  if (url.find("target_session_attrs=") == std::string::npos) {
    add_postgres_parameter(url, "target_session_attrs", "read-write");
  }
  return sql::open_postgres(url, options.request_timeout, {table.name, table.create_sql});
}

Result<std::unique_ptr<sql::SqlConnection>> open_postgres_claims(const std::string& endpoint,
                                                                const SqlStoreOptions& options) {
  return open_postgres_table(endpoint, options, {"snowid_node_claims", kNodeClaimsSql});
}

}  // namespace

const SqlDialect kPostgresDialect = {
    "postgres",
    "PostgreSQL",
    "CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS BIGINT)",
    "INSERT INTO",
    " ON CONFLICT DO NOTHING",
    " RETURNING 1",
    open_postgres_claims,
    open_postgres_table,
};

}  // namespace snowid::coord
